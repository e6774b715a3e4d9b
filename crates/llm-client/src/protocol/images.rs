//! Image parts on the wire, per protocol. An image of its own (`@path`, a pasted path)
//! goes where the protocol puts user images. An image a tool returned (`tool_use_id`
//! set) goes into that call's result where the protocol lets a result hold one
//! (Anthropic `tool_result`, Responses `function_call_output`), and right after the
//! results otherwise: Chat Completions `tool` messages hold text only, so the images
//! follow as one user message; Gemini's `functionResponse` holds media only on Gemini 3
//! models, so the images follow the responses as `inlineData` parts of the same turn,
//! which every Gemini vision model reads.

use crate::image::ImagePart;
use serde_json::{json, Value};

/// Chat Completions: an image content part.
pub(crate) fn chat_part(image: &ImagePart) -> Value {
    json!({"type": "image_url", "image_url": {"url": image.data_url()}})
}

/// Chat Completions: the user message that carries the images tool calls returned, after
/// the `tool` messages (which must follow their assistant message without a gap).
pub(crate) fn chat_returned(returned: &[(&str, &ImagePart)]) -> Value {
    let mut content = Vec::new();
    for (id, image) in returned {
        content
            .push(json!({"type": "text", "text": format!("[image returned by tool call {id}]")}));
        content.push(chat_part(image));
    }
    json!({"role": "user", "content": content})
}

/// Responses: an `input_image` content part.
pub(crate) fn responses_part(image: &ImagePart) -> Value {
    json!({"type": "input_image", "image_url": image.data_url()})
}

/// Responses: a user image joins the user message the same request message started at
/// `start` (its `[Image: path]` label), else becomes a message of its own.
pub(crate) fn responses_user(input: &mut Vec<Value>, start: usize, image: &ImagePart) {
    if input.len() > start {
        if let Some(content) = input
            .last_mut()
            .filter(|item| item["type"] == "message" && item["role"] == "user")
            .and_then(|item| item.get_mut("content"))
            .and_then(Value::as_array_mut)
        {
            content.push(responses_part(image));
            return;
        }
    }
    input.push(json!({"type": "message", "role": "user", "content": [responses_part(image)]}));
}

/// Responses: a returned image goes into its call's `function_call_output`, whose
/// `output` may be a list of `input_text` / `input_image` parts.
pub(crate) fn responses_returned(input: &mut [Value], call_id: &str, image: &ImagePart) {
    let Some(output) = input
        .iter_mut()
        .rev()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .and_then(|item| item.get_mut("output"))
    else {
        tracing::debug!(call_id, "no function_call_output for a returned image");
        return;
    };
    if let Value::String(text) = output {
        let text = std::mem::take(text);
        *output = Value::Array(if text.is_empty() {
            Vec::new()
        } else {
            vec![json!({"type": "input_text", "text": text})]
        });
    }
    if let Some(parts) = output.as_array_mut() {
        parts.push(responses_part(image));
    }
}

/// Anthropic: an `image` block with a base64 source.
pub(crate) fn anthropic_block(image: &ImagePart) -> Value {
    json!({"type": "image", "source": {
        "type": "base64", "media_type": image.media_type, "data": image.data.as_str(),
    }})
}

/// Anthropic: a returned image goes into its call's `tool_result`, whose `content` may be
/// a list of text and image blocks (an empty text block would be refused).
pub(crate) fn anthropic_returned(blocks: &mut Vec<Value>, call_id: &str, image: &ImagePart) {
    let Some(content) = blocks
        .iter_mut()
        .rev()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call_id)
        .and_then(|b| b.get_mut("content"))
    else {
        // Not expected (history pairs every image with its result); still shown.
        blocks.push(anthropic_block(image));
        return;
    };
    if let Value::String(text) = content {
        let text = std::mem::take(text);
        *content = Value::Array(if text.is_empty() {
            Vec::new()
        } else {
            vec![json!({"type": "text", "text": text})]
        });
    }
    if let Some(parts) = content.as_array_mut() {
        parts.push(anthropic_block(image));
    }
}

/// Gemini: an `inlineData` part (camelCase like the rest of the request; the API also
/// reads `inline_data`).
pub(crate) fn gemini_part(image: &ImagePart) -> Value {
    json!({"inlineData": {"mimeType": image.media_type, "data": image.data.as_str()}})
}
