//! Wire protocols. Each module owns one provider format: the request encoder, the
//! endpoint path and auth headers, and a streaming decoder from SSE events to [`Event`]s.

pub(crate) mod anthropic;
pub(crate) mod core;
pub(crate) mod gemini;
pub(crate) mod images;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;

use crate::event::Event;
use crate::request::Request;
use serde::{Deserialize, Serialize};

pub use self::core::generate_call_id;
pub(crate) use self::openai_chat::error_parts;

/// The wire protocol a provider speaks. Config spells these `chat`, `responses`,
/// `anthropic`, `gemini`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

impl WireApi {
    pub const ALL: [WireApi; 4] = [
        WireApi::Chat,
        WireApi::Responses,
        WireApi::Anthropic,
        WireApi::Gemini,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::Chat => "chat",
            WireApi::Responses => "responses",
            WireApi::Anthropic => "anthropic",
            WireApi::Gemini => "gemini",
        }
    }

    /// Encodes the provider's documented streaming request body.
    pub fn encode(self, request: &Request) -> serde_json::Value {
        match self {
            WireApi::Chat => openai_chat::encode(request),
            WireApi::Responses => openai_responses::encode(request),
            WireApi::Anthropic => anthropic::encode(request),
            WireApi::Gemini => gemini::encode(request),
        }
    }

    /// Full URL of the streaming endpoint. Base URLs follow each official SDK:
    /// OpenAI's includes `/v1`, Anthropic's and Gemini's are the host root.
    pub fn endpoint_url(self, base_url: &str, model: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            WireApi::Chat => format!("{base}/chat/completions"),
            WireApi::Responses => format!("{base}/responses"),
            WireApi::Anthropic => format!("{base}/v1/messages"),
            WireApi::Gemini => {
                format!("{base}/v1beta/models/{model}:streamGenerateContent?alt=sse")
            }
        }
    }

    /// Authentication and protocol headers for an API key.
    pub fn auth_headers(self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        match self {
            WireApi::Chat | WireApi::Responses => {
                if let Some(key) = api_key {
                    headers.push(("authorization", format!("Bearer {key}")));
                }
            }
            WireApi::Anthropic => {
                if let Some(key) = api_key {
                    headers.push(("x-api-key", key.to_owned()));
                }
                headers.push(("anthropic-version", "2023-06-01".to_owned()));
            }
            WireApi::Gemini => {
                if let Some(key) = api_key {
                    headers.push(("x-goog-api-key", key.to_owned()));
                }
            }
        }
        headers
    }

    pub fn decoder(self) -> Box<dyn Decoder> {
        match self {
            WireApi::Chat => Box::<openai_chat::ChatDecoder>::default(),
            WireApi::Responses => Box::<openai_responses::ResponsesDecoder>::default(),
            WireApi::Anthropic => Box::<anthropic::AnthropicDecoder>::default(),
            WireApi::Gemini => Box::<gemini::GeminiDecoder>::default(),
        }
    }
}

impl std::str::FromStr for WireApi {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WireApi::ALL
            .into_iter()
            .find(|w| w.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown wire_api `{s}` (expected one of: chat, responses, anthropic, gemini)"
                )
            })
    }
}

impl std::fmt::Display for WireApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Appends an encoded message to `out`, or folds it into the last one when both have the
/// same role: `{"role": …, <blocks>: [...]}` with `blocks` the protocol's list key.
///
/// For protocols that want one message per turn: Anthropic's Messages API folds
/// consecutive same-role messages into one turn itself, and its cache breakpoints sit on
/// messages, so folding here keeps them where the provider sees them; Gemini asks
/// `contents` to alternate between `user` and `model` (a request with two `user`
/// contents in a row can be refused) and wants every `functionResponse` answering one
/// model turn in one content. The folded message keeps each block (part) separate and in
/// order, so an `@path` file stays apart from the person's text. It also covers a turn
/// left empty by encoding (an assistant message of unsigned thinking only), which would
/// otherwise put two user messages side by side.
pub(crate) fn push_merging_roles(
    out: &mut Vec<serde_json::Value>,
    message: serde_json::Value,
    blocks: &str,
) {
    if let Some(last) = out.last_mut() {
        if last.get("role") == message.get("role") {
            if let (Some(into), Some(from)) = (
                last.get_mut(blocks)
                    .and_then(serde_json::Value::as_array_mut),
                message.get(blocks).and_then(serde_json::Value::as_array),
            ) {
                into.extend(from.iter().cloned());
                return;
            }
        }
    }
    out.push(message);
}

/// Turns one provider's SSE events into normalized [`Event`]s. Never panics: malformed
/// or unknown input is traced and skipped; a provider error ends the stream as failed.
pub trait Decoder: Send {
    /// One SSE event: its `event:` name (`"message"` when absent) and its data.
    fn on_sse(&mut self, event_type: &str, data: &str, out: &mut Vec<Event>);
    /// The byte stream ended (cleanly or not); closes whatever is open.
    fn end_of_stream(&mut self, out: &mut Vec<Event>);
    /// The transport failed mid-stream.
    fn fail(&mut self, code: Option<String>, message: String, out: &mut Vec<Event>);
    /// The stream ended with a provider error written outside any event: the text and
    /// reasoning received are kept (stopped, not aborted), a half tool call is not.
    fn fail_at_end(&mut self, code: Option<String>, message: String, out: &mut Vec<Event>);
    /// The caller cancelled.
    fn cancel(&mut self, out: &mut Vec<Event>);
    /// A terminal status has been emitted; later input is ignored.
    fn is_finished(&self) -> bool;
}

/// Implements the delegating parts of [`Decoder`] for a struct with a `core` field.
macro_rules! delegate_to_core {
    () => {
        fn fail(
            &mut self,
            code: Option<String>,
            message: String,
            out: &mut Vec<$crate::event::Event>,
        ) {
            self.core.fail(out, code, message);
        }

        fn fail_at_end(
            &mut self,
            code: Option<String>,
            message: String,
            out: &mut Vec<$crate::event::Event>,
        ) {
            if self.core.open_block_type() != Some($crate::event::BlockType::ToolUse) {
                self.core.close(out, None);
            }
            self.core.fail(out, code, message);
        }

        fn cancel(&mut self, out: &mut Vec<$crate::event::Event>) {
            self.core.cancel(out);
        }

        fn is_finished(&self) -> bool {
            self.core.is_finished()
        }
    };
}
pub(crate) use delegate_to_core;
