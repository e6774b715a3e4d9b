//! Adapters from the engine's parts to its events: streamed blocks from the Timeline,
//! the Worker's reports (and the session log) from its observer, and approval prompts.

use crate::protocol::{ApprovalRequest, EngineEvent};
use crate::recorder::Recorder;
use saki_llm_client::WireApi;
use saki_llm_worker::{
    Handler, TextBlockEvent, TextBlockKind, ThinkingBlockEvent, ThinkingBlockKind, TokenCount,
    WorkerEvent,
};
use saki_tools::grants::grant_label;
use saki_tools::{Approval, ApprovalQuestion, Approver};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc::UnboundedSender, oneshot};

pub type UiSender = UnboundedSender<EngineEvent>;

/// Forwards streamed text and thinking blocks (start, deltas, stop).
#[derive(Clone)]
pub struct StreamForwarder(pub UiSender);

impl Handler<TextBlockKind> for StreamForwarder {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &TextBlockEvent) {
        let _ = self.0.send(EngineEvent::Text(event.clone()));
    }
}

impl Handler<ThinkingBlockKind> for StreamForwarder {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &ThinkingBlockEvent) {
        let _ = self.0.send(EngineEvent::Thinking(event.clone()));
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

/// The main turns' tokens this session (`/stats` sets them beside the background's).
pub type MainUsage = Arc<Mutex<TokenCount>>;

/// Records every committed item, keeps the context gauge and the main turns' tokens, and
/// forwards what the Worker reports.
pub fn observer(
    ui: UiSender,
    slot: RecorderSlot,
    tokens: Arc<AtomicU64>,
    main_usage: MainUsage,
    wire_api: WireApi,
) -> saki_llm_worker::Observer {
    let plans = crate::plan::PlanTracker::default();
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
        let used = match event {
            WorkerEvent::Usage(usage) => usage
                .prompt_tokens(wire_api)
                .map(|prompt| prompt + usage.output_tokens.unwrap_or(0)),
            WorkerEvent::Compacted(compaction) if compaction.edit.is_some() => {
                Some(compaction.report.tokens_after)
            }
            _ => None,
        };
        let _ = ui.send(EngineEvent::Worker(event.clone()));
        if let Some(plan) = plans.observe(event) {
            let _ = ui.send(EngineEvent::Plan {
                plan,
                restored: false,
            });
        }
        if let Some(used) = used {
            tokens.store(used, Ordering::Relaxed);
            let _ = ui.send(EngineEvent::Tokens(used));
        }
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
