#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The delegation tools on screen: a question from the model as a picker (options, free
//! text, Esc), leaving plan mode (the answer switches the mode shown), and subagents as a
//! live group above the input that Ctrl+O expands and their `agent` result folds.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_engine::{
    ApprovalMode, Item, QuestionKind, QuestionRequest, SubagentEvent, ToolExecutionContext,
    ToolResultStatus, WorkerEvent, LEAVE_PLAN_OPTIONS,
};
use saki_tui::{App, EngineEvent, Status, Theme};
use std::time::Instant;
use tokio::sync::oneshot;

fn app(mode: ApprovalMode) -> App {
    let status = Status {
        provider: "openai".into(),
        model: "gpt-test".into(),
        fast_model: None,
        context_window: Some(128_000),
        tokens_used: 1_000,
        approval: Some(mode),
        session_id: None,
        sandbox: None,
        sandboxed: false,
    };
    App::new(status, Theme::plain(), std::env::temp_dir(), false)
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

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn ctx(call: &str, index: usize) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: call.into(),
        batch_id: "batch_1".into(),
        call_index: index,
    }
}

/// A question arriving during a turn; the receiver gets the answer.
fn ask(
    app: &mut App,
    question: &str,
    options: &[&str],
    free_text: bool,
    kind: QuestionKind,
) -> oneshot::Receiver<Option<String>> {
    let (reply, answer) = oneshot::channel();
    // One instant for both: the status line's "working Ns" counts from the first.
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(
        EngineEvent::Question(QuestionRequest {
            call_id: "q1".into(),
            question: question.into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            free_text,
            kind,
            reply,
        }),
        now,
    );
    answer
}

#[test]
fn ask_user_is_a_picker_with_free_text() {
    let mut app = app(ApprovalMode::Default);
    let mut answer = ask(
        &mut app,
        "Which database should the tests use?",
        &["sqlite", "postgres"],
        true,
        QuestionKind::Ask,
    );
    insta::assert_snapshot!(screen(&mut app, 64, 12));
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    assert_eq!(answer.try_recv().unwrap(), Some("postgres".into()));
    assert!(app.question.is_none(), "answered: the picker closes");

    // Typed text wins over the highlighted option.
    let mut answer = ask(
        &mut app,
        "Which database?",
        &["sqlite"],
        true,
        QuestionKind::Ask,
    );
    typed(&mut app, "duckdb");
    key(&mut app, KeyCode::Backspace);
    typed(&mut app, "b!");
    key(&mut app, KeyCode::Enter);
    assert_eq!(answer.try_recv().unwrap(), Some("duckdb!".into()));

    // Esc answers too: the model learns the person dismissed it, the turn goes on.
    let mut answer = ask(&mut app, "Which?", &["a", "b"], true, QuestionKind::Ask);
    key(&mut app, KeyCode::Esc);
    assert_eq!(
        answer.try_recv().unwrap(),
        Some("(the person dismissed the question)".into())
    );
}

#[test]
fn leaving_plan_mode_switches_the_mode_the_person_picks() {
    let mut app = app(ApprovalMode::Plan);
    let plan = "1. add the parser\n2. test it";
    let mut answer = ask(
        &mut app,
        "Leave plan mode and carry out the plan?",
        &LEAVE_PLAN_OPTIONS,
        false,
        QuestionKind::LeavePlan { plan: plan.into() },
    );
    insta::assert_snapshot!(screen(&mut app, 64, 14));
    // Without free text a digit picks an option; letters type nothing.
    typed(&mut app, "x2");
    assert_eq!(app.question.as_ref().unwrap().selected, 1);
    assert_eq!(app.question.as_ref().unwrap().text, "");
    key(&mut app, KeyCode::Enter);
    assert_eq!(answer.try_recv().unwrap(), Some("auto-edit".into()));
    assert_eq!(app.status.approval, Some(ApprovalMode::AutoEdit));

    let mut app = self::app(ApprovalMode::Plan);
    let mut answer = ask(
        &mut app,
        "Leave plan mode?",
        &LEAVE_PLAN_OPTIONS,
        false,
        QuestionKind::LeavePlan { plan: plan.into() },
    );
    key(&mut app, KeyCode::Esc);
    assert_eq!(answer.try_recv().unwrap(), Some("stay in plan mode".into()));
    assert_eq!(app.status.approval, Some(ApprovalMode::Plan));
}

fn sub(agent: &str, item: Item) -> EngineEvent {
    EngineEvent::Subagent(SubagentEvent {
        parent_call_id: "call_a".into(),
        agent: agent.into(),
        event: WorkerEvent::Committed(item),
    })
}

fn call(name: &str, id: &str, index: usize) -> Item {
    Item::ToolCall {
        name: name.into(),
        arguments: "{}".into(),
        signature: None,
        ctx: ctx(id, index),
    }
}

fn result(name: &str, id: &str, index: usize, status: ToolResultStatus) -> Item {
    Item::ToolResult {
        name: name.into(),
        content: "ok".into(),
        status,
        ctx: ctx(id, index),
    }
}

#[test]
fn a_running_subagent_shows_live_above_the_input_and_folds_when_it_answers() {
    let mut app = app(ApprovalMode::Default);
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(
        EngineEvent::committed(Item::User {
            text: "where is main?".into(),
        }),
        now,
    );
    app.apply(EngineEvent::committed(call("agent", "call_a", 0)), now);
    app.apply(EngineEvent::tool_started("agent", ctx("call_a", 0)), now);
    app.apply(sub("explore", call("read_file", "s1", 0)), now);
    app.apply(
        sub(
            "explore",
            result("read_file", "s1", 0, ToolResultStatus::Success),
        ),
        now,
    );
    app.apply(sub("explore", call("grep", "s2", 0)), now);
    // The subagent's text and usage are not part of the group.
    app.apply(
        sub(
            "explore",
            Item::AssistantText {
                text: "thinking aloud".into(),
            },
        ),
        now,
    );
    let view = &app.subagents.running["call_a"];
    assert_eq!(view.agent, "explore");
    assert_eq!(
        view.calls,
        [
            ("s1".into(), "read_file".into(), Some("success".into())),
            ("s2".into(), "grep".into(), None),
        ]
    );
    insta::assert_snapshot!("subagent_folded", screen(&mut app, 64, 12));
    app.on_key(
        KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL),
        now,
    );
    assert!(app.subagents.expanded);
    insta::assert_snapshot!("subagent_expanded", screen(&mut app, 64, 12));

    app.apply(
        EngineEvent::committed(Item::ToolResult {
            name: "agent".into(),
            content: "main is in src/main.rs".into(),
            status: ToolResultStatus::Success,
            ctx: ctx("call_a", 0),
        }),
        now,
    );
    assert!(app.subagents.running.is_empty(), "its result folds it");
    let shown = screen(&mut app, 64, 12);
    assert!(
        shown.contains("agent explore: 2 tool calls, success"),
        "{shown}"
    );
    assert!(!shown.contains("(ctrl+o)"), "{shown}");
}

/// A resumed session's subagents are replayed while idle: one transcript line per call.
#[test]
fn replayed_subagent_calls_go_to_the_transcript() {
    let mut app = app(ApprovalMode::Default);
    let now = Instant::now();
    app.apply(sub("general", call("edit", "s1", 0)), now);
    app.apply(
        sub("general", result("edit", "s1", 0, ToolResultStatus::Denied)),
        now,
    );
    assert!(app.subagents.running.is_empty());
    let shown = screen(&mut app, 64, 8);
    assert!(shown.contains("↳ agent general: edit denied"), "{shown}");
}
