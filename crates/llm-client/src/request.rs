//! One request model for every wire protocol. Encoders in `protocol/` turn it into
//! each provider's documented request body.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub model: String,
    /// The system prompt (instructions). Sent in each provider's dedicated slot.
    pub system: Option<String>,
    /// The conversation. Several messages of one role in a row are allowed: Chat
    /// Completions and Responses send them as they are; Anthropic and Gemini, which want
    /// the roles to alternate, fold them into one message of separate blocks (parts).
    pub messages: Vec<Message>,
    /// Tool definitions, sent in the order given (callers sort them for prefix stability).
    pub tools: Vec<ToolDefinition>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// `None`: thinking off (the provider's default is left alone). `Some`: ask for it.
    pub thinking: Option<ThinkingConfig>,
    /// Ask for a reply that is JSON matching this schema, where the protocol supports
    /// structured output (Chat Completions, Responses, Gemini); Anthropic ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<ResponseSchema>,
    /// Whether the model may call the tools. `None` keeps the tool list (and so the prompt
    /// prefix) but asks for a text answer.
    #[serde(default)]
    pub tool_choice: ToolChoice,
}

/// May the model call a tool in this response?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    #[default]
    Auto,
    /// Answer in text; the tools stay listed.
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// A short identifier (letters, digits, `_`, `-`), required by OpenAI.
    pub name: String,
    /// JSON Schema of the reply object.
    pub schema: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingConfig {
    /// Token budget for providers that take one (Anthropic, Gemini).
    pub budget_tokens: u32,
}

impl Default for ThinkingConfig {
    fn default() -> Self {
        Self {
            budget_tokens: 4096,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentPart>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    /// The message's text parts, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    Thinking {
        text: String,
        /// Provider signature that must accompany the thinking when sent back.
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        /// The arguments exactly as the model produced them (may be invalid JSON).
        arguments: String,
        /// Gemini thought signature attached to the call.
        signature: Option<String>,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
    /// An image. With `tool_use_id` it belongs to that call's result (in the same
    /// message, after the result); each protocol carries it its own way (crate README).
    Image {
        image: crate::image::ImagePart,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

/// Parses tool arguments for providers that want an object; invalid or non-object
/// arguments become an empty object (the tool result already tells the model why).
pub(crate) fn arguments_as_object(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    }
}

/// Tool names by call id, for providers whose tool results must name the tool (Gemini).
/// Built once per request, so encoding stays linear in history length.
pub(crate) fn tool_names_by_id(messages: &[Message]) -> std::collections::HashMap<&str, &str> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            ContentPart::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect()
}
