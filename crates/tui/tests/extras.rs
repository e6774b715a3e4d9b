#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The UI's extras through the app: `/export` and `/shells` reach the front end's
//! functions, Ctrl+G asks the terminal loop for the editor, and the status line shows the
//! session's cost.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_engine::pricing::{PriceTable, Pricing};
use saki_engine::{BackgroundUsage, WorkerEvent};
use saki_engine::{UsageEvent, WireApi};
use saki_tui::extras::CostMeter;
use saki_tui::{App, EngineEvent, Status, Theme};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn app() -> App {
    let status = Status {
        provider: "openai".into(),
        model: "m".into(),
        fast_model: None,
        context_window: Some(128_000),
        tokens_used: 0,
        approval: None,
        session_id: Some("s-1".into()),
        sandbox: None,
        sandboxed: false,
    };
    App::new(status, Theme::plain(), std::env::temp_dir(), false)
}

fn typed(app: &mut App, text: &str) {
    let now = Instant::now();
    for c in text.chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), now);
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), now);
}

fn screen(app: &mut App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 12)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..12)
        .map(|y| {
            (0..100)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn export_and_shells_answer_from_the_front_end() {
    let mut app = app();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    app.extras.exporter = Some(Arc::new(move |id: &str, args: &str| {
        log.lock().unwrap().push(format!("{id} {args}"));
        Ok("exported this session to /tmp/x.html".to_owned())
    }));
    app.extras.shells = Some(Arc::new(|| "bg1   running".to_owned()));
    typed(&mut app, "/export html /tmp/x.html");
    typed(&mut app, "/shells");
    assert_eq!(*asked.lock().unwrap(), ["s-1 html /tmp/x.html"]);
    assert!(app.take_actions().is_empty(), "nothing goes to the engine");
    let shown = screen(&mut app);
    assert!(
        shown.contains("exported this session to /tmp/x.html"),
        "{shown}"
    );
    assert!(shown.contains("bg1   running"), "{shown}");
}

#[test]
fn ctrl_g_asks_for_the_editor() {
    let mut app = app();
    app.on_key(
        KeyEvent::new(KeyCode::Char('g'), KeyModifiers::CONTROL),
        Instant::now(),
    );
    assert!(app.extras.edit_requested);
}

#[test]
fn the_status_line_shows_the_cost() {
    let mut app = app();
    let mut table = PriceTable {
        main_model: "m".into(),
        fast_model: "m".into(),
        compaction_model: "m".into(),
        ..PriceTable::default()
    };
    table.prices.insert(
        "m".into(),
        Pricing {
            input: 3.0,
            output: 15.0,
            cache_read: None,
            cache_write: None,
        },
    );
    app.extras.cost = Some(CostMeter::new(table, WireApi::Chat, BackgroundUsage::new()));
    app.apply(
        EngineEvent::Worker(WorkerEvent::Usage(UsageEvent {
            input_tokens: Some(100_000),
            output_tokens: Some(10_000),
            ..UsageEvent::default()
        })),
        Instant::now(),
    );
    assert!(screen(&mut app).contains("$0.45"));
}
