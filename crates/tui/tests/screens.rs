#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Snapshot tests of the key screens, drawn through ratatui's test backend.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_engine::ApprovalMode;
use saki_engine::{Item, ToolExecutionContext, ToolResultStatus};
use saki_tui::{App, EngineEvent, Status, Theme};
use std::time::{Duration, Instant};

fn status() -> Status {
    Status {
        provider: "openai".into(),
        model: "gpt-test".into(),
        fast_model: Some("gpt-mini".into()),
        context_window: Some(128_000),
        tokens_used: 12_800,
        approval: Some(ApprovalMode::Default),
        session_id: None,
        sandbox: None,
        sandboxed: false,
    }
}

fn app() -> App {
    App::new(status(), Theme::plain(), std::env::temp_dir(), true)
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

fn ctx(batch: &str, call: &str, index: usize) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: call.into(),
        batch_id: batch.into(),
        call_index: index,
    }
}

#[test]
fn streaming_answer() {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(
        EngineEvent::committed(Item::User {
            text: "explain the parser".into(),
        }),
        now,
    );
    for delta in [
        "## The parser\n\nIt has **two** stages:\n\n",
        "1. a lexer\n2. a `Parser` that builds the tree\n\n```rust\nfn parse(",
        "input: &str) -> Tree {\n",
    ] {
        app.apply(EngineEvent::text_delta(delta), now);
    }
    insta::assert_snapshot!(screen(&mut app, 60, 20));
}

fn tool_call(name: &str, args: serde_json::Value, ctx: ToolExecutionContext) -> Item {
    Item::ToolCall {
        name: name.into(),
        arguments: args.to_string(),
        signature: None,
        ctx,
    }
}

fn tool_result(
    name: &str,
    content: &str,
    status: ToolResultStatus,
    ctx: ToolExecutionContext,
) -> Item {
    Item::ToolResult {
        name: name.into(),
        content: content.into(),
        status,
        ctx,
    }
}

#[test]
fn tool_group_with_a_diff() {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(
        EngineEvent::committed(Item::User {
            text: "rename greet to hello".into(),
        }),
        now,
    );
    let (read, edit, test) = (ctx("b1", "c1", 0), ctx("b1", "c2", 1), ctx("b1", "c3", 2));
    app.apply(
        EngineEvent::committed(tool_call(
            "read_file",
            serde_json::json!({"path": "src/lib.rs"}),
            read.clone(),
        )),
        now,
    );
    app.apply(
        EngineEvent::committed(tool_call(
            "edit",
            serde_json::json!({"path": "src/lib.rs", "old_string": "fn greet() {", "new_string": "fn hello() {"}),
            edit.clone(),
        )),
        now,
    );
    app.apply(
        EngineEvent::committed(tool_call(
            "shell",
            serde_json::json!({"command": "cargo test"}),
            test.clone(),
        )),
        now,
    );
    app.apply(EngineEvent::tool_started("tool", read.clone()), now);
    app.apply(
        EngineEvent::committed(tool_result(
            "read_file",
            "pub fn greet() {}\n// two\n// three\n",
            ToolResultStatus::Success,
            read,
        )),
        now,
    );
    app.apply(EngineEvent::tool_started("tool", edit.clone()), now);
    app.apply(
        EngineEvent::committed(tool_result(
            "edit",
            "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,2 +1,2 @@\n-fn greet() {\n+fn hello() {\n }\n",
            ToolResultStatus::Success,
            edit,
        )),
        now,
    );
    app.apply(EngineEvent::tool_started("tool", test), now);
    insta::assert_snapshot!(screen(&mut app, 70, 18));
}

fn approval(
    app: &mut App,
    command: &str,
    grant: Option<&str>,
) -> tokio::sync::oneshot::Receiver<saki_engine::Approval> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let input = serde_json::json!({ "command": command });
    app.apply(
        EngineEvent::Approval(saki_tui::ApprovalRequest {
            call: saki_engine::ToolCallInfo {
                name: "shell".into(),
                arguments: input.to_string(),
                input,
                ctx: ctx("b1", "c1", 0),
            },
            mode: ApprovalMode::Default,
            grant_label: grant.map(str::to_owned),
            why: None,
            reply,
        }),
        Instant::now(),
    );
    answer
}

#[test]
fn approval_prompt() {
    let mut app = app();
    app.apply(EngineEvent::TurnStarted, Instant::now());
    let _answer = approval(&mut app, "cargo test --workspace", Some("cargo test …"));
    insta::assert_snapshot!(screen(&mut app, 100, 10));
}

#[test]
fn approval_keys_answer_once_for_the_session_or_with_a_reason() {
    use saki_engine::Approval;
    let mut app = app();
    let now = Instant::now();
    let mut answer = approval(&mut app, "cargo test", Some("cargo test …"));
    app.on_key(key(KeyCode::Char('a')), now);
    assert_eq!(answer.try_recv().unwrap(), Approval::Session);

    let mut answer = approval(&mut app, "make && make install", None);
    app.on_key(key(KeyCode::Char('a')), now);
    assert!(
        answer.try_recv().is_err(),
        "no session grant for a compound command"
    );
    app.on_key(key(KeyCode::Char('y')), now);
    assert_eq!(answer.try_recv().unwrap(), Approval::Once);

    let mut answer = approval(&mut app, "rm -rf build", None);
    app.on_key(key(KeyCode::Char('r')), now);
    for c in "keep it".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(
        answer.try_recv().unwrap(),
        Approval::Deny("the person denied this call: keep it".into())
    );
    assert!(app.approvals.is_empty());
}

fn suggested(app: &mut App) -> Instant {
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(
        EngineEvent::committed(Item::User {
            text: "add a test for parse".into(),
        }),
        now,
    );
    app.apply(
        EngineEvent::committed(Item::AssistantText {
            text: "Added `parses_empty_input`.".into(),
        }),
        now,
    );
    app.apply(EngineEvent::finished(None), now);
    app.apply(EngineEvent::Suggestion("run the tests".into()), now);
    app.apply(EngineEvent::Speculation(saki_tui::SpecState::Running), now);
    now
}

#[test]
fn ghost_suggestion_appears_after_the_delay() {
    let mut app = app();
    let now = suggested(&mut app);
    assert!(app.ghost().is_none(), "not before the 300 ms delay");
    app.tick(now + Duration::from_millis(300));
    assert_eq!(app.ghost(), Some("run the tests"));
    app.apply(EngineEvent::Speculation(saki_tui::SpecState::Ready), now);
    insta::assert_snapshot!(screen(&mut app, 70, 9));
}

#[test]
fn tab_fills_enter_sends_the_input_and_typing_dismisses() {
    use saki_tui::Action;
    let mut app = app();
    let now = suggested(&mut app) + Duration::from_millis(300);
    app.tick(now);
    app.take_actions();
    app.on_key(key(KeyCode::Tab), now);
    assert_eq!(app.input.text(), "run the tests");
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(
        app.take_actions(),
        vec![Action::Submit {
            text: "run the tests".into()
        }]
    );

    // Enter on an empty prompt sends nothing, also with a suggestion showing.
    let mut app = self::app();
    let now = suggested(&mut app) + Duration::from_millis(300);
    app.tick(now);
    app.take_actions();
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(app.take_actions(), vec![]);
    assert_eq!(app.ghost(), Some("run the tests"), "still offered");
    assert!(app.input.is_empty());

    let mut app = self::app();
    let now = suggested(&mut app) + Duration::from_millis(300);
    app.tick(now);
    app.take_actions();
    app.on_key(key(KeyCode::Char('n')), now);
    assert_eq!(app.take_actions(), vec![Action::Dismiss]);
    assert_eq!(app.input.text(), "n");
    assert!(app.ghost().is_none());
}

#[test]
fn accepted_speculation() {
    let mut app = app();
    let now = suggested(&mut app) + Duration::from_millis(300);
    app.tick(now);
    app.take_actions();
    app.on_key(key(KeyCode::Tab), now);
    app.on_key(key(KeyCode::Enter), now);
    let run = ctx("batch_2", "s1", 0);
    app.apply(
        EngineEvent::Accepted {
            items: vec![
                Item::User {
                    text: "run the tests".into(),
                },
                tool_call(
                    "shell",
                    serde_json::json!({"command": "cargo test"}),
                    run.clone(),
                ),
                tool_result(
                    "shell",
                    "test result: ok. 12 passed\n",
                    ToolResultStatus::Success,
                    run,
                ),
                Item::AssistantText {
                    text: "All **12** tests pass.".into(),
                },
            ],
            files: vec!["tests/parse.rs".into()],
            commands_run: 0,
            saved_ms: 4200,
            pipelined: Some("commit the change".into()),
        },
        now,
    );
    assert_eq!(
        app.ghost(),
        Some("commit the change"),
        "the pipelined suggestion shows at once"
    );
    insta::assert_snapshot!(screen(&mut app, 70, 16));
}

#[test]
fn ctrl_c_cancels_a_turn_then_quits_only_when_pressed_twice_on_an_idle_prompt() {
    use saki_tui::Action;
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.on_key(ctrl_c, now);
    assert_eq!(app.take_actions(), vec![Action::Cancel]);
    app.apply(EngineEvent::finished(None), now);
    app.on_key(ctrl_c, now);
    assert!(app.take_actions().is_empty());
    assert!(screen(&mut app, 80, 6).contains("press Ctrl+C again to quit"));
    app.on_key(ctrl_c, now + Duration::from_millis(500));
    assert_eq!(app.take_actions(), vec![Action::Quit]);
    assert!(app.quit);
}

#[test]
fn shift_tab_cycles_the_approval_mode_and_slash_commands_parse() {
    use saki_tui::Action;
    let mut app = app();
    let now = Instant::now();
    app.on_key(key(KeyCode::BackTab), now);
    assert_eq!(
        app.take_actions(),
        vec![Action::SetApproval(ApprovalMode::AutoEdit)]
    );
    for c in "/model --fast tiny".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    assert_eq!(
        app.take_actions(),
        vec![Action::SetModel {
            model: "tiny".into(),
            fast: true
        }]
    );
    for c in "/bogus".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    assert!(screen(&mut app, 80, 8).contains("unknown command /bogus"));
}

#[test]
fn at_popup_finds_files_and_tab_inserts_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
    std::fs::write(dir.path().join("README.md"), "").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join("target/main.rs"), "").unwrap();
    let mut app = App::new(status(), Theme::plain(), dir.path().to_path_buf(), true);
    let now = Instant::now();
    for c in "look at @mai".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    insta::assert_snapshot!(screen(&mut app, 60, 12));
    app.on_key(key(KeyCode::Tab), now);
    assert_eq!(app.input.text(), "look at @src/main.rs ");
    assert!(app.popup.is_none());
}

#[test]
fn prompts_typed_during_a_turn_go_to_the_engine_and_return_to_the_input_on_cancel() {
    use saki_tui::Action;
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    for c in "then this".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    // The engine keeps it until the turn is over; the UI shows what the engine holds.
    assert_eq!(
        app.take_actions(),
        vec![Action::Submit {
            text: "then this".into()
        }]
    );
    app.apply(EngineEvent::Queued(vec!["then this".into()]), now);
    assert!(screen(&mut app, 60, 8).contains("queued: then this"));
    app.apply(EngineEvent::Queued(Vec::new()), now);
    assert!(!screen(&mut app, 60, 8).contains("queued"));

    for c in "later".chars() {
        app.on_key(key(KeyCode::Char(c)), now);
    }
    app.on_key(key(KeyCode::Enter), now);
    app.on_key(key(KeyCode::Esc), now);
    assert_eq!(
        app.take_actions(),
        vec![
            Action::Submit {
                text: "later".into()
            },
            Action::Cancel
        ]
    );
    // The cancel hands the queued prompt back: it goes into the input, not the model.
    app.apply(EngineEvent::Unqueued(vec!["later".into()]), now);
    app.apply(EngineEvent::finished(None), now);
    assert!(app.take_actions().is_empty());
    assert_eq!(app.input.text(), "later");
}

#[test]
fn ctrl_c_during_an_approval_denies_it_and_cancels_the_turn() {
    use saki_tui::Action;
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    let mut answer = approval(&mut app, "rm -rf build", None);
    app.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        now,
    );
    assert!(matches!(
        answer.try_recv().unwrap(),
        saki_engine::Approval::Deny(_)
    ));
    assert_eq!(app.take_actions(), vec![Action::Cancel]);
    assert!(app.approvals.is_empty());
}

#[test]
fn escapes_decoded_from_json_or_markdown_never_reach_the_screen() {
    let mut app = app();
    let now = Instant::now();
    let evil = "x\u{1b}]52;c;ZWNobw==\u{7}\u{1b}[2J";
    // JSON arguments encode the ESC as \u001b: it only appears once they are parsed.
    app.apply(
        EngineEvent::committed(tool_call(
            "write_file",
            serde_json::json!({"path": evil, "content": evil}),
            ctx("b1", "c1", 0),
        )),
        now,
    );
    // Markdown character references decode to ESC and BEL.
    app.apply(
        EngineEvent::text_delta("see &#27;[2J and &#x1b;]52;c;eA==&#7; ok"),
        now,
    );
    let _answer = approval(&mut app, &format!("printf '{evil}'"), None);
    let shown = screen(&mut app, 100, 30);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(shown.contains('\u{241B}'), "made visible: {shown}");
}
