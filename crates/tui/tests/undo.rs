#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `/undo`, `/redo` and `/rewind` in the UI: the commands become actions, the engine's
//! answer is shown, `/rewind` opens a picker of turns and the chosen turn's prompt comes
//! back into the input.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_tui::protocol::{EngineEvent, Level, TurnEntry};
use saki_tui::{Action, App, Status, Theme};
use std::time::Instant;

fn app() -> App {
    App::new(
        Status::default(),
        Theme::plain(),
        std::env::temp_dir(),
        false,
    )
}

fn press(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
}

fn type_line(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
    app.popup = None;
    press(app, KeyCode::Enter);
}

fn screen(app: &mut App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 24)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..24 {
        for x in 0..100 {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn undo_and_redo_become_actions_and_their_answer_is_shown() {
    let mut app = app();
    type_line(&mut app, "/undo 2 --force");
    assert_eq!(
        app.take_actions(),
        [Action::Undo {
            turns: 2,
            force: true
        }]
    );
    type_line(&mut app, "/redo");
    assert_eq!(app.take_actions(), [Action::Redo { force: false }]);
    app.apply(
        EngineEvent::Undone {
            level: Level::Info,
            message: "reverted turn 3 (fix it): src/a.rs".into(),
        },
        Instant::now(),
    );
    assert!(screen(&mut app).contains("reverted turn 3 (fix it): src/a.rs"));
}

#[test]
fn undo_waits_for_the_running_turn() {
    let mut app = app();
    app.busy = true;
    type_line(&mut app, "/undo");
    assert!(app.take_actions().is_empty());
}

#[test]
fn rewind_picks_a_turn_and_puts_its_prompt_back_in_the_input() {
    let mut app = app();
    type_line(&mut app, "/rewind");
    assert_eq!(app.take_actions(), [Action::ListTurns]);
    let turns = vec![
        TurnEntry {
            turn: 2,
            prompt: "add tests".into(),
            files: 0,
        },
        TurnEntry {
            turn: 1,
            prompt: "rename the module\nand more".into(),
            files: 3,
        },
    ];
    app.apply(EngineEvent::Turns(turns), Instant::now());
    let shown = screen(&mut app);
    assert!(shown.contains("rewind to before a turn"), "{shown}");
    assert!(shown.contains("1  rename the module  (3 files)"), "{shown}");
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.take_actions(),
        [Action::Rewind {
            turn: 1,
            force: false
        }]
    );
    assert!(app.rewind.is_none());
    app.apply(
        EngineEvent::Rewound {
            prompt: "rename the module".into(),
        },
        Instant::now(),
    );
    assert_eq!(app.input.text(), "rename the module");
}

#[test]
fn esc_closes_the_rewind_picker_and_nothing_happens() {
    let mut app = app();
    type_line(&mut app, "/rewind --force");
    app.take_actions();
    app.apply(
        EngineEvent::Turns(vec![TurnEntry {
            turn: 1,
            prompt: "p".into(),
            files: 1,
        }]),
        Instant::now(),
    );
    assert!(app.rewind.as_ref().is_some_and(|p| p.force));
    press(&mut app, KeyCode::Esc);
    assert!(app.rewind.is_none());
    assert!(app.take_actions().is_empty());
}
