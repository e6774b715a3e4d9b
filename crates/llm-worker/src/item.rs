//! History items: what was said and done, in order. Items are the unit of persistence;
//! requests are built from them, so the model sees exactly what history holds.

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
            Item::User { .. } | Item::System { .. } | Item::ToolResult { .. } => Role::User,
            Item::AssistantText { .. } | Item::Thinking { .. } | Item::ToolCall { .. } => {
                Role::Assistant
            }
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
        }
    }
}

/// Builds request messages from history: consecutive items of one role form one message.
/// System items travel as user text: several chat templates reject system messages
/// anywhere but first.
pub fn to_messages(history: &[Item]) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    for item in history {
        let role = item.role();
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.push(item.part()),
            _ => messages.push(Message {
                role,
                content: vec![item.part()],
            }),
        }
    }
    messages
}
