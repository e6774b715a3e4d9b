//! Anthropic Messages (`POST {base}/v1/messages`, `stream: true`). Blocks map one to
//! one onto content blocks; the stop reason arrives in `message_delta` after the last
//! block has closed and is reported on the terminal status.

use super::core::{generate_call_id, DecoderCore};
use super::openai_chat::error_parts;
use super::{delegate_to_core, images, push_merging_roles, Decoder};
use crate::event::{BlockMetadata, DeltaContent, Event, StopReason, UsageEvent};
use crate::request::ToolChoice;
use crate::request::{arguments_as_object, ContentPart, Request, Role};
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

/// Anthropic requires `max_tokens`; used when the request leaves it open.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A prompt-cache breakpoint: the provider caches the request up to and including the
/// block that carries it.
fn breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// Three cache breakpoints, the same rule for main and forked requests: after the tools
/// and system prompt (on the system block; on the last tool when there is no system
/// prompt), on the newest message's last block, and on the message before it. A request
/// that extends an earlier one (a fork, the next turn) reads what that one wrote (the
/// provider looks back from a breakpoint for the longest prefix it holds). The second
/// trailing breakpoint marks where a fork leaves the conversation it extends: forks that
/// branch from the same history (a suggestion and a speculation), and the next turn's
/// forks on a separate fast model, find that history cached too.
fn mark_cache(body: &mut Value) {
    if let Some(system) = body.get_mut("system").and_then(Value::as_array_mut) {
        if let Some(last) = system.last_mut() {
            last["cache_control"] = breakpoint();
        }
    } else if let Some(last) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|t| t.last_mut())
    {
        last["cache_control"] = breakpoint();
    }
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    for message in messages.iter_mut().rev().take(2) {
        let blocks = message.get_mut("content").and_then(Value::as_array_mut);
        // Thinking blocks cannot carry a breakpoint; the block before them can.
        if let Some(block) = blocks.and_then(|blocks| {
            blocks
                .iter_mut()
                .rev()
                .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
        }) {
            block["cache_control"] = breakpoint();
        }
    }
}

pub(crate) fn encode(request: &Request) -> Value {
    // Consecutive user messages (a prompt and its `@path` files) become one message of
    // separate text blocks: the API would fold them into one turn anyway.
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        let mut content: Vec<Value> = Vec::new();
        for part in &m.content {
            match part {
                ContentPart::Image {
                    image,
                    tool_use_id: Some(id),
                } => images::anthropic_returned(&mut content, id, image),
                part => content.extend(encode_part(part)),
            }
        }
        if content.is_empty() {
            continue;
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        push_merging_roles(
            &mut messages,
            json!({"role": role, "content": content}),
            "content",
        );
    }
    let mut max_tokens = request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
    });
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        // As a block: only a block can carry a cache breakpoint.
        body["system"] = json!([{"type": "text", "text": system}]);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        if request.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!({"type": "none"});
        }
    }
    match request.thinking {
        Some(thinking) => {
            // The budget must be at least 1024 and below max_tokens; temperature must stay default.
            let budget = thinking.budget_tokens.max(1024);
            if max_tokens <= budget {
                max_tokens = budget + DEFAULT_MAX_TOKENS;
            }
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        None => {
            if let Some(t) = request.temperature {
                body["temperature"] = json!(t);
            }
        }
    }
    body["max_tokens"] = json!(max_tokens);
    mark_cache(&mut body);
    body
}

fn encode_part(part: &ContentPart) -> Option<Value> {
    Some(match part {
        ContentPart::Text { text } if text.is_empty() => return None,
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        // Thinking is only accepted back with the signature that vouches for it.
        ContentPart::Thinking {
            text,
            signature: Some(signature),
        } => json!({"type": "thinking", "thinking": text, "signature": signature}),
        ContentPart::Thinking { .. } => return None,
        ContentPart::ToolUse {
            id,
            name,
            arguments,
            ..
        } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": arguments_as_object(arguments)})
        }
        ContentPart::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let mut v =
                json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
            if *is_error {
                v["is_error"] = json!(true);
            }
            v
        }
        ContentPart::Image { image, .. } => images::anthropic_block(image),
    })
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default)]
    content_block: Option<ContentBlock>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<AnthropicUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AnthropicUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl From<AnthropicUsage> for UsageEvent {
    fn from(u: AnthropicUsage) -> Self {
        UsageEvent {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            total_tokens: None,
            cache_read_input_tokens: u.cache_read_input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
        }
    }
}

#[derive(Default)]
pub(crate) struct AnthropicDecoder {
    core: DecoderCore,
    stop_reason: Option<StopReason>,
    /// A block type saki does not model (e.g. redacted thinking) is open; skip its deltas.
    skipping_block: bool,
}

impl AnthropicDecoder {
    fn block_start(&mut self, block: ContentBlock, out: &mut Vec<Event>) {
        self.skipping_block = false;
        match block.kind.as_str() {
            "text" => {
                self.core.open(out, BlockMetadata::Text);
                if let Some(t) = block.text.filter(|t| !t.is_empty()) {
                    self.core.delta(out, DeltaContent::Text(t));
                }
            }
            "thinking" => {
                self.core.open(out, BlockMetadata::Thinking);
                if let Some(t) = block.thinking.filter(|t| !t.is_empty()) {
                    self.core.delta(out, DeltaContent::Thinking(t));
                }
            }
            "tool_use" => {
                let id = block.id.unwrap_or_else(generate_call_id);
                let name = block.name.unwrap_or_default();
                self.core.open(out, BlockMetadata::ToolUse { id, name });
            }
            other => {
                tracing::debug!(block = other, "skipping unsupported content block");
                self.core.close(out, None);
                self.skipping_block = true;
            }
        }
    }

    fn block_delta(&mut self, delta: Delta<'_>, out: &mut Vec<Event>) {
        if self.skipping_block {
            return;
        }
        let content = match delta.kind.as_deref() {
            Some("text_delta") => delta.text.map(|t| DeltaContent::Text(t.into_owned())),
            Some("input_json_delta") => delta
                .partial_json
                .filter(|j| !j.is_empty())
                .map(|j| DeltaContent::InputJson(j.into_owned())),
            Some("thinking_delta") => delta
                .thinking
                .map(|t| DeltaContent::Thinking(t.into_owned())),
            Some("signature_delta") => delta
                .signature
                .map(|s| DeltaContent::Signature(s.into_owned())),
            other => {
                tracing::debug!(delta = ?other, "skipping unknown delta type");
                None
            }
        };
        if let Some(content) = content {
            self.core.delta(out, content);
        }
    }

    fn on_event(&mut self, event: StreamEvent<'_>, out: &mut Vec<Event>) {
        self.core.ensure_started(out);
        match event.kind.as_ref() {
            "message_start" => {
                if let Some(u) = event.message.and_then(|m| m.usage) {
                    self.core.usage(out, u.into());
                }
            }
            "content_block_start" => {
                if let Some(block) = event.content_block {
                    self.block_start(block, out);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = event.delta {
                    self.block_delta(delta, out);
                }
            }
            "content_block_stop" => {
                self.skipping_block = false;
                self.core.close(out, None);
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(match reason.as_ref() {
                        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
                        "stop_sequence" => StopReason::StopSequence,
                        "tool_use" => StopReason::ToolUse,
                        "refusal" => StopReason::ContentFilter,
                        _ => StopReason::EndTurn,
                    });
                }
                if let Some(u) = event.usage {
                    self.core.usage(out, u.into());
                }
            }
            "message_stop" => self.core.complete(out, self.stop_reason),
            "ping" => out.push(Event::Ping(Default::default())),
            "error" => {
                let (code, message) = match event.error {
                    Some(e) => error_parts(&e),
                    None => (None, "stream error".to_owned()),
                };
                self.core.fail(out, code, message);
            }
            other => tracing::debug!(event = other, "skipping unknown event"),
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn on_sse(&mut self, _event_type: &str, data: &str, out: &mut Vec<Event>) {
        if self.core.is_finished() || data.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<StreamEvent<'_>>(data) {
            Ok(event) => self.on_event(event, out),
            Err(err) => self.core.malformed(out, "anthropic", data, &err, false),
        }
    }

    fn end_of_stream(&mut self, out: &mut Vec<Event>) {
        self.core.end_of_stream(out);
    }

    delegate_to_core!();
}
