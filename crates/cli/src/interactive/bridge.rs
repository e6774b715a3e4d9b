//! Adapters from the engine's parts to UI events: streamed deltas from the Timeline,
//! committed items from the Worker's observer, and approval prompts.

use crate::session::Recorder;
use saki_llm_client::WireApi;
use saki_llm_worker::{
    Handler, TextBlockEvent, TextBlockKind, ThinkingBlockEvent, ThinkingBlockKind, TokenCount,
    WorkerEvent,
};
use saki_tools::grants::grant_label;
use saki_tools::{Approval, ApprovalQuestion, Approver};
use saki_tui::{ApprovalRequest, EngineEvent, Level};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc::UnboundedSender, oneshot};

pub type UiSender = UnboundedSender<EngineEvent>;

/// Forwards streamed text and thinking deltas to the UI.
#[derive(Clone)]
pub struct StreamForwarder(pub UiSender);

impl Handler<TextBlockKind> for StreamForwarder {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &TextBlockEvent) {
        if let TextBlockEvent::Delta(text) = event {
            let _ = self.0.send(EngineEvent::TextDelta(text.clone()));
        }
    }
}

impl Handler<ThinkingBlockKind> for StreamForwarder {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &ThinkingBlockEvent) {
        if let ThinkingBlockEvent::Delta(text) = event {
            let _ = self.0.send(EngineEvent::ThinkingDelta(text.clone()));
        }
    }
}

/// The session log of the current session; empty until the first prompt creates it
/// (so opening and quitting saki leaves no empty session behind).
pub type RecorderSlot = Arc<Mutex<Option<Recorder>>>;

pub fn recorder(slot: &RecorderSlot) -> Option<Recorder> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

pub fn set_recorder(slot: &RecorderSlot, recorder: Option<Recorder>) {
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = recorder;
}

/// The Worker waits on the current session's log (none yet: nothing to wait for).
pub struct SlotDurability(pub RecorderSlot);

#[async_trait::async_trait]
impl saki_llm_worker::Durability for SlotDurability {
    async fn flushed(&self) {
        if let Some(recorder) = recorder(&self.0) {
            recorder.flushed().await;
        }
    }
}

/// Records every committed item and tells the UI. Accepted speculations are shown by
/// the engine as one `Accepted` event, so `CommittedMany` is only recorded here.
/// The main turns' tokens this session (`/stats` sets them beside the background's).
pub type MainUsage = Arc<Mutex<TokenCount>>;

pub fn observer(
    ui: UiSender,
    slot: RecorderSlot,
    tokens: Arc<AtomicU64>,
    main_usage: MainUsage,
    wire_api: WireApi,
) -> saki_llm_worker::Observer {
    Arc::new(move |event: &WorkerEvent| {
        if let WorkerEvent::Usage(usage) = event {
            main_usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add_report(usage, wire_api);
        }
        if let Some(recorder) = recorder(&slot) {
            recorder.observe(event);
        }
        let _ = match event {
            WorkerEvent::Committed(item) => ui.send(EngineEvent::Committed(item.clone())),
            WorkerEvent::ToolStarted { ctx, .. } => ui.send(EngineEvent::ToolStarted(ctx.clone())),
            WorkerEvent::Usage(usage) => match usage.prompt_tokens(wire_api) {
                Some(prompt) => {
                    let used = prompt + usage.output_tokens.unwrap_or(0);
                    tokens.store(used, Ordering::Relaxed);
                    ui.send(EngineEvent::Tokens(used))
                }
                None => Ok(()),
            },
            WorkerEvent::Compacted(compaction) => {
                if compaction.edit.is_some() {
                    let after = compaction.report.tokens_after;
                    tokens.store(after, Ordering::Relaxed);
                    let _ = ui.send(EngineEvent::Tokens(after));
                }
                let level = if compaction.report.status.is_failure() {
                    Level::Warn
                } else {
                    Level::Info
                };
                ui.send(EngineEvent::Alert {
                    level,
                    message: crate::output::compaction_line(&compaction.report),
                })
            }
            WorkerEvent::LoopDetected { reason } => ui.send(EngineEvent::Alert {
                level: Level::Warn,
                message: format!("{reason}; the model is asked to answer in text"),
            }),
            WorkerEvent::Retrying { reason } => ui.send(EngineEvent::Alert {
                level: Level::Warn,
                message: format!("{reason}; trying again"),
            }),
            WorkerEvent::CommittedMany(_)
            | WorkerEvent::RequestStarted { .. }
            | WorkerEvent::CallsRecovered(_) => Ok(()),
        };
    })
}

/// Asks the person in the UI.
pub struct UiApprover(pub UiSender);

#[async_trait::async_trait]
impl Approver for UiApprover {
    async fn approve(&self, question: ApprovalQuestion<'_>) -> Approval {
        let (reply, answer) = oneshot::channel();
        let request = ApprovalRequest {
            call: question.call.clone(),
            mode: question.mode,
            grant_label: grant_label(question.call).filter(|_| question.assessment.grantable),
            why: question.assessment.reason.clone(),
            reply,
        };
        if self.0.send(EngineEvent::Approval(request)).is_err() {
            return Approval::Deny("the approval prompt could not be shown".into());
        }
        answer
            .await
            .unwrap_or_else(|_| Approval::Deny("the approval prompt was closed".into()))
    }
}
