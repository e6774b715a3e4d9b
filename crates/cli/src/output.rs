//! How `exec` shows a response: plain text streamed to stdout, or JSON Lines events
//! (schema in docs/events.md). Both are Timeline handlers fed as events arrive.

use saki_llm_worker::{
    CompactionReport, Handler, Item, TextBlockEvent, TextBlockKind, ThinkingBlockEvent,
    ThinkingBlockKind, WorkerEvent,
};
use saki_tools::sanitize::sanitize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Writes one JSON object as a line on stdout. A closed stdout is not an error worth
/// dying for mid-stream; the turn's outcome still decides the exit code.
pub fn emit(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The `compaction` event of `--json` (docs/events.md).
pub fn compaction_json(report: &CompactionReport) -> Value {
    let mut event = json!({"type": "compaction"});
    if let (Some(e), Ok(Value::Object(r))) = (event.as_object_mut(), serde_json::to_value(report)) {
        e.extend(r);
    }
    event
}

pub use saki_engine::describe::compaction_line;

/// The `tool_result` item of `--json` (docs/events.md). The result of a write the
/// language servers checked also carries their problems, structured, as `diagnostics`
/// (only `edit` and `write_file` append that block; another tool's output could hold
/// text that looks like one).
pub fn tool_result_json(
    name: &str,
    content: &str,
    status: &saki_llm_worker::ToolResultStatus,
    ctx: &saki_llm_worker::ToolExecutionContext,
) -> Value {
    let mut item = json!({"kind": "tool_result", "call_id": ctx.call_id, "batch_id": ctx.batch_id,
        "call_index": ctx.call_index, "name": name, "status": status, "output": content});
    if matches!(name, "edit" | "write_file") {
        if let Some(diagnostics) = saki_lsp::parse_block(content) {
            item["diagnostics"] = json!(diagnostics);
        }
    }
    item
}

/// Streams assistant text to stdout and thinking (dimmed on a terminal) to stderr.
#[derive(Clone, Default)]
pub struct PlainPrinter {
    /// Whether stdout currently ends mid-line (a final newline is owed).
    open_line: Arc<AtomicBool>,
    /// Arguments of calls whose results are still to come, by call id.
    call_args: Arc<Mutex<HashMap<String, String>>>,
}

impl PlainPrinter {
    pub fn finish_line(&self) {
        if self.open_line.swap(false, Ordering::Relaxed) {
            println!();
        }
    }
}

impl Handler<TextBlockKind> for PlainPrinter {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &TextBlockEvent) {
        if let TextBlockEvent::Delta(text) = event {
            let text = sanitize(text);
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            if let Some(last) = text.chars().last() {
                self.open_line.store(last != '\n', Ordering::Relaxed);
            }
        }
    }
}

impl Handler<ThinkingBlockKind> for PlainPrinter {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &ThinkingBlockEvent) {
        let dim = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let mut err = std::io::stderr().lock();
        let _ = match event {
            ThinkingBlockEvent::Start(_) if dim => err.write_all(b"\x1b[2m"),
            ThinkingBlockEvent::Delta(t) => err.write_all(sanitize(t).as_bytes()),
            ThinkingBlockEvent::Stop(_) if dim => err.write_all(b"\x1b[0m\n"),
            ThinkingBlockEvent::Stop(_) => err.write_all(b"\n"),
            _ => Ok(()),
        };
        let _ = err.flush();
    }
}

/// Emits `item.started` / `item.delta` / `item.completed` for every block.
#[derive(Clone, Default)]
pub struct JsonItems {
    next_item: Arc<AtomicUsize>,
    /// Ids of calls recovered from text (`"recovered": true` on their `tool_call`).
    recovered: Arc<Mutex<std::collections::HashSet<String>>>,
    /// Item ids of tool results that started and are not complete yet, by call id: one
    /// item, one id, from `item.started` to `item.completed`.
    running: Arc<Mutex<std::collections::HashMap<String, String>>>,
}

/// Per-block state: the item id and the text so far.
#[derive(Default)]
pub struct ItemScope {
    id: Option<String>,
    buffer: String,
}

impl JsonItems {
    fn begin(&self, scope: &mut ItemScope, kind: &str, extra: Value) -> String {
        if let Some(id) = &scope.id {
            return id.clone();
        }
        let id = format!("item_{}", self.next_item.fetch_add(1, Ordering::Relaxed));
        let mut item = json!({"id": id, "kind": kind});
        merge(&mut item, extra);
        emit(&json!({"type": "item.started", "item": item}));
        scope.id = Some(id.clone());
        id
    }

    fn delta(&self, scope: &mut ItemScope, kind: &str, delta_kind: &str, text: &str) {
        let id = self.begin(scope, kind, json!({}));
        scope.buffer.push_str(text);
        emit(&json!({"type": "item.delta", "item_id": id, "kind": delta_kind, "delta": text}));
    }

    fn complete(&self, scope: &mut ItemScope, kind: &str, fields: Value) {
        let id = self.begin(scope, kind, json!({}));
        let mut item = json!({"id": id, "kind": kind});
        merge(&mut item, fields);
        emit(&json!({"type": "item.completed", "item": item}));
        // `exec` keeps one scope for all its text blocks (engine events carry no
        // Timeline scope): the next block is a new item.
        scope.id = None;
    }
}

fn merge(target: &mut Value, extra: Value) {
    if let (Value::Object(t), Value::Object(e)) = (target, extra) {
        t.extend(e);
    }
}

impl Handler<TextBlockKind> for JsonItems {
    type Scope = ItemScope;
    fn on_event(&mut self, scope: &mut ItemScope, event: &TextBlockEvent) {
        const KIND: &str = "assistant_message";
        // An item begins with its first text: a block that stays empty (the text around
        // a call written as text, which recovery took out) is no message.
        match event {
            TextBlockEvent::Start(_) => {}
            TextBlockEvent::Delta(t) if t.is_empty() => {}
            TextBlockEvent::Delta(t) => self.delta(scope, KIND, "text", t),
            TextBlockEvent::Stop(_) if scope.id.is_none() => {}
            TextBlockEvent::Stop(_) => {
                let text = std::mem::take(&mut scope.buffer);
                self.complete(scope, KIND, json!({"text": text}));
            }
        }
    }
}

impl Handler<ThinkingBlockKind> for JsonItems {
    type Scope = ItemScope;
    fn on_event(&mut self, scope: &mut ItemScope, event: &ThinkingBlockEvent) {
        const KIND: &str = "reasoning";
        match event {
            ThinkingBlockEvent::Start(_) => {
                self.begin(scope, KIND, json!({}));
            }
            ThinkingBlockEvent::Delta(t) => self.delta(scope, KIND, "thinking", t),
            ThinkingBlockEvent::Signature(_) => {}
            ThinkingBlockEvent::Stop(_) => {
                let text = std::mem::take(&mut scope.buffer);
                self.complete(scope, KIND, json!({"text": text}));
            }
        }
    }
}

impl JsonItems {
    fn running(&self) -> MutexGuard<'_, std::collections::HashMap<String, String>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn recovered(&self) -> MutexGuard<'_, std::collections::HashSet<String>> {
        self.recovered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn next_id(&self) -> String {
        format!("item_{}", self.next_item.fetch_add(1, Ordering::Relaxed))
    }

    /// Tool calls and results, announced by the Worker once they carry their batch context.
    pub fn worker_event(&self, event: &WorkerEvent) {
        match event {
            WorkerEvent::CommittedMany(items) => {
                for item in items {
                    self.worker_event(&WorkerEvent::Committed(item.clone()));
                }
            }
            WorkerEvent::Committed(Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            }) => {
                let mut item = json!({"id": self.next_id(), "kind": "tool_call",
                    "call_id": ctx.call_id, "batch_id": ctx.batch_id, "call_index": ctx.call_index,
                    "name": name, "arguments": arguments});
                if self.recovered().remove(&ctx.call_id) {
                    item["recovered"] = json!(true);
                }
                emit(&json!({"type": "item.completed", "item": item}));
            }
            WorkerEvent::CallsRecovered(ids) => self.recovered().extend(ids.iter().cloned()),
            WorkerEvent::LoopDetected { reason } => emit(&json!({"type": "loop_detected",
                "message": format!("{reason}; the model is asked to answer in text")})),
            WorkerEvent::Retrying { reason } => emit(
                &json!({"type": "alert", "level": "warn", "message": format!("{reason}; trying again")}),
            ),
            WorkerEvent::ToolStarted { name, ctx } => {
                let id = self.next_id();
                self.running().insert(ctx.call_id.clone(), id.clone());
                emit(
                    &json!({"type": "item.started", "item": {"id": id, "kind": "tool_result",
                    "call_id": ctx.call_id, "batch_id": ctx.batch_id, "call_index": ctx.call_index, "name": name}}),
                );
            }
            WorkerEvent::Committed(Item::ToolResult {
                name,
                content,
                status,
                ctx,
            }) => {
                let started = self.running().remove(&ctx.call_id);
                let id = started.unwrap_or_else(|| self.next_id());
                let mut item = json!({"id": id});
                if let (Some(i), Value::Object(fields)) = (
                    item.as_object_mut(),
                    tool_result_json(name, content, status, ctx),
                ) {
                    i.extend(fields);
                }
                emit(&json!({"type": "item.completed", "item": item}));
            }
            WorkerEvent::Compacted(compaction) => emit(&compaction_json(&compaction.report)),
            WorkerEvent::Usage(usage) => {
                let mut event = json!({"type": "usage"});
                if let (Some(e), Ok(Value::Object(u))) =
                    (event.as_object_mut(), serde_json::to_value(usage))
                {
                    e.extend(u);
                }
                emit(&event);
            }
            WorkerEvent::RequestStarted { .. } | WorkerEvent::Committed(_) => {}
        }
    }
}

impl PlainPrinter {
    /// One compact line per tool call on stderr, when its result is in:
    /// `[tool] read_file: success {"path":"a.txt"} → first line of output`.
    pub fn worker_event(&self, event: &WorkerEvent) {
        match event {
            WorkerEvent::CommittedMany(items) => {
                for item in items {
                    self.worker_event(&WorkerEvent::Committed(item.clone()));
                }
            }
            WorkerEvent::Committed(Item::ToolCall { arguments, ctx, .. }) => {
                let args: String = arguments.chars().take(100).collect();
                self.pending_args().insert(ctx.call_id.clone(), args);
            }
            WorkerEvent::Committed(Item::ToolResult {
                name,
                content,
                status,
                ctx,
            }) => {
                let args = self.pending_args().remove(&ctx.call_id).unwrap_or_default();
                let first_line: String = content
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
                self.finish_line();
                eprintln!(
                    "[tool] {}: {status} {} → {}",
                    sanitize(name),
                    sanitize(&args),
                    sanitize(&first_line)
                );
            }
            WorkerEvent::Compacted(compaction) => {
                self.finish_line();
                eprintln!("{}", sanitize(&compaction_line(&compaction.report)));
            }
            WorkerEvent::LoopDetected { reason } => {
                self.finish_line();
                // The reason names a tool the model chose, maybe one that does not exist.
                eprintln!(
                    "warning: {}; the model is asked to answer in text",
                    sanitize(reason)
                );
            }
            WorkerEvent::Retrying { reason } => {
                self.finish_line();
                eprintln!("warning: {}; trying again", sanitize(reason));
            }
            _ => {}
        }
    }

    fn pending_args(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.call_args
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The model's checklist: `plan.updated` in JSON mode, otherwise on stderr as
/// `[plan] 1/3 done: why` and one `  [x] step` line per step.
pub fn plan(plan: &saki_tools::plan::Plan, restored: bool, json_mode: bool) {
    if json_mode {
        let mut event = json!({"type": "plan.updated"});
        if let (Some(e), Ok(Value::Object(p))) = (event.as_object_mut(), serde_json::to_value(plan))
        {
            e.extend(p);
        }
        if restored {
            event["restored"] = json!(true);
        }
        emit(&event);
        return;
    }
    let mut head = format!("[plan] {}", plan.summary());
    if restored {
        head.push_str(" (from the resumed session)");
    }
    if let Some(why) = &plan.explanation {
        head.push_str(&format!(": {why}"));
    }
    let mut out = std::io::stderr().lock();
    let _ = writeln!(out, "{}", sanitize(&head));
    for line in plan.checklist().lines() {
        let line = line.strip_prefix("- ").unwrap_or(line);
        let _ = writeln!(out, "  {}", sanitize(line));
    }
}

#[cfg(test)]
mod tests {
    use super::tool_result_json;
    use saki_llm_worker::{ToolExecutionContext, ToolResultStatus};
    use serde_json::json;

    fn ctx() -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: "c1".into(),
            batch_id: "batch_1".into(),
            call_index: 0,
        }
    }

    #[test]
    fn a_checked_write_carries_its_diagnostics() {
        let output = "1 replacement in main.py\n[lsp pyright: 1 error and 1 warning in main.py, new since the edit]\nmain.py:3:14 error: \"x\" is not defined (Pyright)\nmain.py:1:8 warning: unused import";
        let item = tool_result_json("edit", output, &ToolResultStatus::Success, &ctx());
        assert_eq!(item["output"], output);
        assert_eq!(
            item["diagnostics"],
            json!([
                {"path": "main.py", "line": 3, "column": 14, "severity": "error",
                 "message": "\"x\" is not defined", "source": "Pyright"},
                {"path": "main.py", "line": 1, "column": 8, "severity": "warning",
                 "message": "unused import"},
            ])
        );
        let clean = "created a.py (3 bytes)\n[lsp pyright: no new errors or warnings in a.py]";
        let item = tool_result_json("write_file", clean, &ToolResultStatus::Success, &ctx());
        assert_eq!(item["diagnostics"], json!([]));
    }

    #[test]
    fn no_answer_and_other_tools_carry_none() {
        let silent = "created a.py (3 bytes)\n[lsp pyright: no diagnostics for a.py within 5 s (the lsp tool's diagnostics asks again)]";
        let item = tool_result_json("write_file", silent, &ToolResultStatus::Success, &ctx());
        assert!(item.get("diagnostics").is_none(), "{item}");
        let read = "[lsp x: 1 error and 0 warnings in a.py]\na.py:1:1 error: e";
        let item = tool_result_json("read_file", read, &ToolResultStatus::Success, &ctx());
        assert!(item.get("diagnostics").is_none(), "{item}");
    }
}
