#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Slash commands in the input: the `/` popup lists built-in and custom commands with
//! their descriptions, Tab completes one, a custom command is sent as a prompt (the
//! engine expands it) and `/help` lists them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_tui::{Action, App, Status, Theme};
use std::time::Instant;

fn app() -> App {
    let mut app = App::new(
        Status::default(),
        Theme::plain(),
        std::env::temp_dir(),
        false,
    );
    app.set_custom_commands(vec![
        ("review".into(), "Review a file for bugs".into()),
        ("ship-it".into(), "Tag and push a release".into()),
    ]);
    app
}

fn press(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

fn screen(app: &mut App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..24 {
        for x in 0..80 {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_slash_popup_lists_commands_and_tab_completes_one() {
    let mut app = app();
    type_text(&mut app, "/");
    let all = screen(&mut app);
    assert!(all.contains("/ command"), "{all}");
    assert!(all.contains("/help"), "{all}");
    type_text(&mut app, "rev");
    let narrowed = screen(&mut app);
    assert!(
        narrowed.contains("/review  Review a file for bugs"),
        "{narrowed}"
    );
    assert!(!narrowed.contains("/help"), "{narrowed}");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.input.text(), "/review ");
    assert!(app.popup.is_none());
}

#[test]
fn a_custom_command_is_sent_as_a_prompt_and_help_lists_it() {
    let mut app = app();
    type_text(&mut app, "/review src/a.rs");
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Enter);
    let actions = app.take_actions();
    assert!(
        actions.contains(&Action::Submit {
            text: "/review src/a.rs".into()
        }),
        "{actions:?}"
    );
    type_text(&mut app, "/nope");
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Enter);
    assert!(
        !app.take_actions()
            .iter()
            .any(|a| matches!(a, Action::Submit { .. })),
        "an unknown command is not sent"
    );
    type_text(&mut app, "/help");
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Enter);
    let shown = screen(&mut app);
    assert!(shown.contains("your commands:"), "{shown}");
    assert!(
        shown.contains("/export") && shown.contains("/shells"),
        "{shown}"
    );
    assert!(
        shown.contains("/ship-it") && shown.contains("Tag and push a release"),
        "{shown}"
    );
}
