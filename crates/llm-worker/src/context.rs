//! The Worker's calls into its [`ContextGuard`]: before a request (or by hand) and after a
//! turn. An applied edit is announced (`Compacted`) before anything is sent from the new
//! history, so the session log records it first: history first, also for compaction.

use super::{Worker, WorkerEvent};
use crate::compaction::{Compaction, CompactionTrigger, ContextView};
use saki_llm_client::CancellationToken;

/// Which of the guard's questions to ask.
enum Ask {
    Check(CompactionTrigger),
    AfterTurn,
}

impl Worker {
    /// Runs the context guard now. Auto: only compacts when history is over the
    /// threshold; manual: the person asked. An applied compaction is committed (observers
    /// see `Compacted` with its edit) before this returns.
    pub async fn compact(
        &mut self,
        trigger: CompactionTrigger,
        cancel: &CancellationToken,
    ) -> Option<Compaction> {
        self.consult(Ask::Check(trigger), cancel).await
    }

    /// The guard's upkeep after a turn (pruning old tool output), committed like
    /// [`Worker::compact`].
    pub(super) async fn after_turn(&mut self, cancel: &CancellationToken) -> Option<Compaction> {
        self.consult(Ask::AfterTurn, cancel).await
    }

    async fn consult(&mut self, ask: Ask, cancel: &CancellationToken) -> Option<Compaction> {
        let guard = self.guard.clone()?;
        let tools = self.tools.snapshot().definitions();
        let view = ContextView {
            history: &self.history,
            system_prompt: self.config.system_prompt.as_deref(),
            tools: &tools,
            last_report: self.last_report,
            cancel,
        };
        let mut compaction = match ask {
            Ask::Check(trigger) => guard.check(view, trigger).await?,
            Ask::AfterTurn => guard.after_turn(view).await?,
        };
        if let Some(edit) = &compaction.edit {
            if let Err(e) = edit.apply(&mut self.history) {
                tracing::warn!(error = %e, "compaction edit refused");
                compaction.edit = None;
            } else {
                // The report no longer describes the new history's prefix.
                self.last_report = None;
            }
        }
        self.emit(WorkerEvent::Compacted(compaction.clone()));
        Some(compaction)
    }
}
