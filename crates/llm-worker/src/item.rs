//! History items: what was said and done, in order. Items are the unit of persistence;
//! requests are built from them, so the model sees exactly what history holds.

use crate::image::{image_parts, ImageRef};
use crate::tool::ToolExecutionContext;
use saki_llm_client::{ContentPart, Message, Role};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    Success,
    Error,
    /// Refused by approval policy, an interceptor or a hook.
    Denied,
    /// Interrupted by the person.
    Cancelled,
    /// Never started (e.g. the response around it failed).
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    User {
        text: String,
    },
    /// Context the harness adds (e.g. the body of an `@file` reference).
    System {
        text: String,
    },
    AssistantText {
        text: String,
    },
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        name: String,
        /// Arguments exactly as the model wrote them.
        arguments: String,
        signature: Option<String>,
        #[serde(flatten)]
        ctx: ToolExecutionContext,
    },
    ToolResult {
        name: String,
        content: String,
        status: ToolResultStatus,
        #[serde(flatten)]
        ctx: ToolExecutionContext,
    },
    /// An image: attached to a prompt (`@path`; no `call_id`), or returned by the tool
    /// call `call_id`, right after its result. History holds a reference (see
    /// [`ImageRef`]); the bytes are kept apart.
    Image {
        /// The path as the person or the tool call wrote it.
        path: String,
        #[serde(flatten)]
        image: ImageRef,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
}

impl Item {
    pub fn user(text: impl Into<String>) -> Self {
        Item::User { text: text.into() }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Item::System { text: text.into() }
    }

    fn role(&self) -> Role {
        match self {
            Item::User { .. }
            | Item::System { .. }
            | Item::ToolResult { .. }
            | Item::Image { .. } => Role::User,
            Item::AssistantText { .. } | Item::Thinking { .. } | Item::ToolCall { .. } => {
                Role::Assistant
            }
        }
    }

    /// The request parts of this item; `vision`: whether images may be sent.
    fn parts(&self, vision: bool) -> Vec<ContentPart> {
        match self {
            Item::Image {
                path,
                image,
                call_id,
            } => image_parts(path, image, call_id.as_deref(), vision),
            other => vec![other.part()],
        }
    }

    fn part(&self) -> ContentPart {
        match self {
            Item::User { text } | Item::System { text } | Item::AssistantText { text } => {
                ContentPart::Text { text: text.clone() }
            }
            Item::Thinking { text, signature } => ContentPart::Thinking {
                text: text.clone(),
                signature: signature.clone(),
            },
            Item::ToolCall {
                name,
                arguments,
                signature,
                ctx,
            } => ContentPart::ToolUse {
                id: ctx.call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                signature: signature.clone(),
            },
            Item::ToolResult {
                content,
                status,
                ctx,
                ..
            } => ContentPart::ToolResult {
                tool_use_id: ctx.call_id.clone(),
                content: content.clone(),
                is_error: *status != ToolResultStatus::Success,
            },
            // `parts` turns images into their parts; this is only its fallback.
            Item::Image { path, image, .. } => ContentPart::Text {
                text: format!("[Image: {path} ({})]", image.describe()),
            },
        }
    }
}

/// Builds request messages from history. Each `User` and `System` item is a message of
/// its own: the file-reference spec keeps an `@path` body out of the person's message,
/// so `[user, file, file]` is three messages, never one text with the files inlined.
/// The other items join the message before them when it holds their kind: an assistant
/// response (text, thinking, calls) is one message, and so is a batch of tool results.
/// System items travel as user messages: several chat templates reject system messages
/// anywhere but first. Protocols whose turns alternate (Anthropic, Gemini) fold a run of
/// user messages into one turn of separate blocks or parts (`saki-llm-client`'s README).
pub fn to_messages(history: &[Item]) -> Vec<Message> {
    to_messages_with(history, true)
}

/// [`to_messages`] for a model that may not read images (`vision` false): each image
/// becomes a note saying so, and the request stays one the provider accepts. An image
/// a tool returned joins its result's message.
pub fn to_messages_with(history: &[Item], vision: bool) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    let mut last_kind = None;
    for (at, item) in history.iter().enumerate() {
        if set_aside(history, at) {
            continue;
        }
        let kind = item.message_kind();
        match messages.last_mut() {
            Some(last) if last_kind == Some(kind) && kind != MessageKind::Standalone => {
                last.content.extend(item.parts(vision))
            }
            _ => messages.push(Message {
                role: item.role(),
                content: item.parts(vision),
            }),
        }
        last_kind = Some(kind);
    }
    messages
}

/// Whether `history[at]` is answer text that a call saki made itself follows: the answer
/// of a turn saki did not let end there (given without looking, or holding a file it then
/// saved). Requests show the model its call and what it returned, not the answer the call
/// replaced, which a small model otherwise repeats (it answered "timeout = 60" again after
/// saki's read showed `timeout = 30`). History keeps it: sessions, the UI and exports
/// show what the model said.
fn set_aside(history: &[Item], at: usize) -> bool {
    if !matches!(history[at], Item::AssistantText { .. }) {
        return false;
    }
    history[at + 1..]
        .iter()
        .find(|item| !matches!(item, Item::AssistantText { .. } | Item::Thinking { .. }))
        .is_some_and(|item| {
            matches!(item, Item::ToolCall { ctx, .. }
                if ctx.call_id.starts_with(crate::interceptor::OWN_CALL_PREFIX))
        })
}

/// Which items may share one request message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageKind {
    /// A person's prompt or a harness note (`@path` file, summary, loop note).
    Standalone,
    Assistant,
    ToolResults,
}

impl Item {
    fn message_kind(&self) -> MessageKind {
        match self {
            Item::User { .. } | Item::System { .. } => MessageKind::Standalone,
            Item::Image { call_id: None, .. } => MessageKind::Standalone,
            Item::AssistantText { .. } | Item::Thinking { .. } | Item::ToolCall { .. } => {
                MessageKind::Assistant
            }
            Item::ToolResult { .. }
            | Item::Image {
                call_id: Some(_), ..
            } => MessageKind::ToolResults,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(message: &Message) -> Vec<&str> {
        message.texts().collect()
    }

    #[test]
    fn each_user_and_system_item_is_its_own_message() {
        let history = [
            Item::user("compare @a and @b"),
            Item::system("[File: a]\nalpha"),
            Item::system("[File: b]\nbeta"),
            Item::AssistantText { text: "ok".into() },
        ];
        let messages = to_messages(&history);
        let shape: Vec<(Role, Vec<&str>)> = messages.iter().map(|m| (m.role, texts(m))).collect();
        assert_eq!(
            shape,
            [
                (Role::User, vec!["compare @a and @b"]),
                (Role::User, vec!["[File: a]\nalpha"]),
                (Role::User, vec!["[File: b]\nbeta"]),
                (Role::Assistant, vec!["ok"]),
            ]
        );
    }

    #[test]
    fn a_response_and_a_batch_of_results_stay_one_message_each() {
        let ctx = |i: usize| ToolExecutionContext {
            call_id: format!("c{i}"),
            batch_id: "batch_1".into(),
            call_index: i,
        };
        let call = |i| Item::ToolCall {
            name: "ls".into(),
            arguments: "{}".into(),
            signature: None,
            ctx: ctx(i),
        };
        let result = |i| Item::ToolResult {
            name: "ls".into(),
            content: "x".into(),
            status: ToolResultStatus::Success,
            ctx: ctx(i),
        };
        let history = [
            Item::user("list"),
            Item::Thinking {
                text: "t".into(),
                signature: None,
            },
            call(0),
            call(1),
            result(0),
            result(1),
            Item::system("[loop note]"),
        ];
        let messages = to_messages(&history);
        let sizes: Vec<(Role, usize)> =
            messages.iter().map(|m| (m.role, m.content.len())).collect();
        assert_eq!(
            sizes,
            [
                (Role::User, 1),
                (Role::Assistant, 3),
                (Role::User, 2),
                (Role::User, 1),
            ]
        );
    }

    #[test]
    fn an_answer_a_call_saki_made_itself_follows_is_left_out_of_requests() {
        let call = |id: &str| Item::ToolCall {
            name: "read_file".into(),
            arguments: "{}".into(),
            signature: None,
            ctx: ToolExecutionContext {
                call_id: id.into(),
                batch_id: "b".into(),
                call_index: 0,
            },
        };
        let answer = || Item::AssistantText {
            text: "timeout = 60".into(),
        };
        let history = [
            Item::user("What is the timeout?"),
            answer(),
            call("saki_b1"),
        ];
        let messages = to_messages(&history);
        assert!(messages.iter().all(|m| !texts(m).contains(&"timeout = 60")));
        assert_eq!(messages[1].content.len(), 1, "the call alone");
        // Text before the model's own call stays: it is the model's, said with its call.
        let history = [Item::user("What is the timeout?"), answer(), call("call_1")];
        assert_eq!(to_messages(&history)[1].content.len(), 2);
        // And an answer that ends a turn stays.
        let history = [Item::user("What is the timeout?"), answer()];
        assert_eq!(texts(&to_messages(&history)[1]), ["timeout = 60"]);
    }
}
