//! OpenAI Responses API (`POST {base}/responses`, `stream: true`). Every output item
//! (message, reasoning, function_call) becomes one block, keyed by `output_index`.

use super::core::{generate_call_id, DecoderCore};
use super::openai_chat::error_parts;
use super::{delegate_to_core, images, Decoder};
use crate::event::{BlockMetadata, BlockType, DeltaContent, Event, StopReason, UsageEvent};
use crate::request::ToolChoice;
use crate::request::{ContentPart, Request, Role};
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

pub(crate) fn encode(request: &Request) -> Value {
    // Every part is an input item of its own: each text a `message` item (so a prompt and
    // its `@path` files are separate user messages, which `input` allows), each call and
    // result its own item.
    let mut input = Vec::new();
    for message in &request.messages {
        let (role, text_type) = match message.role {
            Role::User => ("user", "input_text"),
            Role::Assistant => ("assistant", "output_text"),
        };
        let start = input.len();
        for part in &message.content {
            match part {
                ContentPart::Text { text } => input.push(json!({
                    "type": "message", "role": role,
                    "content": [{"type": text_type, "text": text}],
                })),
                // Reasoning items are only replayable with their encrypted content,
                // which stateless requests do not keep; the API accepts their absence.
                ContentPart::Thinking { .. } => {}
                ContentPart::ToolUse {
                    id,
                    name,
                    arguments,
                    ..
                } => input.push(json!({
                    "type": "function_call", "call_id": id, "name": name, "arguments": arguments,
                })),
                ContentPart::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => input.push(json!({
                    "type": "function_call_output", "call_id": tool_use_id, "output": content,
                })),
                ContentPart::Image {
                    image,
                    tool_use_id: None,
                } => images::responses_user(&mut input, start, image),
                ContentPart::Image {
                    image,
                    tool_use_id: Some(id),
                } => images::responses_returned(&mut input, id, image),
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if let Some(system) = &request.system {
        body["instructions"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.input_schema, "strict": false})
            })
            .collect();
        if request.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(max) = request.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if request.thinking.is_some() {
        body["reasoning"] = json!({"effort": "medium", "summary": "auto"});
    }
    if let Some(format) = &request.response_schema {
        body["text"] = json!({"format": {"type": "json_schema", "name": format.name,
            "schema": format.schema, "strict": true}});
    }
    body
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    summary_index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    response: Option<ResponseObject>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ResponseObject {
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<Value>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Default)]
pub(crate) struct ResponsesDecoder {
    core: DecoderCore,
    /// `output_index` of the open block and whether arguments were streamed into it.
    open_item: Option<usize>,
    streamed_arguments: bool,
    summary_index: Option<usize>,
}

impl ResponsesDecoder {
    fn content_delta(
        &mut self,
        output_index: Option<usize>,
        delta: DeltaContent,
        out: &mut Vec<Event>,
    ) {
        let wanted = match &delta {
            DeltaContent::Text(_) => BlockType::Text,
            DeltaContent::Thinking(_) => BlockType::Thinking,
            _ => BlockType::ToolUse,
        };
        if output_index != self.open_item || self.core.open_block_type() != Some(wanted) {
            if wanted == BlockType::ToolUse {
                tracing::debug!("arguments delta for an item that is not open; skipped");
                return;
            }
            self.core.close(out, None);
            self.open_item = output_index;
        }
        self.core.delta(out, delta);
    }

    fn item_added(&mut self, output_index: Option<usize>, item: Item, out: &mut Vec<Event>) {
        if item.kind == "function_call" {
            let id = item.call_id.or(item.id).unwrap_or_else(generate_call_id);
            self.core.open(
                out,
                BlockMetadata::ToolUse {
                    id,
                    name: item.name.unwrap_or_default(),
                },
            );
            self.open_item = output_index;
            self.streamed_arguments = false;
            self.summary_index = None;
        }
    }

    fn item_done(&mut self, output_index: Option<usize>, item: Option<Item>, out: &mut Vec<Event>) {
        if output_index != self.open_item {
            return;
        }
        if let Some(item) = item {
            if item.kind == "function_call" && !self.streamed_arguments {
                if let Some(args) = item.arguments.filter(|a| !a.is_empty()) {
                    self.core.delta(out, DeltaContent::InputJson(args));
                }
            }
        }
        self.core.close(out, None);
        self.open_item = None;
    }

    fn on_event(&mut self, event: StreamEvent<'_>, out: &mut Vec<Event>) {
        self.core.ensure_started(out);
        let delta = event.delta.map(Cow::into_owned);
        match event.kind.as_ref() {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(d) = delta {
                    self.content_delta(event.output_index, DeltaContent::Text(d), out);
                }
            }
            "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta"
            // Vercel AI Gateway's name for raw reasoning deltas.
            | "response.reasoning.delta" => {
                if let Some(d) = delta {
                    // Separate consecutive summary parts the way the API renders them.
                    let new_part = self.summary_index.is_some()
                        && event.summary_index.is_some()
                        && self.summary_index != event.summary_index
                        && self.open_item == event.output_index;
                    self.summary_index = event.summary_index.or(self.summary_index);
                    let text = if new_part { format!("\n\n{d}") } else { d };
                    self.content_delta(event.output_index, DeltaContent::Thinking(text), out);
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(d) = delta {
                    if event.output_index == self.open_item
                        && self.core.open_block_type() == Some(BlockType::ToolUse)
                    {
                        self.streamed_arguments = true;
                        self.core.delta(out, DeltaContent::InputJson(d));
                    }
                }
            }
            "response.output_item.added" => {
                if let Some(item) = event.item {
                    self.item_added(event.output_index, item, out);
                }
            }
            "response.output_item.done" => self.item_done(event.output_index, event.item, out),
            "response.completed" | "response.incomplete" => {
                let response = event.response;
                if let Some(u) = response.as_ref().and_then(|r| r.usage.as_ref()) {
                    self.core.usage(out, usage(u));
                }
                let reason = response
                    .and_then(|r| r.incomplete_details)
                    .and_then(|d| d.get("reason").and_then(Value::as_str).map(str::to_owned));
                let stop = match reason.as_deref() {
                    Some("max_output_tokens") => StopReason::MaxTokens,
                    Some("content_filter") => StopReason::ContentFilter,
                    _ => StopReason::EndTurn,
                };
                self.core.complete(out, Some(stop));
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error);
                let (code, message) = match error {
                    Some(e) => error_parts(&e),
                    None => (None, "response failed".to_owned()),
                };
                self.core.fail(out, code, message);
            }
            "error" => {
                let (code, message) = match (event.error, event.message) {
                    (Some(e), _) => error_parts(&e),
                    (None, Some(m)) => error_parts(&json!({"code": event.code, "message": m})),
                    (None, None) => (None, "stream error".to_owned()),
                };
                self.core.fail(out, code, message);
            }
            _ => {}
        }
    }
}

fn usage(u: &ResponsesUsage) -> UsageEvent {
    UsageEvent {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        total_tokens: u.total_tokens,
        cache_read_input_tokens: u
            .input_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens),
        cache_creation_input_tokens: None,
    }
}

impl Decoder for ResponsesDecoder {
    fn on_sse(&mut self, _event_type: &str, data: &str, out: &mut Vec<Event>) {
        if self.core.is_finished() || data.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<StreamEvent<'_>>(data) {
            Ok(event) => self.on_event(event, out),
            Err(err) => self.core.malformed(out, "responses", data, &err, false),
        }
    }

    fn end_of_stream(&mut self, out: &mut Vec<Event>) {
        self.core.end_of_stream(out);
    }

    delegate_to_core!();
}
