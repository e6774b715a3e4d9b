//! The request that asks for a plain-text answer once the loop guard has stopped a turn,
//! in the form small local models follow.
//!
//! Tool choice "none" is enough for a model that reads it. A small model on a local
//! server does not: it sees its own earlier calls in the history and writes another one,
//! often the same, as text; with the tool list gone it imitates the last assistant
//! message instead. What it does answer is one user message that holds the request, what
//! the tools returned, and the instruction to answer. So when text-call recovery is on
//! (the setting for such servers), the answer request is that: the earlier turns without
//! their tool traffic, then this turn folded into one user message, and no tools. It
//! costs one request without the prompt cache, once, on a turn that was looping anyway.
//! The history itself keeps the real calls and results.

use crate::item::{to_messages, Item, ToolResultStatus};
use crate::loop_guard::is_repeat_note;
use saki_llm_client::{Message, Request, ToolChoice};

/// Lines and bytes of each tool result quoted in the answer request.
const RESULT_LINES: usize = 60;
const RESULT_BYTES: usize = 4096;

/// What the folded turn ends with when it asks for the answer. Ending on the request
/// itself makes a small model repeat it as its answer.
const ANSWER_INSTRUCTION: &str =
    "Using the tool results, write the answer to the request. Do not call tools. Do not \
     repeat the request.";

/// Replaces `request`'s messages and tools with the folded form of `history`, ending in
/// `instruction` or else the usual request for the answer.
pub fn fold_for_answer(request: &mut Request, history: &[Item], instruction: Option<&str>) {
    fold(
        request,
        history,
        instruction.unwrap_or(ANSWER_INSTRUCTION),
        Refused::LeftOut,
    );
    request.tools.clear();
    request.tool_choice = ToolChoice::Auto;
}

/// Replaces `request`'s messages with the folded form of `history` ending in
/// `instruction`, and holds its answer to one call of one of `tools` (structured output,
/// as [`crate::first_call`] asks for a first call). `false`, and `request` untouched, when
/// it offers none of `tools`.
pub fn fold_for_call(
    request: &mut Request,
    history: &[Item],
    tools: &[String],
    instruction: &str,
) -> bool {
    if !request.tools.iter().any(|t| tools.contains(&t.name)) {
        return false;
    }
    // Folded with every offered tool, so that what the reads returned is in the message,
    // and with the refusals, which say what the call must not do again.
    fold(request, history, instruction, Refused::Kept);
    request.tools.retain(|t| tools.contains(&t.name));
    request.tool_choice = ToolChoice::Auto;
    crate::first_call::require_call(request);
    true
}

/// What the folded turn does with the calls an interceptor or approval refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    Kept,
    /// Left out when some call of the turn succeeded. A refused call's arguments are
    /// only what the model meant to do: asked "What is the timeout in the settings?", a
    /// 0.5B model tried to write `timeout = 60`, was refused, read `timeout = 30`, and
    /// answered 60 from its own refused call.
    LeftOut,
}

fn fold(request: &mut Request, history: &[Item], instruction: &str, refused: Refused) {
    // The turn's own user item is the last one (tool results and notes are other kinds).
    let turn_start = history
        .iter()
        .rposition(|item| matches!(item, Item::User { .. }))
        .unwrap_or(0);
    let earlier: Vec<Item> = history[..turn_start]
        .iter()
        .filter(|item| matches!(item, Item::User { .. } | Item::AssistantText { .. }))
        .cloned()
        .collect();
    let offered: std::collections::HashSet<&str> =
        request.tools.iter().map(|t| t.name.as_str()).collect();
    let mut messages: Vec<Message> = to_messages(&earlier);
    messages.extend(to_messages(&[Item::user(fold_turn(
        &history[turn_start..],
        &offered,
        instruction,
        refused,
    ))]));
    request.messages = messages;
}

/// This turn as one message: the request (with what was attached to it), each call to a
/// tool in `offered` with its result, and `instruction`. A call to a tool that does not
/// exist is left out: quoted, a small model writes it out again as its answer; so are
/// refused calls, as `refused` says.
fn fold_turn(
    turn: &[Item],
    offered: &std::collections::HashSet<&str>,
    instruction: &str,
    refused: Refused,
) -> String {
    let succeeded = turn.iter().any(|item| {
        matches!(
            item,
            Item::ToolResult {
                status: ToolResultStatus::Success,
                ..
            }
        )
    });
    let leave_out_refused = refused == Refused::LeftOut && succeeded;
    let mut request = String::new();
    let mut log = String::new();
    let mut calls = std::collections::HashMap::new();
    let mut called = false;
    for item in turn {
        match item {
            Item::User { text } | Item::System { text } if !called => {
                if !request.is_empty() {
                    request.push_str("\n\n");
                }
                request.push_str(text);
            }
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } => {
                called = true;
                calls.insert(ctx.call_id.as_str(), (name.as_str(), arguments.as_str()));
            }
            Item::ToolResult {
                content,
                status,
                ctx,
                name,
            } if !is_repeat_note(content) => {
                let (name, arguments) = calls
                    .get(ctx.call_id.as_str())
                    .copied()
                    .unwrap_or((name.as_str(), ""));
                if !offered.is_empty() && !offered.contains(name) {
                    continue;
                }
                if leave_out_refused && *status == ToolResultStatus::Denied {
                    continue;
                }
                let verb = match status {
                    ToolResultStatus::Success => "returned",
                    _ => "failed",
                };
                log.push_str(&format!("{name} {arguments} {verb}:\n{}\n", quote(content)));
            }
            _ => {}
        }
    }
    let mut out = format!("Request: {request}");
    if !log.is_empty() {
        out.push_str("\n\nTool results:\n");
        out.push_str(log.trim_end());
    }
    out.push_str("\n\n");
    out.push_str(instruction);
    out
}

fn quote(content: &str) -> String {
    let mut text = content
        .lines()
        .take(RESULT_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let mut cut = content.lines().nth(RESULT_LINES).is_some();
    if text.len() > RESULT_BYTES {
        let mut end = RESULT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        cut = true;
    }
    if cut {
        text.push_str("\n[…]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolExecutionContext;
    use saki_llm_client::{ContentPart, Role};

    fn ctx(id: &str) -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: id.into(),
            batch_id: "b".into(),
            call_index: 0,
        }
    }

    fn call(id: &str, name: &str, args: &str) -> Item {
        Item::ToolCall {
            name: name.into(),
            arguments: args.into(),
            signature: None,
            ctx: ctx(id),
        }
    }

    fn result(id: &str, name: &str, content: &str, status: ToolResultStatus) -> Item {
        Item::ToolResult {
            name: name.into(),
            content: content.into(),
            status,
            ctx: ctx(id),
        }
    }

    fn text_of(message: &Message) -> String {
        message
            .content
            .iter()
            .map(|p| match p {
                ContentPart::Text { text } => text.as_str(),
                _ => "<non-text>",
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn the_turn_becomes_one_user_message_without_tools() {
        let history = vec![
            Item::user("earlier question"),
            call("c0", "ls", "{}"),
            result("c0", "ls", "a.txt", ToolResultStatus::Success),
            Item::AssistantText {
                text: "earlier answer".into(),
            },
            Item::user("Read NOTE.txt and tell me the secret word."),
            call("c1", "read_file", r#"{"path":"NOTE.txt"}"#),
            result(
                "c1",
                "read_file",
                "The secret word is MANGO.",
                ToolResultStatus::Success,
            ),
            call("c2", "read_file", r#"{"path":"NOTE.txt"}"#),
            result(
                "c2",
                "read_file",
                &crate::loop_guard::repeat_result("The secret word is MANGO."),
                ToolResultStatus::Success,
            ),
            call("c4", "append_line", r#"{"line":"x"}"#),
            result(
                "c4",
                "append_line",
                "unknown tool `append_line`; available tools: read_file, edit",
                ToolResultStatus::Error,
            ),
            call("c3", "edit", r#"{"path":"NOTE.txt"}"#),
            result(
                "c3",
                "edit",
                "missing required argument `old_string`",
                ToolResultStatus::Error,
            ),
            Item::system("[loop note kept in history]"),
        ];
        let mut request = Request {
            model: "m".into(),
            system: Some("sys".into()),
            messages: Vec::new(),
            tools: ["read_file", "edit"]
                .map(|name| saki_llm_client::ToolDefinition {
                    name: name.into(),
                    description: String::new(),
                    input_schema: serde_json::json!({}),
                })
                .to_vec(),
            max_output_tokens: None,
            temperature: None,
            thinking: None,
            response_schema: None,
            tool_choice: ToolChoice::None,
        };
        // Held to a call of a tool it does not offer: untouched.
        let untouched = request.clone();
        assert!(!fold_for_call(
            &mut request,
            &history,
            &["write_file".into()],
            "x"
        ));
        assert_eq!(request, untouched);
        // Held to an edit: the reads are folded in, and only edit is offered, as a schema.
        let mut call = request.clone();
        assert!(fold_for_call(
            &mut call,
            &history,
            &["edit".into()],
            "Edit it."
        ));
        let folded = text_of(call.messages.last().unwrap());
        assert!(folded.contains("read_file {\"path\":\"NOTE.txt\"} returned:"));
        assert!(folded.ends_with("\n\nEdit it."), "{folded}");
        let names: Vec<&str> = call.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["edit"]);
        assert!(call.response_schema.is_some());

        fold_for_answer(&mut request, &history, None);
        assert!(request.tools.is_empty());
        assert_eq!(request.tool_choice, ToolChoice::Auto);
        let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::User, Role::Assistant, Role::User]);
        assert_eq!(text_of(&request.messages[0]), "earlier question");
        assert_eq!(text_of(&request.messages[1]), "earlier answer");
        let last = text_of(&request.messages[2]);
        assert_eq!(
            last,
            "Request: Read NOTE.txt and tell me the secret word.\n\n\
             Tool results:\n\
             read_file {\"path\":\"NOTE.txt\"} returned:\nThe secret word is MANGO.\n\
             edit {\"path\":\"NOTE.txt\"} failed:\nmissing required argument `old_string`\n\n\
             Using the tool results, write the answer to the request. Do not call tools. \
             Do not repeat the request."
        );
    }

    #[test]
    fn an_answer_is_folded_without_refused_calls_once_a_call_succeeded() {
        let refused_edit = |id: &str| {
            [
                call(
                    id,
                    "edit",
                    r#"{"old_string":"timeout = 30","new_string":"timeout = 60"}"#,
                ),
                result(
                    id,
                    "edit",
                    "denied: the request asks for no change",
                    ToolResultStatus::Denied,
                ),
            ]
        };
        let mut history = vec![Item::user("What is the timeout?")];
        history.extend(refused_edit("c1"));
        let tools = ["read_file", "edit"].map(|name| saki_llm_client::ToolDefinition {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({}),
        });
        let request = Request {
            model: "m".into(),
            system: None,
            messages: Vec::new(),
            tools: tools.to_vec(),
            max_output_tokens: None,
            temperature: None,
            thinking: None,
            response_schema: None,
            tool_choice: ToolChoice::Auto,
        };
        // Nothing else to go by: the refusal is what the turn has.
        let mut only_refused = request.clone();
        fold_for_answer(&mut only_refused, &history, None);
        assert!(text_of(only_refused.messages.last().unwrap()).contains("timeout = 60"));

        history.push(call("c2", "read_file", r#"{"path":"settings.ini"}"#));
        history.push(result(
            "c2",
            "read_file",
            "timeout = 30",
            ToolResultStatus::Success,
        ));
        let mut answer = request.clone();
        fold_for_answer(&mut answer, &history, None);
        let folded = text_of(answer.messages.last().unwrap());
        assert!(!folded.contains("timeout = 60"), "{folded}");
        assert!(folded.contains("returned:\ntimeout = 30"), "{folded}");
        // Asked for a call, the model is shown what it must not do again.
        let mut call_request = request.clone();
        assert!(fold_for_call(
            &mut call_request,
            &history,
            &["edit".into()],
            "Edit it."
        ));
        assert!(text_of(call_request.messages.last().unwrap()).contains("timeout = 60"));
    }

    #[test]
    fn long_results_are_cut_on_a_char_boundary() {
        let long = "é".repeat(RESULT_BYTES);
        let quoted = quote(&long);
        assert!(quoted.ends_with("\n[…]"));
        assert!(quoted.len() <= RESULT_BYTES + "\n[…]".len());
        let many = (0..100)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        let quoted = quote(&many);
        assert_eq!(quoted.lines().count(), RESULT_LINES + 1);
    }
}
