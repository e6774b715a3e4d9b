//! Prompted tool calling: the tools are described in the system prompt and the model
//! writes each call as a bare JSON object in its text, instead of the request's `tools`
//! list and the server's chat template.
//!
//! Why: a local server renders `tools` through the model's own chat template, and a small
//! model does not follow the format its template asks for. Qwen2.5-Coder-0.5B's template
//! asks for `<tool_call>` tags; the model writes bare JSON, or `edit {…}`, and after one
//! call it repeats it and answers. Given the same tools in the form it does write, with
//! earlier calls shown that way and each run of tool results ending in a request for a
//! plain-text reply, the same model on the same server finishes multi-step tasks (the
//! figures are in the crate README). The calls come back as text, and the worker's
//! text-call recovery turns them into calls, as it does for any text call.
//!
//! The rewrite is deterministic: the same request gives the same bytes, so the system
//! prompt with its tool list is a stable prefix for the server's prompt cache. The tool
//! list goes before the session's own facts ([`SESSION_FACTS`]): the workspace, the date
//! and the files at session start differ from one session to the next, and a local server
//! re-reads everything after the first byte that differs (about 750 tokens of tools, nine
//! seconds on two cores, before each session's first answer). The call format stays last,
//! after the facts, as Qwen2.5's own template has it: the words a small model reads just
//! before the conversation.

use crate::request::{ContentPart, Message, Request, Role, ToolChoice};
use serde::{Deserialize, Serialize};

mod neutral;
pub use neutral::neutralize;

/// How a client offers tools to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCalling {
    /// The protocol's own tool list and tool-call format.
    #[default]
    Native,
    /// Tools described in the system prompt; calls written as JSON text.
    Prompted,
    /// Prompted, and each reply constrained by a JSON schema to a call of one offered
    /// tool or an answer (see [`crate::constrained`]).
    Constrained,
}

impl ToolCalling {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCalling::Native => "native",
            ToolCalling::Prompted => "prompted",
            ToolCalling::Constrained => "constrained",
        }
    }
}

/// The instructions after the tool list, in the words of Qwen2.5's template with its tags
/// taken out (the form small models of that family write).
const TOOLS_HEAD: &str = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const TOOLS_END: &str = "</tools>";
const CALL_FORMAT: &str = "To call a function, reply with only a JSON object with the function name and arguments:\n{\"name\": <function-name>, \"arguments\": <args-json-object>}";

/// Ends every run of tool results: without it a small model answers each result with
/// another call.
pub const REPLY_AFTER_RESULTS: &str = "Reply to the user in plain text using this result.";

/// Added after the last message when the request asks for a text answer (tool choice
/// "none"), since there is no tool list whose use the server could forbid.
pub const NO_CALL_NOW: &str = "Answer in plain text now; do not call a function.";

/// Where a system prompt's facts about its own session begin (the workspace, the date,
/// the files, project instructions). What comes before is the same for every session;
/// the prompted tool list is put there, so a server's prompt cache keeps it.
pub const SESSION_FACTS: &str = "\n\n# Session\n";

/// `request` with its tools moved into the system prompt and its tool traffic written
/// as text: calls as `{"name": …, "arguments": …}` lines in the assistant's text, results
/// as `<tool_response>` blocks in the user's.
pub fn rewrite(request: &Request) -> Request {
    rewrite_with(request, None)
}

/// [`rewrite`], with `after_tools` (more instructions about the reply's form) after the
/// call format.
pub(crate) fn rewrite_with(request: &Request, after_tools: Option<&str>) -> Request {
    // Named field by field so that a new request field is a decision here, not a default.
    let Request {
        model,
        system,
        messages,
        tools,
        max_output_tokens,
        temperature,
        thinking,
        response_schema,
        tool_choice,
    } = request;
    let mut messages: Vec<Message> = messages.iter().map(rewrite_message).collect();
    // Project instructions and summaries are in the system prompt: not saki's own words.
    let mut system = system.as_deref().map(|s| neutralize(s).into_owned());
    if !tools.is_empty() {
        let mut block = String::from(TOOLS_HEAD);
        for tool in tools {
            let definition = serde_json::json!({"type": "function", "function": {
                "name": tool.name, "description": tool.description,
                "parameters": tool.input_schema,
            }});
            block.push('\n');
            // An MCP server writes its tools' names, descriptions and schemas.
            block.push_str(&neutralize(&definition.to_string()));
        }
        block.push('\n');
        block.push_str(TOOLS_END);
        let mut format = String::from(CALL_FORMAT);
        if let Some(more) = after_tools {
            format.push_str("\n\n");
            format.push_str(more);
        }
        system = Some(with_tools(
            system.as_deref().unwrap_or_default(),
            &block,
            &format,
        ));
        if *tool_choice == ToolChoice::None {
            messages.push(Message::user_text(NO_CALL_NOW));
        }
    }
    Request {
        model: model.clone(),
        system,
        messages,
        tools: Vec::new(),
        max_output_tokens: *max_output_tokens,
        temperature: *temperature,
        thinking: *thinking,
        response_schema: response_schema.clone(),
        tool_choice: ToolChoice::Auto,
    }
}

/// `system` with the tool list after its shared instructions and before its session
/// facts, and the call `format` last, nearest the conversation.
fn with_tools(system: &str, list: &str, format: &str) -> String {
    let (shared, facts) = match system.find(SESSION_FACTS) {
        Some(at) => system.split_at(at),
        None => (system, ""),
    };
    let head = if shared.is_empty() { "" } else { "\n\n" };
    format!("{shared}{head}{list}{facts}\n\n{format}")
}

fn rewrite_message(message: &Message) -> Message {
    let content = match message.role {
        Role::Assistant => assistant_parts(&message.content),
        Role::User => user_parts(&message.content),
    };
    Message {
        role: message.role,
        content,
    }
}

/// The text, then one line per call; other parts (thinking) stay as they are.
fn assistant_parts(parts: &[ContentPart]) -> Vec<ContentPart> {
    let mut text = String::new();
    let mut rest = Vec::new();
    for part in parts {
        match part {
            // The model's earlier answers and calls quote what it read.
            ContentPart::Text { text: t } => push_line(&mut text, &neutralize(t)),
            ContentPart::ToolUse {
                name, arguments, ..
            } => {
                // Arguments the model wrote as invalid JSON are shown as the string they were.
                let arguments = serde_json::from_str::<serde_json::Value>(arguments)
                    .unwrap_or_else(|_| serde_json::Value::String(arguments.clone()));
                let call = serde_json::json!({"name": name, "arguments": arguments});
                push_line(&mut text, &neutralize(&call.to_string()));
            }
            other => rest.push(neutral_part(other)),
        }
    }
    if !text.is_empty() {
        rest.push(ContentPart::Text { text });
    }
    rest
}

/// A text or unsigned thinking part with its markers neutralised; any other part as it is.
fn neutral_part(part: &ContentPart) -> ContentPart {
    match part {
        ContentPart::Text { text } => ContentPart::Text {
            text: neutralize(text).into_owned(),
        },
        // A signed thought goes back byte for byte, or the provider rejects it.
        ContentPart::Thinking {
            text,
            signature: None,
        } => ContentPart::Thinking {
            text: neutralize(text).into_owned(),
            signature: None,
        },
        other => other.clone(),
    }
}

/// The tool results as one text of `<tool_response>` blocks ending in
/// [`REPLY_AFTER_RESULTS`], then the message's other parts; a returned image becomes an
/// image of the message.
fn user_parts(parts: &[ContentPart]) -> Vec<ContentPart> {
    let mut results = String::new();
    let mut rest = Vec::new();
    for part in parts {
        match part {
            ContentPart::ToolResult { content, .. } => {
                // A file read cannot close its block, or its turn, and write text that
                // looks like saki's or another role's.
                let content = neutralize(content);
                push_line(
                    &mut results,
                    &format!("<tool_response>\n{content}\n</tool_response>"),
                );
            }
            ContentPart::Image { image, .. } => rest.push(ContentPart::Image {
                image: image.clone(),
                tool_use_id: None,
            }),
            // `@path` files, summaries and the person's words.
            other => rest.push(neutral_part(other)),
        }
    }
    if results.is_empty() {
        return rest;
    }
    results.push_str("\n\n");
    results.push_str(REPLY_AFTER_RESULTS);
    let mut out = vec![ContentPart::Text { text: results }];
    out.extend(rest);
    out
}

fn push_line(out: &mut String, line: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(line);
}

#[cfg(test)]
#[path = "prompted_tests.rs"]
mod tests;
