//! Gemini (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`). Chunks
//! carry whole parts with no block boundaries: consecutive text (or thought) parts
//! extend one block, each `functionCall` is a complete block of its own, and the
//! stream's last chunk carries `finishReason`.

use super::core::{generate_call_id, DecoderCore};
use super::openai_chat::error_parts;
use super::{delegate_to_core, images, push_merging_roles, Decoder};
use crate::event::{BlockMetadata, DeltaContent, Event, StopReason, UsageEvent};
use crate::request::ToolChoice;
use crate::request::{arguments_as_object, tool_names_by_id, ContentPart, Request, Role};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;

pub(crate) fn encode(request: &Request) -> Value {
    let names = tool_names_by_id(&request.messages);
    // Consecutive user messages (a prompt and its `@path` files) become one content of
    // separate parts: `contents` alternate between `user` and `model`.
    let mut contents: Vec<Value> = Vec::new();
    for m in &request.messages {
        let mut parts: Vec<Value> = m
            .content
            .iter()
            .filter_map(|p| encode_part(p, &names))
            .collect();
        // Images tool calls returned follow all of the turn's function responses.
        parts.extend(m.content.iter().filter_map(|p| match p {
            ContentPart::Image {
                image,
                tool_use_id: Some(_),
            } => Some(images::gemini_part(image)),
            _ => None,
        }));
        if parts.is_empty() {
            continue;
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "model",
        };
        push_merging_roles(
            &mut contents,
            json!({"role": role, "parts": parts}),
            "parts",
        );
    }
    let mut body = json!({ "contents": contents });
    if let Some(system) = &request.system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}))
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
        if request.tool_choice == ToolChoice::None {
            body["toolConfig"] = json!({"functionCallingConfig": {"mode": "NONE"}});
        }
    }
    let mut config = serde_json::Map::new();
    if let Some(max) = request.max_output_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if let Some(thinking) = request.thinking {
        config.insert(
            "thinkingConfig".into(),
            json!({"includeThoughts": true, "thinkingBudget": thinking.budget_tokens}),
        );
    }
    if let Some(format) = &request.response_schema {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), format.schema.clone());
    }
    if !config.is_empty() {
        body["generationConfig"] = Value::Object(config);
    }
    body
}

fn encode_part(part: &ContentPart, names: &HashMap<&str, &str>) -> Option<Value> {
    Some(match part {
        ContentPart::Text { text } if text.is_empty() => return None,
        ContentPart::Text { text } => json!({"text": text}),
        ContentPart::Thinking { .. } => return None,
        ContentPart::ToolUse {
            name,
            arguments,
            signature,
            ..
        } => {
            let mut v =
                json!({"functionCall": {"name": name, "args": arguments_as_object(arguments)}});
            if let Some(sig) = signature {
                v["thoughtSignature"] = json!(sig);
            }
            v
        }
        ContentPart::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let name = names
                .get(tool_use_id.as_str())
                .copied()
                .unwrap_or("unknown_tool");
            let key = if *is_error { "error" } else { "output" };
            json!({"functionResponse": {"name": name, "response": {key: content}}})
        }
        ContentPart::Image {
            image,
            tool_use_id: None,
        } => images::gemini_part(image),
        ContentPart::Image { .. } => return None,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    total_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Default)]
pub(crate) struct GeminiDecoder {
    core: DecoderCore,
    /// Output is candidates + thoughts; each is reported separately and cumulatively,
    /// and a chunk may carry only one of them.
    candidates_tokens: Option<u64>,
    thoughts_tokens: Option<u64>,
}

impl GeminiDecoder {
    fn on_part(&mut self, part: Part, out: &mut Vec<Event>) {
        if let Some(call) = part.function_call {
            let id = call
                .id
                .filter(|s| !s.is_empty())
                .unwrap_or_else(generate_call_id);
            self.core.open(
                out,
                BlockMetadata::ToolUse {
                    id,
                    name: call.name,
                },
            );
            let args = call.args.unwrap_or_else(|| json!({}));
            self.core
                .delta(out, DeltaContent::InputJson(args.to_string()));
            if let Some(sig) = part.thought_signature {
                self.core.delta(out, DeltaContent::Signature(sig));
            }
            self.core.close(out, None);
            return;
        }
        let text = part.text.unwrap_or_default();
        let is_thought = part.thought.unwrap_or(false);
        if !text.is_empty() {
            let delta = if is_thought {
                DeltaContent::Thinking(text)
            } else {
                DeltaContent::Text(text)
            };
            self.core.delta(out, delta);
        }
        if let Some(sig) = part.thought_signature {
            if is_thought {
                self.core.delta(out, DeltaContent::Signature(sig));
            }
        }
    }

    fn on_chunk(&mut self, chunk: Chunk, out: &mut Vec<Event>) {
        self.core.ensure_started(out);
        if let Some(error) = chunk.error {
            let (code, message) = error_parts(&error);
            self.core.fail(out, code, message);
            return;
        }
        let mut finish = None;
        if let Some(candidate) = chunk.candidates.into_iter().next() {
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                self.on_part(part, out);
            }
            finish = candidate.finish_reason;
        }
        if let Some(u) = chunk.usage_metadata {
            self.candidates_tokens = u.candidates_token_count.or(self.candidates_tokens);
            self.thoughts_tokens = u.thoughts_token_count.or(self.thoughts_tokens);
            let output = match (self.candidates_tokens, self.thoughts_tokens) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
            self.core.usage(
                out,
                UsageEvent {
                    input_tokens: u.prompt_token_count,
                    output_tokens: output,
                    total_tokens: u.total_token_count,
                    cache_read_input_tokens: u.cached_content_token_count,
                    cache_creation_input_tokens: None,
                },
            );
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            self.core.fail(
                out,
                Some(reason.clone()),
                format!("prompt blocked by the provider: {reason}"),
            );
            return;
        }
        if let Some(reason) = finish.filter(|r| r != "FINISH_REASON_UNSPECIFIED") {
            let stop = match reason.as_str() {
                "STOP" => StopReason::EndTurn,
                "MAX_TOKENS" => StopReason::MaxTokens,
                "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => {
                    self.core.fail(
                        out,
                        Some(reason.clone()),
                        format!("the model produced an invalid function call ({reason})"),
                    );
                    return;
                }
                _ => StopReason::ContentFilter,
            };
            self.core.complete(out, Some(stop));
        }
    }
}

impl Decoder for GeminiDecoder {
    fn on_sse(&mut self, _event_type: &str, data: &str, out: &mut Vec<Event>) {
        if self.core.is_finished() || data.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<Chunk>(data) {
            Ok(chunk) => self.on_chunk(chunk, out),
            Err(err) => self.core.malformed(out, "gemini", data, &err, false),
        }
    }

    fn end_of_stream(&mut self, out: &mut Vec<Event>) {
        self.core.end_of_stream(out);
    }

    delegate_to_core!();
}
