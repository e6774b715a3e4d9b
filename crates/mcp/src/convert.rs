//! An MCP `CallToolResult` as the text the model reads.
//!
//! Text content stays text; structured content becomes JSON text (only when no text
//! block carries it already: servers send both for older clients); resource links and
//! embedded resources become their URI (an embedded text resource also its text);
//! images and audio become a short note, since saki's tool results carry text only in
//! every protocol it speaks. The output cap is applied by the caller.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The result's content as one text, and whether the server said it is an error.
pub fn result_text(result: &CallToolResult) -> (String, bool) {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if let Some(structured) = &result.structured_content {
        let json = serde_json::to_string_pretty(structured).unwrap_or_default();
        let compact = structured.to_string();
        // Servers that send structured content usually repeat it as a text block.
        let repeated = result.content.iter().any(|block| match block {
            ContentBlock::Text(t) => {
                let text = t.text.trim();
                text == json || text == compact || same_json(text, structured)
            }
            _ => false,
        });
        if !repeated {
            parts.push(json);
        }
    }
    let text = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let is_error = result.is_error.unwrap_or(false);
    let text = if text.is_empty() {
        if is_error {
            "the tool failed and said nothing more".to_owned()
        } else {
            "(the tool returned no content)".to_owned()
        }
    } else {
        text
    };
    (text, is_error)
}

fn same_json(text: &str, value: &serde_json::Value) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v == *value)
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes; images from tools are not shown to the model]",
            image.mime_type,
            decoded_len(&image.data)
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes; audio from tools is not passed to the model]",
            audio.mime_type,
            decoded_len(&audio.data)
        ),
        ContentBlock::ResourceLink(link) => link.uri.clone(),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                decoded_len(blob)
            ),
            #[allow(unreachable_patterns)]
            _ => "[a resource of a kind saki cannot show]".to_owned(),
        },
        // The enum is non-exhaustive: a kind added later is named, not dropped silently.
        #[allow(unreachable_patterns)]
        _ => "[content of a kind saki cannot show]".to_owned(),
    }
}

/// Bytes a base64 text decodes to.
fn decoded_len(base64: &str) -> usize {
    let trimmed = base64.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn every_content_kind_becomes_text() {
        let r = result(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGVsbG8h", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
                {"type": "resource", "resource": {"uri": "mem://n", "text": "note"}},
                {"type": "resource", "resource": {"uri": "mem://b", "blob": "AAAA", "mimeType": "application/zip"}}
            ]
        }));
        let (text, is_error) = result_text(&r);
        assert!(!is_error);
        assert_eq!(
            text,
            "hello\n\
             [image: image/png, 6 bytes; images from tools are not shown to the model]\n\
             [audio: audio/wav, 3 bytes; audio from tools is not passed to the model]\n\
             file:///a.txt\n\
             [resource: mem://n]\nnote\n\
             [resource: mem://b, application/zip, 3 bytes]"
        );
    }

    #[test]
    fn structured_content_is_json_unless_a_text_block_repeats_it() {
        let alone = result(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(result_text(&alone).0, "{\n  \"sum\": 3\n}");
        let repeated = result(json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3}
        }));
        assert_eq!(result_text(&repeated).0, "{\"sum\": 3}");
    }

    #[test]
    fn errors_and_empty_results_say_so() {
        let failed = result(json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        assert_eq!(result_text(&failed), ("no".to_owned(), true));
        let empty = result(json!({"content": []}));
        assert_eq!(result_text(&empty).0, "(the tool returned no content)");
    }
}
