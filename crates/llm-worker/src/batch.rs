//! Running one batch of tool calls: arguments checked against the tool's schema, the loop
//! guard, the interceptors in call order, then the approved calls in parallel.

use super::{PendingCall, Worker, WorkerEvent};
use crate::interceptor::{ToolAction, ToolCallInfo, ToolResultInfo};
use crate::item::{Item, ToolResultStatus};
use crate::loop_guard::{call_key, LoopGuard};
use futures::stream::{FuturesUnordered, StreamExt};
use saki_llm_client::CancellationToken;
use std::sync::Arc;

impl Worker {
    /// The call's arguments parsed and checked against its tool's schema, with a note per
    /// repair; `Err` is the result the model gets instead (invalid JSON, unknown tool, a
    /// field that cannot be repaired).
    fn checked_input(
        &self,
        call: &PendingCall,
    ) -> Result<(serde_json::Value, Vec<String>), String> {
        let input = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
            Ok(v) => v,
            Err(e) => {
                return Err(format!(
                    "invalid JSON arguments for `{}`: {e}. The arguments were: {}",
                    call.name, call.arguments
                ))
            }
        };
        let Some(tool) = self.tools.get(&call.name) else {
            return Err(format!(
                "unknown tool `{}`; available tools: {}",
                call.name,
                self.tools.names().join(", ")
            ));
        };
        if !input.is_object() {
            return Err(format!(
                "invalid arguments for `{}`: expected a JSON object, got {}",
                call.name, call.arguments
            ));
        }
        crate::schema::check(&tool.input_schema(), input)
            .map(|checked| (checked.input, checked.notes))
            .map_err(|e| format!("invalid arguments for `{}`: {e}", call.name))
    }

    /// Runs one batch. Returns true when the person cancelled it.
    pub(super) async fn run_batch(
        &mut self,
        calls: Vec<PendingCall>,
        cancel: &CancellationToken,
        guard: &mut LoopGuard,
    ) -> bool {
        let mut results: Vec<Option<(String, ToolResultStatus)>> = vec![None; calls.len()];
        let mut infos: Vec<Option<ToolCallInfo>> = vec![None; calls.len()];
        // Validate and ask the interceptors, in call order, before anything runs.
        let mut inputs: Vec<Option<String>> = vec![None; calls.len()];
        let mut notes: Vec<Vec<String>> = vec![Vec::new(); calls.len()];
        let keys: Vec<String> = calls
            .iter()
            .map(|c| call_key(&c.name, &c.arguments))
            .collect();
        for (i, call) in calls.iter().enumerate() {
            let (input, repairs) = match self.checked_input(call) {
                Ok(checked) => checked,
                Err(message) => {
                    results[i] = Some((message, ToolResultStatus::Error));
                    continue;
                }
            };
            // Asked again for what this turn already answered: answer from that.
            if let Some(earlier) = guard.repeat_of(&keys[i]) {
                results[i] = Some(earlier);
                continue;
            }
            let info = ToolCallInfo {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                input,
                ctx: call.ctx.clone(),
            };
            for interceptor in &self.interceptors {
                if let ToolAction::Deny(reason) = interceptor.pre_tool_call(&info).await {
                    results[i] = Some((format!("denied: {reason}"), ToolResultStatus::Denied));
                    break;
                }
            }
            inputs[i] = Some(info.input.to_string());
            notes[i] = repairs;
            infos[i] = Some(info);
        }
        // Run the approved calls in parallel.
        let mut running = FuturesUnordered::new();
        for (i, call) in calls.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            self.emit(WorkerEvent::ToolStarted {
                name: call.name.clone(),
                ctx: call.ctx.clone(),
            });
            let tools = Arc::clone(&self.tools);
            // The checked (repaired) arguments, not the model's bytes.
            let args = inputs[i].take().unwrap_or_else(|| call.arguments.clone());
            let (name, ctx) = (call.name.clone(), call.ctx.clone());
            running.push(async move { (i, tools.call_tool(&name, &args, ctx).await) });
        }
        let mut cancelled = false;
        while !running.is_empty() {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    cancelled = true;
                    break;
                }
                Some((i, result)) = running.next() => {
                    results[i] = Some(match result {
                        Ok(output) => (output.content, ToolResultStatus::Success),
                        Err(e) => (e.to_string(), ToolResultStatus::Error),
                    });
                }
            }
        }
        // Dropping the unfinished futures stops them (tools clean up on drop).
        drop(running);
        for (i, call) in calls.iter().enumerate() {
            let (mut content, status) = results[i].take().unwrap_or_else(|| {
                (
                    "cancelled by the user while running".to_owned(),
                    ToolResultStatus::Cancelled,
                )
            });
            if !notes[i].is_empty() {
                content = format!("[{}]\n{content}", notes[i].join("; "));
            }
            guard.record(keys[i].clone(), status, &content);
            if let Some(info) = infos[i].take() {
                let result = ToolResultInfo {
                    call: info,
                    content: content.clone(),
                    status,
                };
                for interceptor in &self.interceptors {
                    interceptor.post_tool_call(&result).await;
                }
            }
            self.commit(Item::ToolResult {
                name: call.name.clone(),
                content,
                status,
                ctx: call.ctx.clone(),
            });
        }
        cancelled
    }
}
