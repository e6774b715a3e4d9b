//! Batch ids that are unique within a session: one counter shared by the Worker and every
//! speculation of the session (a clone of [`BatchIds`] is the same counter), raised past
//! the ids a resumed history or accepted items already hold.
//!
//! A front end groups tool rows by batch id and `--json` and the session log carry them,
//! so two batches must never share one: not after `--resume`, not across speculations,
//! not between a speculation and the turn that runs after it was discarded (a discarded
//! speculation's numbers are simply skipped).

use crate::item::Item;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The prefix every batch id carries; the number after it counts up within a session.
pub const BATCH_PREFIX: &str = "batch_";

/// A session's batch-id counter. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct BatchIds(Arc<AtomicU64>);

impl BatchIds {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next id (`batch_1`, `batch_2`, …); never one handed out before or observed.
    pub fn next(&self) -> String {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{BATCH_PREFIX}{n}")
    }

    /// Raises the counter past every `batch_N` id in `items` (a resumed history, items
    /// committed from elsewhere). Ids of another form (older sessions' `speculation_N`)
    /// cannot collide with `batch_N` and are left alone.
    pub fn observe(&self, items: &[Item]) {
        let highest = items
            .iter()
            .filter_map(|item| match item {
                Item::ToolCall { ctx, .. } | Item::ToolResult { ctx, .. } => {
                    ctx.batch_id.strip_prefix(BATCH_PREFIX)?.parse::<u64>().ok()
                }
                _ => None,
            })
            .max();
        if let Some(highest) = highest {
            self.0.fetch_max(highest, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolExecutionContext;

    fn call(batch: &str) -> Item {
        Item::ToolCall {
            name: "ls".into(),
            arguments: "{}".into(),
            signature: None,
            ctx: ToolExecutionContext {
                call_id: "c".into(),
                batch_id: batch.into(),
                call_index: 0,
            },
        }
    }

    #[test]
    fn ids_count_up_past_what_was_observed_and_clones_share_the_counter() {
        let ids = BatchIds::new();
        assert_eq!(ids.next(), "batch_1");
        ids.observe(&[call("batch_7"), call("speculation_40"), call("batch_x")]);
        let shared = ids.clone();
        assert_eq!(shared.next(), "batch_8");
        assert_eq!(ids.next(), "batch_9");
        // Observing older ids never moves the counter back.
        ids.observe(&[call("batch_2")]);
        assert_eq!(ids.next(), "batch_10");
    }
}
