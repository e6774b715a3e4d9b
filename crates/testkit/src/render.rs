//! Renders a scripted [`Turn`] into each provider's documented SSE dialect. Written
//! independently of saki's decoders so that tests check one against the other.

use crate::script::{fragments, pieces, Block, Finish, Turn};
use serde_json::{json, Value};

/// The wire protocol a request asked for, told by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

impl Wire {
    pub fn from_path(path: &str) -> Option<Wire> {
        if path.ends_with("/chat/completions") {
            Some(Wire::Chat)
        } else if path.ends_with("/responses") {
            Some(Wire::Responses)
        } else if path.ends_with("/messages") {
            Some(Wire::Anthropic)
        } else if path.contains(":streamGenerateContent") {
            Some(Wire::Gemini)
        } else {
            None
        }
    }
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn named(v: &Value) -> String {
    let name = v["type"].as_str().unwrap_or("message");
    format!("event: {name}\ndata: {v}\n\n")
}

pub fn render(wire: Wire, turn: &Turn, model: &str) -> Vec<String> {
    match wire {
        Wire::Chat => chat(turn, model),
        Wire::Responses => responses(turn, model),
        Wire::Anthropic => anthropic(turn, model),
        Wire::Gemini => gemini(turn),
    }
}

fn chat(turn: &Turn, model: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        data(
            &json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut tool_index = 0;
    for block in &turn.blocks {
        match block {
            Block::Text(t) => out.extend(
                pieces(t)
                    .into_iter()
                    .map(|p| chunk(json!({"content": p}), Value::Null)),
            ),
            Block::Thinking(t) => out.extend(
                pieces(t)
                    .into_iter()
                    .map(|p| chunk(json!({"reasoning_content": p}), Value::Null)),
            ),
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                out.push(chunk(
                    json!({"tool_calls": [{"index": tool_index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for f in fragments(arguments, 8) {
                    out.push(chunk(json!({"tool_calls": [{"index": tool_index, "function": {"arguments": f}}]}), Value::Null));
                }
                tool_index += 1;
            }
        }
    }
    let reason = match turn.finish {
        Finish::None => return out,
        Finish::MaxTokens => "length",
        Finish::EndTurn if turn.has_tool_calls() => "tool_calls",
        Finish::EndTurn => "stop",
    };
    out.push(chunk(json!({}), json!(reason)));
    if let Some(u) = turn.usage {
        out.push(data(&json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
            "model": model, "choices": [], "usage": {"prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens, "total_tokens": u.input_tokens + u.output_tokens}})));
    }
    out.push("data: [DONE]\n\n".to_owned());
    out
}

fn responses(turn: &Turn, model: &str) -> Vec<String> {
    let mut seq = 0;
    let mut out = Vec::new();
    let mut push = |mut v: Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        out.push(named(&v));
    };
    push(
        json!({"type": "response.created", "response": {"id": "resp_mock", "object": "response",
        "status": "in_progress", "model": model, "output": []}}),
    );
    for (i, block) in turn.blocks.iter().enumerate() {
        match block {
            Block::Text(t) => {
                let id = format!("msg_{i}");
                push(
                    json!({"type": "response.output_item.added", "output_index": i, "item": {"id": id,
                    "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
                );
                push(
                    json!({"type": "response.content_part.added", "item_id": id, "output_index": i,
                    "content_index": 0, "part": {"type": "output_text", "text": ""}}),
                );
                for p in pieces(t) {
                    push(
                        json!({"type": "response.output_text.delta", "item_id": id, "output_index": i,
                        "content_index": 0, "delta": p}),
                    );
                }
                push(
                    json!({"type": "response.output_text.done", "item_id": id, "output_index": i,
                    "content_index": 0, "text": t}),
                );
                push(
                    json!({"type": "response.output_item.done", "output_index": i, "item": {"id": id,
                    "type": "message", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": t}]}}),
                );
            }
            Block::Thinking(t) => {
                let id = format!("rs_{i}");
                push(
                    json!({"type": "response.output_item.added", "output_index": i,
                    "item": {"id": id, "type": "reasoning", "summary": []}}),
                );
                for p in pieces(t) {
                    push(
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                        "output_index": i, "summary_index": 0, "delta": p}),
                    );
                }
                push(
                    json!({"type": "response.output_item.done", "output_index": i, "item": {"id": id,
                    "type": "reasoning", "summary": [{"type": "summary_text", "text": t}]}}),
                );
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                let item_id = format!("fc_{i}");
                push(
                    json!({"type": "response.output_item.added", "output_index": i, "item": {"id": item_id,
                    "type": "function_call", "status": "in_progress", "call_id": id, "name": name, "arguments": ""}}),
                );
                for f in fragments(arguments, 8) {
                    push(
                        json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                        "output_index": i, "delta": f}),
                    );
                }
                push(
                    json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                    "output_index": i, "arguments": arguments}),
                );
                push(
                    json!({"type": "response.output_item.done", "output_index": i, "item": {"id": item_id,
                    "type": "function_call", "status": "completed", "call_id": id, "name": name,
                    "arguments": arguments}}),
                );
            }
        }
    }
    let usage = turn.usage.map(|u| json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens, "input_tokens_details": {"cached_tokens": 0}}));
    match turn.finish {
        Finish::None => {}
        Finish::EndTurn => push(
            json!({"type": "response.completed", "response": {"id": "resp_mock",
            "object": "response", "status": "completed", "model": model, "usage": usage}}),
        ),
        Finish::MaxTokens => push(
            json!({"type": "response.incomplete", "response": {"id": "resp_mock",
            "object": "response", "status": "incomplete", "model": model,
            "incomplete_details": {"reason": "max_output_tokens"}, "usage": usage}}),
        ),
    }
    out
}

fn anthropic(turn: &Turn, model: &str) -> Vec<String> {
    let mut out = Vec::new();
    let input = turn.usage.map_or(0, |u| u.input_tokens);
    out.push(named(&json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message",
        "role": "assistant", "content": [], "model": model, "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0}}})));
    for (index, block) in turn.blocks.iter().enumerate() {
        let delta =
            |d: Value| named(&json!({"type": "content_block_delta", "index": index, "delta": d}));
        match block {
            Block::Text(t) => {
                out.push(named(
                    &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
                ));
                out.extend(
                    pieces(t)
                        .into_iter()
                        .map(|p| delta(json!({"type": "text_delta", "text": p}))),
                );
            }
            Block::Thinking(t) => {
                out.push(named(
                    &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "thinking", "thinking": ""}}),
                ));
                out.extend(
                    pieces(t)
                        .into_iter()
                        .map(|p| delta(json!({"type": "thinking_delta", "thinking": p}))),
                );
                out.push(delta(
                    json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"}),
                ));
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                out.push(named(
                    &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                out.extend(
                    fragments(arguments, 8)
                        .into_iter()
                        .map(|f| delta(json!({"type": "input_json_delta", "partial_json": f}))),
                );
            }
        }
        out.push(named(
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    let reason = match turn.finish {
        Finish::None => return out,
        Finish::MaxTokens => "max_tokens",
        Finish::EndTurn if turn.has_tool_calls() => "tool_use",
        Finish::EndTurn => "end_turn",
    };
    let output = turn.usage.map_or(0, |u| u.output_tokens);
    out.push(named(
        &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
        "usage": {"output_tokens": output}}),
    ));
    out.push(named(&json!({"type": "message_stop"})));
    out
}

fn gemini(turn: &Turn) -> Vec<String> {
    let chunk = |part: Value| {
        data(&json!({"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]}))
    };
    let mut out = Vec::new();
    for block in &turn.blocks {
        match block {
            Block::Text(t) => out.extend(pieces(t).into_iter().map(|p| chunk(json!({"text": p})))),
            Block::Thinking(t) => out.extend(
                pieces(t)
                    .into_iter()
                    .map(|p| chunk(json!({"text": p, "thought": true}))),
            ),
            Block::ToolCall {
                name, arguments, ..
            } => {
                // Gemini sends whole calls with parsed args and no id.
                let args: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
                out.push(chunk(json!({"functionCall": {"name": name, "args": args}})));
            }
        }
    }
    let reason = match turn.finish {
        Finish::None => return out,
        Finish::MaxTokens => "MAX_TOKENS",
        Finish::EndTurn => "STOP",
    };
    let mut last = json!({"candidates": [{"content": {"parts": [], "role": "model"}, "finishReason": reason, "index": 0}],
        "modelVersion": "gemini-mock"});
    if let Some(u) = turn.usage {
        last["usageMetadata"] = json!({"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens,
            "totalTokenCount": u.input_tokens + u.output_tokens});
    }
    out.push(data(&last));
    out
}

/// Splits a raw SSE body into its events, byte for byte (LF or CRLF line ends), each
/// keeping its terminating blank line. A trailing partial event is kept as is.
pub fn split_sse(body: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut current = String::new();
    for line in body.split_inclusive('\n') {
        current.push_str(line);
        if line == "\n" || line == "\r\n" {
            events.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        events.push(current);
    }
    events
}
