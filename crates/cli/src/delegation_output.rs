//! How `saki exec` shows what the delegation tools bring (see saki-engine's
//! `delegation.rs`): a question nobody can answer here, and subagents' progress.
//!
//! - A question ([`QuestionRequest`]) is answered with nobody: `ask_user` then fails
//!   with a result saying so, and `exit_plan_mode` ends the turn, its plan written to
//!   stdout (plain mode) as the run's output.
//! - A subagent's tool calls and results and its answer are JSON items carrying
//!   `parent_call_id` (the `agent` call running it) and `agent`, and its usage a `usage`
//!   event with the same fields; in plain mode one `[agent NAME] tool: status args →
//!   first line` line per call on stderr.

use crate::output::{emit, PlainPrinter};
use saki_engine::{QuestionKind, QuestionRequest, SubagentEvent};
use saki_llm_worker::{Item, WorkerEvent};
use saki_tools::sanitize::sanitize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

/// Subagent items' ids (`subagent_item_N`), apart from the main items' `item_N`.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Replies that nobody can answer (dropping the request says the same).
pub fn question(request: QuestionRequest, json_mode: bool, printer: &PlainPrinter) {
    if let QuestionKind::LeavePlan { plan } = &request.kind {
        if !json_mode {
            printer.finish_line();
            println!("{}", sanitize(plan.trim_end()));
        }
    }
    let _ = request.reply.send(None);
}

/// One subagent event.
pub fn subagent(event: &SubagentEvent, json_mode: bool, printer: &PlainPrinter) {
    let items: Vec<&Item> = match &event.event {
        WorkerEvent::Committed(item) => vec![item],
        WorkerEvent::CommittedMany(items) => items.iter().collect(),
        WorkerEvent::Usage(usage) if json_mode => {
            let mut out = json!({"type": "usage", "parent_call_id": event.parent_call_id,
                "agent": event.agent});
            if let (Some(o), Ok(Value::Object(u))) =
                (out.as_object_mut(), serde_json::to_value(usage))
            {
                o.extend(u);
            }
            emit(&out);
            return;
        }
        _ => return,
    };
    for item in items {
        if json_mode {
            if let Some(mut value) = item_json(item) {
                let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                value["id"] = json!(format!("subagent_item_{n}"));
                value["parent_call_id"] = json!(event.parent_call_id);
                value["agent"] = json!(event.agent);
                emit(&json!({"type": "item.completed", "item": value}));
            }
        } else if let Item::ToolResult {
            name,
            content,
            status,
            ..
        } = item
        {
            let first: String = content
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(100)
                .collect();
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            printer.finish_line();
            eprintln!(
                "[agent {}] {}: {status} → {}",
                sanitize(&event.agent),
                sanitize(name),
                sanitize(&first)
            );
        }
    }
}

/// A subagent's item as a `--json` item (the user prompt and thinking are left out).
fn item_json(item: &Item) -> Option<Value> {
    Some(match item {
        Item::AssistantText { text } => json!({"kind": "assistant_message", "text": text}),
        Item::ToolCall {
            name,
            arguments,
            ctx,
            ..
        } => json!({"kind": "tool_call", "call_id": ctx.call_id, "batch_id": ctx.batch_id,
            "call_index": ctx.call_index, "name": name, "arguments": arguments}),
        Item::ToolResult {
            name,
            content,
            status,
            ctx,
        } => crate::output::tool_result_json(name, content, status, ctx),
        _ => return None,
    })
}
