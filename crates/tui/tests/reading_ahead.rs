#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Reading ahead on screen: accepts in a row keep their tool groups under their own
//! prompts, the keys that take a suggestion, and which suggestions are speculated.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_engine::ApprovalMode;
use saki_engine::{Item, ToolExecutionContext, ToolResultStatus};
use saki_tui::{App, EngineEvent, Status, Theme};
use std::time::{Duration, Instant};

fn app() -> App {
    let status = Status {
        provider: "openai".into(),
        model: "gpt-test".into(),
        fast_model: None,
        context_window: Some(128_000),
        tokens_used: 12_800,
        approval: Some(ApprovalMode::AutoEdit),
        session_id: None,
        sandbox: None,
        sandboxed: false,
    };
    App::new(status, Theme::plain(), std::env::temp_dir(), true)
}

fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let mut line = String::new();
        for x in 0..width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// A speculated turn that wrote `path` in one batch `batch`, as the engine reports it.
fn accepted(prompt: &str, path: &str, batch: &str, pipelined: Option<&str>) -> EngineEvent {
    let ctx = ToolExecutionContext {
        call_id: format!("call-{path}"),
        batch_id: batch.into(),
        call_index: 0,
    };
    EngineEvent::Accepted {
        items: vec![
            Item::user(prompt),
            Item::ToolCall {
                name: "write_file".into(),
                arguments: serde_json::json!({"path": path, "content": "x\n"}).to_string(),
                signature: None,
                ctx: ctx.clone(),
            },
            Item::ToolResult {
                name: "write_file".into(),
                content: format!("wrote {path}"),
                status: ToolResultStatus::Success,
                ctx,
            },
            Item::AssistantText {
                text: format!("Added {path}."),
            },
        ],
        files: vec![path.into()],
        commands_run: 0,
        saved_ms: 1500,
        pipelined: pipelined.map(str::to_owned),
    }
}

/// Tab puts the visible suggestion in the input, Enter sends it.
fn tab_enter(app: &mut App, now: Instant) {
    app.on_key(key(KeyCode::Tab), now);
    app.on_key(key(KeyCode::Enter), now);
}

fn two_accepts(first: &str, second: &str) -> App {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::committed(Item::user("make a plan")), now);
    app.apply(
        EngineEvent::committed(Item::AssistantText {
            text: "First notes.txt, then todo.txt.".into(),
        }),
        now,
    );
    app.apply(EngineEvent::finished(None), now);
    app.apply(EngineEvent::Suggestion("add notes.txt".into()), now);
    let now = now + Duration::from_millis(300);
    app.tick(now);
    tab_enter(&mut app, now);
    app.apply(
        accepted("add notes.txt", "notes.txt", first, Some("add todo.txt")),
        now,
    );
    tab_enter(&mut app, now);
    app.apply(accepted("add todo.txt", "todo.txt", second, None), now);
    app
}

#[test]
fn two_accepted_speculations_in_a_row() {
    // The ids the engine hands out: one counter for the session.
    let mut app = two_accepts("batch_2", "batch_3");
    insta::assert_snapshot!(screen(&mut app, 60, 28));
}

#[test]
fn a_batch_id_repeated_by_an_older_session_log_stays_under_its_own_prompt() {
    // Logs written before ids were unique repeat `speculation_1` for every speculation.
    let mut repeated = two_accepts("speculation_1", "speculation_1");
    let mut unique = two_accepts("batch_2", "batch_3");
    assert_eq!(screen(&mut repeated, 60, 20), screen(&mut unique, 60, 20));
}

/// A finished turn with `suggestion` visible.
fn offered(suggestion: &str) -> (App, Instant) {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::committed(Item::user("fix the parser")), now);
    app.apply(
        EngineEvent::committed(Item::AssistantText {
            text: "Fixed.".into(),
        }),
        now,
    );
    app.apply(EngineEvent::finished(None), now);
    app.apply(EngineEvent::Suggestion(suggestion.into()), now);
    let now = now + Duration::from_millis(300);
    app.tick(now);
    assert_eq!(app.ghost(), Some(suggestion));
    app.take_actions();
    (app, now)
}

#[test]
fn enter_on_an_empty_prompt_never_sends_the_suggestion() {
    use saki_tui::Action;
    let (mut app, now) = offered("run the tests");
    // After a break, or a terminal's Enter on focus: nothing is sent.
    for _ in 0..3 {
        app.on_key(key(KeyCode::Enter), now + Duration::from_secs(600));
    }
    assert_eq!(app.take_actions(), vec![]);
    assert_eq!(app.ghost(), Some("run the tests"));

    // → puts it in the input like Tab; Enter then sends the input.
    app.on_key(key(KeyCode::Right), now);
    assert_eq!(app.input.text(), "run the tests");
    assert!(app.ghost().is_none());
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(
        app.take_actions(),
        vec![Action::Submit {
            text: "run the tests".into()
        }]
    );

    // What is sent is what the input holds, edits included.
    let (mut app, now) = offered("run the tests");
    app.on_key(key(KeyCode::Tab), now);
    for c in " -q".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(
        app.take_actions(),
        vec![Action::Submit {
            text: "run the tests -q".into()
        }]
    );
}

#[test]
fn only_a_suggestion_on_screen_is_reported_as_shown() {
    use saki_tui::Action;
    let shown = |text: &str| Action::SuggestionShown { text: text.into() };
    // Shown after the delay: reported once.
    let (mut app, now) = {
        let mut app = app();
        let now = Instant::now();
        app.apply(EngineEvent::finished(None), now);
        app.apply(EngineEvent::Suggestion("run the tests".into()), now);
        assert_eq!(app.take_actions(), vec![], "not before it shows");
        (app, now)
    };
    app.tick(now + Duration::from_millis(300));
    app.tick(now + Duration::from_millis(400));
    assert_eq!(app.take_actions(), vec![shown("run the tests")]);

    // Arriving while the person types: never shown, never reported.
    let mut app = self::app();
    let now = Instant::now();
    app.apply(EngineEvent::finished(None), now);
    app.on_key(key(KeyCode::Char('x')), now);
    app.apply(EngineEvent::Suggestion("run the tests".into()), now);
    app.tick(now + Duration::from_secs(1));
    assert!(app.ghost().is_none());
    assert_eq!(app.take_actions(), vec![]);

    // Typed over while pending: dismissed, never reported as shown.
    let mut app = self::app();
    app.apply(EngineEvent::finished(None), now);
    app.apply(EngineEvent::Suggestion("run the tests".into()), now);
    app.on_key(key(KeyCode::Char('x')), now + Duration::from_millis(100));
    app.tick(now + Duration::from_secs(1));
    assert_eq!(app.take_actions(), vec![Action::Dismiss]);

    // The pipelined suggestion an accept carries shows at once.
    let mut app = self::app();
    app.apply(
        accepted(
            "add notes.txt",
            "notes.txt",
            "batch_2",
            Some("add todo.txt"),
        ),
        now,
    );
    assert_eq!(app.take_actions(), vec![shown("add todo.txt")]);
}

#[test]
fn slash_stats_asks_the_engine_and_shows_what_reading_ahead_cost() {
    use saki_engine::ReadAheadStats;
    use saki_engine::TokenCount;
    use saki_tui::Action;
    let mut app = app();
    let now = Instant::now();
    for c in "/stats".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(app.take_actions(), vec![Action::Stats]);
    let count = |requests, input_tokens, cached_input_tokens, output_tokens| TokenCount {
        requests,
        input_tokens,
        cached_input_tokens,
        output_tokens,
    };
    let mut stats = ReadAheadStats {
        accepted: 3,
        discarded: 2,
        saved_ms: 41_200,
        main: count(12, 180_000, 150_000, 4_000),
        ..Default::default()
    };
    stats.background.suggestion = count(5, 60_000, 55_000, 100);
    stats.background.speculation = count(9, 110_000, 90_000, 2_500);
    stats.background.pipelined_suggestion = count(3, 40_000, 38_000, 60);
    app.apply(EngineEvent::Stats(stats), now);
    insta::assert_snapshot!(screen(&mut app, 90, 12));
}
