//! The Worker's side of context compaction: the [`ContextGuard`] it consults before every
//! model request and after every turn, and the [`HistoryEdit`] a compaction makes. The
//! policy (when, what to prune, how to summarize) lives above, in `saki-pod`; the Worker
//! only applies edits, so a session log can replay the same edit on load and get the same
//! history.

use crate::item::Item;
use saki_llm_client::{CancellationToken, ToolDefinition};
use serde::{Deserialize, Serialize};

/// Who asked for a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The overflow check before a request, or the prune after a turn.
    Auto,
    /// The person (`saki compact`, `/compress`).
    Manual,
}

impl CompactionTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionTrigger::Auto => "auto",
            CompactionTrigger::Manual => "manual",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStatus {
    /// Old history was replaced by a summary.
    Compressed,
    /// Old tool outputs were cleared; that was enough.
    Pruned,
    /// Nothing could be made smaller.
    Noop,
    /// The summary did not make the history smaller; it was discarded.
    FailedInflated,
    /// The model answered with an empty summary; it was discarded.
    FailedEmptySummary,
    /// The summary lacked its goal or its plan, also when asked again; it was discarded.
    FailedMissingSections,
    /// The summary request failed; nothing changed.
    FailedRequest,
    /// A PreCompress hook refused; nothing changed.
    Blocked,
}

impl CompactionStatus {
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            CompactionStatus::FailedInflated
                | CompactionStatus::FailedEmptySummary
                | CompactionStatus::FailedMissingSections
                | CompactionStatus::FailedRequest
        )
    }
}

/// A change to the model's view of history. Applied in order: pruned contents first,
/// then `history[..summarized]` is replaced by `prefix`. Raw items stay in the session
/// log; the edit is recorded after them and replayed on load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryEdit {
    /// Tool results (by index) whose content the model now sees replaced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<(usize, String)>,
    /// How many leading items the prefix replaces (0: none).
    #[serde(default)]
    pub summarized: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefix: Vec<Item>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("compaction edit does not fit the history: {0}")]
pub struct EditMismatch(String);

impl HistoryEdit {
    pub fn is_empty(&self) -> bool {
        self.pruned.is_empty() && self.summarized == 0 && self.prefix.is_empty()
    }

    /// Applies the edit. Refuses (leaving history untouched) when it names items that do
    /// not exist or are not tool results: a log that does not match is not guessed at.
    pub fn apply(&self, history: &mut Vec<Item>) -> Result<(), EditMismatch> {
        if self.summarized > history.len() {
            return Err(EditMismatch(format!(
                "summarizes {} items of {}",
                self.summarized,
                history.len()
            )));
        }
        for (i, _) in &self.pruned {
            if !matches!(history.get(*i), Some(Item::ToolResult { .. })) {
                return Err(EditMismatch(format!("item {i} is not a tool result")));
            }
        }
        for (i, replacement) in &self.pruned {
            if let Some(Item::ToolResult { content, .. }) = history.get_mut(*i) {
                content.clone_from(replacement);
            }
        }
        history.splice(..self.summarized, self.prefix.iter().cloned());
        Ok(())
    }
}

/// What a compaction did, for the person: one `compaction` event or line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionReport {
    pub trigger: CompactionTrigger,
    pub status: CompactionStatus,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Tool outputs cleared.
    #[serde(default)]
    pub pruned: usize,
    /// Items replaced by the summary.
    #[serde(default)]
    pub summarized: usize,
    /// Files re-read into the history after the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_read: Vec<String>,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A finished compaction: the report, and the edit when history changes. A failed summary
/// may still carry an edit: the prune planned with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    pub report: CompactionReport,
    pub edit: Option<HistoryEdit>,
}

/// What the guard sees before a request.
#[derive(Debug, Clone, Copy)]
pub struct ContextView<'a> {
    pub history: &'a [Item],
    pub system_prompt: Option<&'a str>,
    pub tools: &'a [ToolDefinition],
    /// `(n, tokens)`: the provider reported `tokens` prompt tokens for a request built
    /// from the first `n` items of `history`.
    pub last_report: Option<(usize, u64)>,
    /// Cancels a summary request in flight (the person interrupted the turn).
    pub cancel: &'a CancellationToken,
}

/// Consulted before every model request (including between the tool rounds of a turn)
/// and once after every turn.
#[async_trait::async_trait]
pub trait ContextGuard: Send + Sync {
    /// `Some` when a compaction ran or was attempted (report it); `None` when the history
    /// fits and nothing was done.
    async fn check(&self, view: ContextView<'_>, trigger: CompactionTrigger) -> Option<Compaction>;

    /// After a turn ended: cheap upkeep that need not wait for the window to fill (old
    /// tool output is pruned as soon as that frees enough). `None` when nothing was done.
    async fn after_turn(&self, _view: ContextView<'_>) -> Option<Compaction> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::ToolResultStatus;
    use crate::tool::ToolExecutionContext;

    fn result(content: &str) -> Item {
        Item::ToolResult {
            name: "read_file".into(),
            content: content.into(),
            status: ToolResultStatus::Success,
            ctx: ToolExecutionContext {
                call_id: "c".into(),
                batch_id: "b".into(),
                call_index: 0,
            },
        }
    }

    #[test]
    fn apply_prunes_then_replaces_the_prefix() {
        let mut history = vec![Item::user("a"), result("big"), Item::user("b"), result("x")];
        let edit = HistoryEdit {
            pruned: vec![(3, "cleared".into())],
            summarized: 2,
            prefix: vec![Item::system("summary")],
        };
        edit.apply(&mut history).unwrap();
        assert_eq!(
            history,
            vec![Item::system("summary"), Item::user("b"), result("cleared")]
        );
    }

    #[test]
    fn a_mismatched_edit_leaves_history_alone() {
        let mut history = vec![Item::user("a")];
        let before = history.clone();
        let prune_user = HistoryEdit {
            pruned: vec![(0, "x".into())],
            ..HistoryEdit::default()
        };
        assert!(prune_user.apply(&mut history).is_err());
        let too_long = HistoryEdit {
            summarized: 5,
            ..HistoryEdit::default()
        };
        assert!(too_long.apply(&mut history).is_err());
        assert_eq!(history, before);
    }

    #[test]
    fn an_edit_round_trips_through_json() {
        let edit = HistoryEdit {
            pruned: vec![(1, "c".into())],
            summarized: 1,
            prefix: vec![Item::system("s")],
        };
        let json = serde_json::to_string(&edit).unwrap();
        assert_eq!(serde_json::from_str::<HistoryEdit>(&json).unwrap(), edit);
    }
}
