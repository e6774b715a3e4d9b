//! Running one batch of tool calls: arguments checked against the tool's schema, the loop
//! guard, the interceptors in call order, then the approved calls in parallel.

use super::{PendingCall, Worker, WorkerEvent};
use crate::image::{image_note, NamedImage};
use crate::interceptor::{ToolAction, ToolCallInfo, ToolResultInfo};
use crate::item::{Item, ToolResultStatus};
use crate::loop_guard::{call_key, repeat_result, LoopGuard};
use crate::schema::Checked;
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use saki_llm_client::CancellationToken;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// How a batch ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BatchEnd {
    Ran,
    /// The person cancelled it.
    Cancelled,
    /// An interceptor stopped the turn before one of its calls ([`ToolAction::Stop`]).
    Stopped(String),
}

impl BatchEnd {
    /// How the turn ends after this batch, if it ends here.
    pub(super) fn turn_status(self) -> Option<crate::TurnStatus> {
        match self {
            BatchEnd::Ran => None,
            BatchEnd::Cancelled => Some(crate::TurnStatus::Cancelled),
            BatchEnd::Stopped(reason) => Some(crate::TurnStatus::Stopped { reason }),
        }
    }
}

impl Worker {
    /// Runs one batch.
    pub(super) async fn run_batch(
        &mut self,
        calls: Vec<PendingCall>,
        cancel: &CancellationToken,
        guard: &mut LoopGuard,
    ) -> BatchEnd {
        let mut results: Vec<Option<(String, ToolResultStatus)>> = vec![None; calls.len()];
        let mut images: Vec<Vec<NamedImage>> = vec![Vec::new(); calls.len()];
        let mut infos: Vec<Option<ToolCallInfo>> = vec![None; calls.len()];
        // Validate and ask the interceptors, in call order, before anything runs.
        let mut inputs: Vec<Option<String>> = vec![None; calls.len()];
        let mut checks: Vec<Option<Checked>> = vec![None; calls.len()];
        // A call identical to an earlier one of this batch takes that one's result: run
        // twice in parallel, an append would append twice.
        let mut same_as: Vec<Option<usize>> = vec![None; calls.len()];
        // What an interceptor that replaced a call's arguments says first in its result.
        let mut notes: Vec<Option<String>> = vec![None; calls.len()];
        let mut keys: Vec<String> = calls
            .iter()
            .map(|c| call_key(&c.name, &c.arguments))
            .collect();
        let mut cancelled = false;
        let mut stopped: Option<String> = None;
        // One set for the whole batch, whatever arrives meanwhile.
        let tools = self.tools.snapshot();
        for (i, call) in calls.iter().enumerate() {
            if cancel.is_cancelled() {
                cancelled = true;
                break;
            }
            let checked = match tools.check_arguments(&call.name, &call.arguments) {
                Ok(checked) => checked,
                Err(e) => {
                    results[i] = Some((e.to_string(), ToolResultStatus::Error));
                    continue;
                }
            };
            // Calls that differ only in what the check repaired are the same call.
            keys[i] = call_key(&call.name, &checked.input.to_string());
            if let Some(first) = keys[..i].iter().position(|k| *k == keys[i]) {
                same_as[i] = Some(first);
                continue;
            }
            // Asked again for what this turn already answered: answer from that.
            if let Some(earlier) = guard.repeat_of(&keys[i]) {
                results[i] = Some(earlier);
                // Where small models are expected, asking again for a result it has means
                // the model recites rather than works: the next request asks for the
                // answer instead of waiting for the third time.
                if self.config.tool_call_recovery {
                    guard.stop_with(format!(
                        "`{}` was called again with the same arguments after its result \
                         was given",
                        call.name
                    ));
                }
                continue;
            }
            let mut checked = checked;
            let mut info = ToolCallInfo {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                input: checked.input.clone(),
                ctx: call.ctx.clone(),
            };
            for interceptor in &self.interceptors {
                // Cancel means stop, also while an approval is being asked.
                let action = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    action = interceptor.pre_tool_call(&info) => Some(action),
                };
                match action {
                    None => {
                        cancelled = true;
                        break;
                    }
                    Some(ToolAction::Deny(reason)) => {
                        results[i] = Some((format!("denied: {reason}"), ToolResultStatus::Denied));
                        break;
                    }
                    Some(ToolAction::Stop(reason)) => {
                        stopped = Some(reason);
                        break;
                    }
                    Some(ToolAction::Allow) => {}
                    Some(ToolAction::Replace { arguments, note }) => {
                        match tools.check_arguments(&call.name, &arguments) {
                            Ok(replaced) => {
                                info.arguments = arguments;
                                info.input = replaced.input.clone();
                                checked = replaced;
                                notes[i] = Some(note);
                            }
                            // An interceptor's own arguments that do not fit the tool:
                            // the model's call goes on as it was.
                            Err(e) => tracing::warn!(tool = %call.name, error = %e,
                                "replaced arguments do not fit the tool; kept the model's"),
                        }
                    }
                }
            }
            if cancelled || stopped.is_some() {
                break;
            }
            inputs[i] = Some(info.input.to_string());
            checks[i] = Some(checked);
            infos[i] = Some(info);
        }
        if cancelled {
            for (i, result) in results.iter_mut().enumerate() {
                if result.is_none() && same_as[i].is_none() {
                    *result = Some((
                        "cancelled by the user before it ran".to_owned(),
                        ToolResultStatus::Cancelled,
                    ));
                }
            }
        }
        if let Some(reason) = stopped {
            for call in &calls {
                self.commit(Item::ToolResult {
                    name: call.name.clone(),
                    content: format!("not run: {reason}"),
                    status: ToolResultStatus::Skipped,
                    ctx: call.ctx.clone(),
                });
            }
            return BatchEnd::Stopped(reason);
        }
        // Run the approved calls in parallel.
        let mut running = FuturesUnordered::new();
        for (i, call) in calls.iter().enumerate() {
            if results[i].is_some() || same_as[i].is_some() {
                continue;
            }
            self.emit(WorkerEvent::ToolStarted {
                name: call.name.clone(),
                ctx: call.ctx.clone(),
            });
            let tools = Arc::clone(&tools);
            // The checked (repaired) arguments, not the model's bytes.
            let args = inputs[i].take().unwrap_or_else(|| call.arguments.clone());
            let (name, ctx) = (call.name.clone(), call.ctx.clone());
            running.push(async move {
                // A panic in one tool is that call's error; the turn goes on.
                let call = AssertUnwindSafe(tools.call_tool(&name, &args, ctx)).catch_unwind();
                (i, call.await)
            });
        }
        while !running.is_empty() {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    cancelled = true;
                    break;
                }
                Some((i, result)) = running.next() => {
                    results[i] = Some(match result {
                        Ok(Ok(output)) => {
                            images[i] = output.images;
                            (output.content, ToolResultStatus::Success)
                        }
                        Ok(Err(e)) => (e.to_string(), ToolResultStatus::Error),
                        Err(panic) => (panicked(panic.as_ref()), ToolResultStatus::Error),
                    });
                }
            }
        }
        // Dropping the unfinished futures stops them (tools clean up on drop).
        drop(running);
        for (i, first) in same_as.iter().enumerate() {
            if let Some((content, status)) = first.and_then(|f| results[f].clone()) {
                results[i] = Some((repeat_result(&content), status));
            }
        }
        for (i, call) in calls.iter().enumerate() {
            let (mut content, status) = results[i].take().unwrap_or_else(|| {
                (
                    "cancelled by the user while running".to_owned(),
                    ToolResultStatus::Cancelled,
                )
            });
            if let Some(checked) = &checks[i] {
                content = checked.annotate(content);
            }
            if let Some(note) = notes[i].take() {
                content = format!("{note}\n{content}");
            }
            let read_only = tools.get(&call.name).is_some_and(|t| t.read_only());
            guard.record(keys[i].clone(), status, &content, read_only);
            // After a cancel no hook runs: cancel means stop.
            if let Some(info) = infos[i].take().filter(|_| !cancelled) {
                let result = ToolResultInfo {
                    call: info,
                    content: content.clone(),
                    status,
                };
                for interceptor in &self.interceptors {
                    interceptor.post_tool_call(&result).await;
                }
            }
            let images = std::mem::take(&mut images[i]);
            let vision = self.config.vision;
            if !vision {
                // Said in the result itself: nothing follows it that the model could see.
                for shown in &images {
                    content.push('\n');
                    content.push_str(&image_note(&shown.path, &shown.image, false));
                }
            }
            self.commit(Item::ToolResult {
                name: call.name.clone(),
                content,
                status,
                ctx: call.ctx.clone(),
            });
            for shown in images.into_iter().filter(|_| vision) {
                self.commit(Item::Image {
                    path: shown.path,
                    image: shown.image,
                    call_id: Some(call.ctx.call_id.clone()),
                });
            }
        }
        if cancelled {
            BatchEnd::Cancelled
        } else {
            BatchEnd::Ran
        }
    }
}

/// The result of a call whose tool panicked.
fn panicked(payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("no message");
    tracing::error!(message, "a tool panicked");
    format!("the tool failed internally ({message}); nothing more is known about its effect")
}
