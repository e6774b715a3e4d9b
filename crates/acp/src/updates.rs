//! What the engine reports, as ACP `session/update`s: tool calls with their kind, a
//! title, the files they touch and edits as diffs; results; the plan; a session's
//! history replayed for `session/load`. Pure functions, so every mapping is tested
//! without a connection.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan as AcpPlan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionMode, SessionModeState, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use saki_engine::{ApprovalMode, Item, Plan, StepStatus, ToolResultStatus};
use serde_json::Value;
use std::path::Path;

/// What kind of thing a tool does, for the editor's icon.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "skill" => ToolKind::Read,
        "write_file" | "edit" | "remember" => ToolKind::Edit,
        "delete_file" => ToolKind::Delete,
        "ls" | "glob" | "grep" | "lsp" => ToolKind::Search,
        "shell" | "shell_output" | "shell_kill" => ToolKind::Execute,
        "web_fetch" => ToolKind::Fetch,
        "update_plan" => ToolKind::Think,
        "exit_plan_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// A one-line title for a call: what it does and to what.
pub fn tool_title(name: &str, input: &Value) -> String {
    let arg = |key: &str| input.get(key).and_then(Value::as_str).map(one_line);
    let titled = match name {
        "read_file" => arg("path").map(|p| format!("Read {p}")),
        "write_file" => arg("path").map(|p| format!("Write {p}")),
        "edit" => arg("path").map(|p| format!("Edit {p}")),
        "delete_file" => arg("path").map(|p| format!("Delete {p}")),
        "ls" => Some(format!(
            "List {}",
            arg("path").unwrap_or_else(|| ".".into())
        )),
        "glob" | "grep" => arg("pattern").map(|p| format!("Search `{p}`")),
        "shell" => arg("command").map(|c| format!("Run `{c}`")),
        "web_fetch" => arg("url").map(|u| format!("Fetch {u}")),
        "update_plan" => Some("Update the plan".to_owned()),
        _ => None,
    };
    titled.unwrap_or_else(|| name.to_owned())
}

/// Titles stay on one line and short, whatever the model wrote.
fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 120 {
        let cut: String = line.chars().take(119).collect();
        format!("{cut}…")
    } else {
        line
    }
}

/// The files a call reads or writes, absolute (as ACP wants them).
fn locations(input: &Value, root: &Path) -> Vec<ToolCallLocation> {
    let Some(path) = input.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    let line = input
        .get("offset")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    vec![ToolCallLocation::new(root.join(path)).line(line)]
}

/// An edit's or a write's change as a diff the editor can show.
fn diff_of(name: &str, input: &Value, root: &Path) -> Option<ToolCallContent> {
    let path = root.join(input.get("path")?.as_str()?);
    let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
    let diff = match name {
        "edit" => Diff::new(path, text("new_string")?).old_text(text("old_string")),
        "write_file" => Diff::new(path, text("content")?),
        _ => return None,
    };
    Some(ToolCallContent::Diff(diff))
}

fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// A call the model made, as the editor first sees it.
pub fn tool_call(call_id: &str, name: &str, input: &Value, root: &Path) -> ToolCall {
    ToolCall::new(call_id.to_owned(), tool_title(name, input))
        .kind(tool_kind(name))
        .status(ToolCallStatus::Pending)
        .locations(locations(input, root))
        .content(diff_of(name, input, root).into_iter().collect())
        .raw_input(input.clone())
}

/// The same call as an update (a permission request carries one).
pub fn tool_call_fields(name: &str, input: &Value, root: &Path) -> ToolCallUpdateFields {
    ToolCallUpdateFields::new()
        .title(tool_title(name, input))
        .kind(tool_kind(name))
        .locations(locations(input, root))
        .content(diff_of(name, input, root).map(|d| vec![d]))
        .raw_input(input.clone())
}

/// A call began running.
pub fn started(call_id: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_owned(),
        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
    ))
}

/// A call's result. An edit keeps its diff: only a failure adds the words.
pub fn finished(
    call_id: &str,
    name: &str,
    status: ToolResultStatus,
    content: &str,
) -> SessionUpdate {
    let ok = status == ToolResultStatus::Success;
    let mut fields = ToolCallUpdateFields::new()
        .status(if ok {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        })
        .raw_output(Value::String(content.to_owned()));
    if !ok || !matches!(name, "edit" | "write_file") {
        fields = fields.content(vec![text_content(content)]);
    }
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_owned(), fields))
}

pub fn message(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

pub fn thought(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

/// The model's checklist.
pub fn plan(plan: &Plan) -> SessionUpdate {
    let entries = plan
        .steps
        .iter()
        .map(|step| {
            let status = match step.status {
                StepStatus::Pending => PlanEntryStatus::Pending,
                StepStatus::InProgress => PlanEntryStatus::InProgress,
                StepStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(step.step.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(AcpPlan::new(entries))
}

/// saki's approval modes as ACP session modes.
pub fn modes(current: ApprovalMode) -> SessionModeState {
    let available = ApprovalMode::ALL
        .iter()
        .map(|mode| {
            let (name, description) = match mode {
                ApprovalMode::Plan => ("Plan", "Reads and plans; changes nothing"),
                ApprovalMode::Default => ("Default", "Asks before edits and commands"),
                ApprovalMode::AutoEdit => ("Auto-edit", "Edits files; asks before commands"),
                ApprovalMode::Yolo => ("Yolo", "Runs everything without asking"),
            };
            SessionMode::new(mode.as_str(), name).description(description.to_owned())
        })
        .collect();
    SessionModeState::new(current.as_str(), available)
}

/// A saved session's history as the updates that tell it again (`session/load`). Items
/// saki adds itself (`@path` bodies, notes) are context, not conversation: left out.
pub fn history(items: &[Item], root: &Path) -> Vec<SessionUpdate> {
    let mut names = std::collections::HashMap::new();
    let mut out = Vec::new();
    for item in items {
        match item {
            Item::User { text } => out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                ContentBlock::Text(TextContent::new(text.clone())),
            ))),
            Item::AssistantText { text } => out.push(message(text.clone())),
            Item::Thinking { text, .. } if !text.is_empty() => out.push(thought(text.clone())),
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } => {
                let input = serde_json::from_str(arguments).unwrap_or(Value::Null);
                names.insert(ctx.call_id.clone(), name.clone());
                out.push(SessionUpdate::ToolCall(tool_call(
                    &ctx.call_id,
                    name,
                    &input,
                    root,
                )));
            }
            Item::ToolResult {
                name,
                content,
                status,
                ctx,
            } => {
                let name = names.get(&ctx.call_id).unwrap_or(name);
                out.push(finished(&ctx.call_id, name, *status, content));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn every_built_in_tool_has_its_kind() {
        for (name, kind) in [
            ("read_file", ToolKind::Read),
            ("edit", ToolKind::Edit),
            ("write_file", ToolKind::Edit),
            ("delete_file", ToolKind::Delete),
            ("grep", ToolKind::Search),
            ("glob", ToolKind::Search),
            ("ls", ToolKind::Search),
            ("shell", ToolKind::Execute),
            ("web_fetch", ToolKind::Fetch),
            ("mcp__x__y", ToolKind::Other),
        ] {
            assert_eq!(tool_kind(name), kind, "{name}");
        }
    }

    #[test]
    fn an_edit_shows_its_file_and_diff() {
        let input = json!({"path": "src/a.rs", "old_string": "x", "new_string": "y"});
        let call = tool_call("c1", "edit", &input, Path::new("/w"));
        let value = serde_json::to_value(&call).unwrap();
        assert_eq!(value["title"], "Edit src/a.rs");
        assert_eq!(value["kind"], "edit");
        assert_eq!(value["locations"][0]["path"], "/w/src/a.rs");
        assert_eq!(value["content"][0]["type"], "diff");
        assert_eq!(value["content"][0]["oldText"], "x");
        assert_eq!(value["content"][0]["newText"], "y");
    }

    #[test]
    fn titles_stay_on_one_short_line() {
        let long = format!("echo {}\nrm -rf /", "a".repeat(300));
        let title = tool_title("shell", &json!({"command": long}));
        assert!(!title.contains('\n'));
        assert!(title.chars().count() < 140);
        assert_eq!(tool_title("mystery", &json!({})), "mystery");
    }

    #[test]
    fn a_failed_result_says_why_and_a_good_edit_keeps_its_diff() {
        let failed =
            serde_json::to_value(finished("c", "edit", ToolResultStatus::Error, "no match"))
                .unwrap();
        assert_eq!(failed["status"], "failed");
        assert_eq!(failed["content"][0]["content"]["text"], "no match");
        let ok =
            serde_json::to_value(finished("c", "edit", ToolResultStatus::Success, "ok")).unwrap();
        assert_eq!(ok["status"], "completed");
        assert!(ok.get("content").is_none());
    }

    #[test]
    fn history_tells_the_conversation_and_leaves_context_out() {
        let ctx = saki_engine::ToolExecutionContext {
            call_id: "c1".into(),
            batch_id: "b".into(),
            call_index: 0,
        };
        let items = vec![
            Item::user("hi"),
            Item::system("[File: a]\nbody"),
            Item::ToolCall {
                name: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
                signature: None,
                ctx: ctx.clone(),
            },
            Item::ToolResult {
                name: "read_file".into(),
                content: "body".into(),
                status: ToolResultStatus::Success,
                ctx,
            },
            Item::AssistantText {
                text: "done".into(),
            },
        ];
        let kinds: Vec<String> = history(&items, Path::new("/w"))
            .iter()
            .map(|u| {
                serde_json::to_value(u).unwrap()["sessionUpdate"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
    }
}
