#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The model's checklist (`update_plan`) on screen: pinned above the input while a turn
//! runs, folded to one line when it is over, and shown folded for a resumed session.

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_engine::ApprovalMode;
use saki_engine::Plan;
use saki_engine::TurnEnd;
use saki_engine::{Item, ToolExecutionContext, ToolResultStatus};
use saki_tui::{App, EngineEvent, Status, Theme};
use std::time::Instant;

fn app() -> App {
    let status = Status {
        provider: "openai".into(),
        model: "gpt-test".into(),
        fast_model: None,
        context_window: Some(128_000),
        tokens_used: 1_000,
        approval: Some(ApprovalMode::Default),
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

const PLAN: &str = r#"{"explanation":"the parser drops trailing commas","plan":[
  {"step":"Read src/parser.rs","status":"completed"},
  {"step":"Fix the comma handling in parse_list","status":"in_progress"},
  {"step":"Run cargo test","status":"pending"}]}"#;

fn plan_call(app: &mut App, now: Instant) {
    let ctx = ToolExecutionContext {
        call_id: "p1".into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    };
    app.apply(
        EngineEvent::committed(Item::ToolCall {
            name: "update_plan".into(),
            arguments: PLAN.into(),
            signature: None,
            ctx: ctx.clone(),
        }),
        now,
    );
    app.apply(
        EngineEvent::committed(Item::ToolResult {
            name: "update_plan".into(),
            content: "Plan updated.".into(),
            status: ToolResultStatus::Success,
            ctx,
        }),
        now,
    );
    app.apply(
        EngineEvent::Plan {
            plan: Plan::from_arguments(PLAN).unwrap(),
            restored: false,
        },
        now,
    );
}

#[test]
fn the_plan_is_pinned_above_the_input_while_the_turn_runs() {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(EngineEvent::committed(Item::user("fix the parser")), now);
    plan_call(&mut app, now);
    let shown = screen(&mut app, 64, 16);
    assert!(shown.contains("▸ Fix the comma handling"), "{shown}");
    insta::assert_snapshot!(shown);
}

#[test]
fn the_plan_folds_when_the_turn_is_over() {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    app.apply(EngineEvent::committed(Item::user("fix the parser")), now);
    plan_call(&mut app, now);
    app.apply(
        EngineEvent::committed(Item::AssistantText {
            text: "Fixed; tests are next.".into(),
        }),
        now,
    );
    app.apply(
        EngineEvent::TurnFinished {
            note: None,
            end: TurnEnd::Compacted,
        },
        now,
    );
    let shown = screen(&mut app, 64, 12);
    assert!(
        shown.contains("▸ Plan 1/3 done · now: Fix the comma handling"),
        "{shown}"
    );
    assert!(!shown.contains("Run cargo test"), "folded: {shown}");
    insta::assert_snapshot!(shown);
}

#[test]
fn a_resumed_session_shows_its_last_plan_and_new_clears_it() {
    let mut app = app();
    let now = Instant::now();
    app.apply(
        EngineEvent::History(vec![Item::user("fix the parser")]),
        now,
    );
    app.apply(
        EngineEvent::Plan {
            plan: Plan::from_arguments(PLAN).unwrap(),
            restored: true,
        },
        now,
    );
    let shown = screen(&mut app, 64, 8);
    assert!(shown.contains("▸ Plan 1/3 done"), "{shown}");
    app.apply(EngineEvent::History(Vec::new()), now);
    app.apply(
        EngineEvent::Plan {
            plan: Plan::default(),
            restored: true,
        },
        now,
    );
    assert!(!screen(&mut app, 64, 8).contains("Plan"));
}

#[test]
fn plan_text_is_sanitised() {
    let mut app = app();
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    let plan = Plan::from_value(&serde_json::json!({
        "plan": [{"step": "evil \u{1b}[2J step", "status": "in_progress"}]
    }))
    .unwrap();
    app.apply(
        EngineEvent::Plan {
            plan,
            restored: false,
        },
        now,
    );
    let step = &app.plan.as_ref().unwrap().steps[0].step;
    assert!(!step.contains('\u{1b}'), "{step:?}");
}
