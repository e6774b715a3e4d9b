//! Tool calls a killed session left without a result: each gets one, saying what saki can
//! know about it, so the history is well-formed and the model does not repeat blindly a
//! call whose effect may already be there.

use saki_llm_worker::{Item, ToolCallInfo, ToolExecutionContext, ToolResultStatus};
use saki_tools::{assess, CallClass, Workspace};

/// A read-only call (by the approval policy's own classification) changed nothing.
pub const NOTHING_CHANGED: &str =
    "did not finish: the session ended while it ran; this call changes nothing, so nothing \
     was changed";
/// Anything else may have done some or all of its work.
pub const MAY_HAVE_COMPLETED: &str =
    "may have completed: the session ended while it ran; check its effect before repeating it";

/// Gives every tool call without a result a synthetic one, so the history is well-formed
/// for the next request, and returns the items added. What the result says depends on
/// what can be known in `workspace` (the session's; `None` when it is gone): a read-only
/// call changed nothing; a `write_file` whose target holds exactly the content it meant to
/// write completed; any other call may have completed.
pub fn close_dangling_calls(items: &mut Vec<Item>, workspace: Option<&Workspace>) -> Vec<Item> {
    let answered: std::collections::HashSet<&str> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult { ctx, .. } => Some(ctx.call_id.as_str()),
            _ => None,
        })
        .collect();
    let added: Vec<Item> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } if !answered.contains(ctx.call_id.as_str()) => {
                let (content, status) = what_is_known(name, arguments, ctx, workspace);
                Some(Item::ToolResult {
                    name: name.clone(),
                    content,
                    status,
                    ctx: ctx.clone(),
                })
            }
            _ => None,
        })
        .collect();
    items.extend(added.iter().cloned());
    added
}

fn what_is_known(
    name: &str,
    arguments: &str,
    ctx: &ToolExecutionContext,
    workspace: Option<&Workspace>,
) -> (String, ToolResultStatus) {
    let may_have = || (MAY_HAVE_COMPLETED.to_owned(), ToolResultStatus::Cancelled);
    let (Some(workspace), Ok(input)) = (workspace, serde_json::from_str(arguments)) else {
        return may_have();
    };
    let call = ToolCallInfo {
        name: name.to_owned(),
        arguments: arguments.to_owned(),
        input,
        ctx: ctx.clone(),
    };
    if name == "write_file" {
        if let Some(done) = write_landed(workspace, &call.input) {
            return (done, ToolResultStatus::Success);
        }
    }
    match assess(&call, workspace).class {
        CallClass::ReadOnly => (NOTHING_CHANGED.to_owned(), ToolResultStatus::Cancelled),
        _ => may_have(),
    }
}

/// The result of a `write_file` whose target holds exactly what it meant to write.
fn write_landed(workspace: &Workspace, input: &serde_json::Value) -> Option<String> {
    let path = input.get("path")?.as_str()?;
    let content = input.get("content")?.as_str()?;
    let target = workspace.resolve_for_write(path).ok()?;
    let now = saki_tools::common::read_regular(&target).ok()?;
    (now == content.as_bytes()).then(|| {
        format!(
            "completed: {path} holds exactly the {} bytes this call wrote (the session ended \
             before its result was recorded)",
            content.len()
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, args: serde_json::Value) -> Item {
        Item::ToolCall {
            name: name.into(),
            arguments: args.to_string(),
            signature: None,
            ctx: ToolExecutionContext {
                call_id: id.into(),
                batch_id: "b".into(),
                call_index: 0,
            },
        }
    }

    fn result_of<'a>(items: &'a [Item], id: &str) -> (&'a str, ToolResultStatus) {
        items
            .iter()
            .find_map(|i| match i {
                Item::ToolResult {
                    content,
                    status,
                    ctx,
                    ..
                } if ctx.call_id == id => Some((content.as_str(), *status)),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn each_dangling_call_says_what_is_known_of_its_effect() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("done.txt"), "new body").unwrap();
        std::fs::write(dir.path().join("other.txt"), "someone else's").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let mut items = vec![
            Item::user("go"),
            call("read", "read_file", json!({"path": "done.txt"})),
            call("grep", "grep", json!({"pattern": "x"})),
            call("cat", "shell", json!({"command": "cat done.txt"})),
            call(
                "done",
                "write_file",
                json!({"path": "done.txt", "content": "new body"}),
            ),
            call(
                "other",
                "write_file",
                json!({"path": "other.txt", "content": "mine"}),
            ),
            call(
                "missing",
                "write_file",
                json!({"path": "nope.txt", "content": "x"}),
            ),
            call(
                "edit",
                "edit",
                json!({"path": "done.txt", "old_string": "a", "new_string": "b"}),
            ),
            call("rm", "shell", json!({"command": "rm other.txt"})),
            call("mcp", "some_server_tool", json!({})),
            call("broken", "write_file", "not json".into()),
        ];
        let added = close_dangling_calls(&mut items, Some(&ws));
        assert_eq!(added.len(), 10);
        for id in ["read", "grep", "cat"] {
            assert_eq!(
                result_of(&items, id),
                (NOTHING_CHANGED, ToolResultStatus::Cancelled),
                "{id}"
            );
        }
        let (done, status) = result_of(&items, "done");
        assert_eq!(status, ToolResultStatus::Success);
        assert!(
            done.starts_with("completed: done.txt holds exactly the 8 bytes"),
            "{done}"
        );
        for id in ["other", "missing", "edit", "rm", "mcp", "broken"] {
            assert_eq!(
                result_of(&items, id),
                (MAY_HAVE_COMPLETED, ToolResultStatus::Cancelled),
                "{id}"
            );
        }
        // Without the workspace nothing can be known.
        let mut again = vec![call("read", "read_file", json!({"path": "done.txt"}))];
        close_dangling_calls(&mut again, None);
        assert_eq!(result_of(&again, "read").0, MAY_HAVE_COMPLETED);
    }
}
