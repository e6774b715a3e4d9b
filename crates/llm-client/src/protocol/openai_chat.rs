//! OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`), also the
//! dialect of llama.cpp, llama-cpp-python, Ollama, vLLM and most local servers.
//!
//! Tool-call fragments arrive keyed by `index`; servers differ in what they repeat
//! (llama-cpp-python repeats id and name in every fragment and also sends the legacy
//! `function_call`). Calls are therefore accumulated and emitted as blocks when the
//! choice finishes, which makes interleaved fragments harmless.

use super::core::{generate_call_id, DecoderCore};
use super::{delegate_to_core, images, Decoder};
use crate::event::{BlockMetadata, DeltaContent, Event, StopReason, UsageEvent};
use crate::request::ToolChoice;
use crate::request::{ContentPart, Message, Request, Role};
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

pub(crate) fn encode(request: &Request) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    // One wire message per request message, also for several user messages in a row (a
    // prompt and its `@path` files): the protocol allows it, and a file stays a message
    // of its own rather than text appended to the person's.
    for message in &request.messages {
        encode_message(message, &mut messages);
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema,
                }})
            })
            .collect();
        if request.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(max) = request.max_output_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if request.thinking.is_some() {
        body["reasoning_effort"] = json!("medium");
    }
    if let Some(format) = &request.response_schema {
        body["response_format"] = json!({"type": "json_schema", "json_schema":
            {"name": format.name, "schema": format.schema, "strict": true}});
    }
    body
}

fn encode_message(message: &Message, out: &mut Vec<Value>) {
    let mut text = Vec::new();
    let mut tool_calls = Vec::new();
    let mut images = Vec::new();
    let mut returned = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Text { text: t } => text.push(t.as_str()),
            ContentPart::Thinking { .. } => {}
            ContentPart::ToolUse {
                id,
                name,
                arguments,
                ..
            } => tool_calls.push(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments},
            })),
            // Tool results must directly follow the assistant message that asked for them.
            ContentPart::ToolResult {
                tool_use_id,
                content,
                ..
            } => out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content})),
            ContentPart::Image {
                image,
                tool_use_id: None,
            } => images.push(images::chat_part(image)),
            ContentPart::Image {
                image,
                tool_use_id: Some(id),
            } => returned.push((id.as_str(), image)),
        }
    }
    let content = text.join("\n\n");
    match message.role {
        // With an image, the content is a list of parts; without, the plain string it
        // always was (the same bytes as before images existed).
        Role::User if !images.is_empty() => {
            let mut parts = Vec::new();
            if !content.is_empty() {
                parts.push(json!({"type": "text", "text": content}));
            }
            parts.extend(images);
            out.push(json!({"role": "user", "content": parts}));
        }
        Role::User if !content.is_empty() => out.push(json!({"role": "user", "content": content})),
        Role::User => {}
        Role::Assistant => {
            let mut m = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                if content.is_empty() {
                    m["content"] = Value::Null;
                }
                m["tool_calls"] = Value::Array(tool_calls);
            }
            out.push(m);
        }
    }
    if !returned.is_empty() {
        out.push(images::chat_returned(&returned));
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    /// OpenAI's refusal text, sent instead of `content`.
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    #[serde(default, borrow)]
    function_call: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ChatUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
pub(crate) struct ChatDecoder {
    core: DecoderCore,
    calls: Vec<PendingCall>,
    uses_tool_calls_field: bool,
    finish_reason: Option<Option<StopReason>>,
}

impl ChatDecoder {
    fn call_at(&mut self, index: usize) -> &mut PendingCall {
        if self.calls.len() <= index {
            self.calls.resize_with(index + 1, PendingCall::default);
        }
        &mut self.calls[index]
    }

    /// Where a fragment without `index` belongs (Gemini's OpenAI-compatible endpoint sends
    /// each call whole, with its own id, and no index): the call with its id, a new call
    /// for a new id, else the call it continues.
    fn index_without_index(&self, position: usize, id: Option<&str>) -> usize {
        match id.filter(|id| !id.is_empty()) {
            Some(id) => self
                .calls
                .iter()
                .position(|c| c.id == id)
                .unwrap_or_else(|| {
                    // A new id: the next free slot (a slot whose call has no id yet
                    // takes it).
                    self.calls
                        .iter()
                        .position(|c| c.id.is_empty() && c.name.is_empty())
                        .unwrap_or(self.calls.len())
                }),
            None => self
                .calls
                .len()
                .saturating_sub(1)
                .max(position.min(self.calls.len())),
        }
    }

    fn merge_fragment(&mut self, index: usize, id: Option<&str>, f: Option<&FunctionDelta<'_>>) {
        let call = self.call_at(index);
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            if call.id.is_empty() {
                call.id = id.to_owned();
            }
        }
        let Some(f) = f else { return };
        if let Some(name) = f.name.as_deref().filter(|s| !s.is_empty()) {
            // Servers that repeat the name in every fragment send it whole each time.
            if call.name.is_empty() {
                call.name = name.to_owned();
            } else if call.name != name {
                tracing::debug!(first = %call.name, later = %name, "tool call renamed mid-stream; keeping the first name");
            }
        }
        if let Some(args) = f.arguments.as_deref() {
            call.arguments.push_str(args);
        }
    }

    /// Emits accumulated tool calls as blocks. `only_complete` keeps calls whose
    /// arguments are not valid JSON out (the stream was cut while they streamed).
    fn flush_calls(&mut self, out: &mut Vec<Event>, only_complete: bool) {
        for call in std::mem::take(&mut self.calls) {
            if call.name.is_empty() && call.arguments.is_empty() {
                continue;
            }
            let complete = call.arguments.trim().is_empty()
                || serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_ok();
            if only_complete && !complete {
                tracing::warn!(name = %call.name, "dropping tool call cut off mid-arguments");
                continue;
            }
            let id = if call.id.is_empty() {
                generate_call_id()
            } else {
                call.id
            };
            self.core.open(
                out,
                BlockMetadata::ToolUse {
                    id,
                    name: call.name,
                },
            );
            if !call.arguments.is_empty() {
                // Counted as the fragments arrived.
                self.core
                    .push_delta(out, DeltaContent::InputJson(call.arguments));
            }
            self.core.close(out, None);
        }
    }

    fn on_chunk(&mut self, chunk: Chunk<'_>, out: &mut Vec<Event>) {
        self.core.ensure_started(out);
        if let Some(error) = chunk.error {
            let (code, message) = error_parts(&error);
            self.core.fail(out, code, message);
            return;
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.on_delta(delta, out);
            }
            // Some llama.cpp-derived servers send `"finish_reason": ""` on every chunk.
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                let stop = map_finish_reason(&reason);
                self.core.close(out, stop);
                self.flush_calls(out, false);
                self.finish_reason = Some(stop);
            }
        }
        if let Some(u) = chunk.usage {
            self.core.usage(
                out,
                UsageEvent {
                    input_tokens: u.prompt_tokens,
                    output_tokens: u.completion_tokens,
                    total_tokens: u.total_tokens,
                    cache_read_input_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
                    cache_creation_input_tokens: None,
                },
            );
        }
    }

    fn on_delta(&mut self, delta: Delta<'_>, out: &mut Vec<Event>) {
        // Servers send either field, and some send both with one of them empty.
        let thinking = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find(|t| !t.is_empty());
        if let Some(t) = thinking {
            self.core.delta(out, DeltaContent::Thinking(t.into_owned()));
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.core.delta(out, DeltaContent::Text(text.into_owned()));
            }
        }
        if let Some(calls) = delta.tool_calls {
            self.uses_tool_calls_field = true;
            let size = calls
                .iter()
                .filter_map(|c| c.function.as_ref()?.arguments.as_deref())
                .map(str::len)
                .sum();
            if !self.core.take(out, size) {
                return;
            }
            for (position, call) in calls.iter().enumerate() {
                let index = match call.index {
                    Some(index) => index,
                    None => self.index_without_index(position, call.id.as_deref()),
                };
                self.merge_fragment(index, call.id.as_deref(), call.function.as_ref());
            }
        } else if let Some(f) = delta.function_call {
            // The legacy field counts only from servers that never send `tool_calls`.
            let size = f.arguments.as_deref().map_or(0, str::len);
            if !self.uses_tool_calls_field && self.core.take(out, size) {
                self.merge_fragment(0, None, Some(&f));
            }
        }
    }
}

impl Decoder for ChatDecoder {
    fn on_sse(&mut self, event_type: &str, data: &str, out: &mut Vec<Event>) {
        if self.core.is_finished() {
            return;
        }
        let data = data.trim();
        if data == "[DONE]" {
            self.finish(out, true);
            return;
        }
        if data.is_empty() {
            return;
        }
        if event_type == "error" {
            // llama.cpp's `error:` field holds the error object itself, not a chunk.
            let error = serde_json::from_str::<Value>(data).unwrap_or(Value::String(data.into()));
            let (code, message) = error_parts(error.get("error").unwrap_or(&error));
            self.core.fail(out, code, message);
            return;
        }
        match serde_json::from_str::<Chunk<'_>>(data) {
            Ok(chunk) => self.on_chunk(chunk, out),
            Err(err) => {
                let in_call = !self.calls.is_empty();
                self.core.malformed(out, "chat", data, &err, in_call)
            }
        }
    }

    fn end_of_stream(&mut self, out: &mut Vec<Event>) {
        self.finish(out, false);
    }

    delegate_to_core!();
}

impl ChatDecoder {
    fn finish(&mut self, out: &mut Vec<Event>, saw_done: bool) {
        if self.core.is_finished() {
            return;
        }
        match self.finish_reason {
            Some(stop) => self.core.complete(out, stop),
            None => {
                // No finish_reason: keep text; keep calls only if their JSON is whole.
                if self.core.open_block_type() != Some(crate::event::BlockType::ToolUse) {
                    self.core.close(out, None);
                }
                self.flush_calls(out, !saw_done);
                self.core.end_of_stream(out);
            }
        }
    }
}

fn map_finish_reason(reason: &str) -> Option<StopReason> {
    match reason {
        "stop" | "eos" => Some(StopReason::EndTurn),
        "length" => Some(StopReason::MaxTokens),
        "tool_calls" | "function_call" => Some(StopReason::ToolUse),
        "content_filter" => Some(StopReason::ContentFilter),
        other => {
            tracing::debug!(reason = other, "unknown finish_reason");
            Some(StopReason::EndTurn)
        }
    }
}

/// Extracts code and message from an `{"error": ...}` payload of any common shape.
pub(crate) fn error_parts(error: &Value) -> (Option<String>, String) {
    let code = error
        .get("code")
        .or_else(|| error.get("type"))
        .or_else(|| error.get("status"))
        .and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
    let message = match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => match error {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    };
    (code, message)
}
