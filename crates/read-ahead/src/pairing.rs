//! The check every speculated history passes before it is inserted: each tool call is
//! answered, in order, by exactly one result with its id, and no result stands alone.

use saki_llm_worker::Item;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairingError {
    #[error("tool call {0} has no result")]
    Unanswered(String),
    #[error("tool result {0} answers no open call (or answers out of order)")]
    Orphan(String),
}

/// Validates `items`: every `ToolCall` of a response is followed (after the response's
/// other items) by one `ToolResult` per call, in call order, before anything else.
pub fn ensure_tool_result_pairing(items: &[Item]) -> Result<(), PairingError> {
    let mut open: std::collections::VecDeque<&str> = std::collections::VecDeque::new();
    for item in items {
        match item {
            Item::ToolCall { ctx, .. } => open.push_back(&ctx.call_id),
            Item::ToolResult { ctx, .. } => match open.pop_front() {
                Some(id) if id == ctx.call_id => {}
                _ => return Err(PairingError::Orphan(ctx.call_id.clone())),
            },
            // Text or thinking of the same response may sit between calls; anything
            // after results started, while calls are still open, breaks the pairing.
            Item::AssistantText { .. } | Item::Thinking { .. } => {}
            // An image a call returned sits among the results.
            Item::Image {
                call_id: Some(_), ..
            } => {}
            Item::User { .. } | Item::System { .. } | Item::Image { call_id: None, .. } => {
                if let Some(id) = open.front() {
                    return Err(PairingError::Unanswered((*id).to_owned()));
                }
            }
        }
    }
    match open.front() {
        Some(id) => Err(PairingError::Unanswered((*id).to_owned())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saki_llm_worker::{ToolExecutionContext, ToolResultStatus};

    fn ctx(id: &str, i: usize) -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: id.into(),
            batch_id: "b".into(),
            call_index: i,
        }
    }
    fn call(id: &str, i: usize) -> Item {
        Item::ToolCall {
            name: "read_file".into(),
            arguments: "{}".into(),
            signature: None,
            ctx: ctx(id, i),
        }
    }
    fn result(id: &str, i: usize) -> Item {
        Item::ToolResult {
            name: "read_file".into(),
            content: "x".into(),
            status: ToolResultStatus::Success,
            ctx: ctx(id, i),
        }
    }

    #[test]
    fn paired_calls_pass() {
        let items = [
            Item::user("go"),
            Item::AssistantText { text: "ok".into() },
            call("a", 0),
            call("b", 1),
            result("a", 0),
            result("b", 1),
            Item::AssistantText {
                text: "done".into(),
            },
        ];
        assert_eq!(ensure_tool_result_pairing(&items), Ok(()));
    }

    #[test]
    fn missing_swapped_and_orphan_results_fail() {
        assert_eq!(
            ensure_tool_result_pairing(&[call("a", 0)]),
            Err(PairingError::Unanswered("a".into()))
        );
        assert_eq!(
            ensure_tool_result_pairing(&[
                call("a", 0),
                call("b", 1),
                result("b", 1),
                result("a", 0)
            ]),
            Err(PairingError::Orphan("b".into()))
        );
        assert_eq!(
            ensure_tool_result_pairing(&[result("z", 0)]),
            Err(PairingError::Orphan("z".into()))
        );
        assert_eq!(
            ensure_tool_result_pairing(&[call("a", 0), Item::user("x"), result("a", 0)]),
            Err(PairingError::Unanswered("a".into()))
        );
    }
}
