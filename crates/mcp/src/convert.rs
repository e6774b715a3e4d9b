//! An MCP `CallToolResult` as what the model reads: text, and the images it is shown.
//!
//! Text content stays text; structured content becomes JSON text (only when no text
//! block carries it already: servers send both for older clients); resource links and
//! embedded resources become their URI (an embedded text resource also its text).
//!
//! An image (PNG, JPEG, GIF or WebP, as valid base64) goes the way of `read_file`'s
//! images: `saki_tools::image` checks it, scales it down when it is large and hashes it,
//! and it is named `<tool> image N` (N counts the result's image blocks from 1). The text
//! says `[Image: <tool> image N (PNG 800×600)]` where it stood, and the Worker sends the
//! image after the result as an image part in every protocol (or the usual note, to a
//! model without vision). An image of another type, one that does not decode, any image
//! in an error result and every image after the first [`MAX_IMAGES`] of a result become
//! a one-line note instead (a server sending hundreds costs no decoding); so does audio.
//! The output cap is applied by the caller, to the text (images have limits of their own).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use saki_llm_worker::NamedImage;

/// Image blocks of one result that are decoded and shown; later ones are notes.
pub const MAX_IMAGES: usize = 4;

/// A result as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// The text of the tool result.
    pub text: String,
    /// The server said the call failed.
    pub is_error: bool,
    /// Images shown with the result, in the result's order.
    pub images: Vec<NamedImage>,
}

/// Whether the result holds an image block: converting it then decodes images, work to
/// do off the runtime's threads.
pub fn has_images(result: &CallToolResult) -> bool {
    result
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Image(_)))
}

/// The result as the model reads it; `tool` is the name the model calls the tool by.
pub fn convert(result: &CallToolResult, tool: &str) -> Converted {
    let failed = result.is_error.unwrap_or(false);
    convert_with(result, tool, failed.then_some("the tool reported an error"))
}

/// As [`convert`], with every image a note saying `why` it is not shown.
pub fn convert_without_images(result: &CallToolResult, tool: &str, why: &str) -> Converted {
    convert_with(result, tool, Some(why))
}

fn convert_with(result: &CallToolResult, tool: &str, skip_images: Option<&str>) -> Converted {
    let too_many = format!("more than {MAX_IMAGES} images in one result");
    let mut images = Vec::new();
    let mut number = 0;
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len() + 1);
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Image(image) => {
                number += 1;
                let name = format!("{tool} image {number}");
                let found = ImageBlock {
                    name: &name,
                    mime_type: &image.mime_type,
                    data: &image.data,
                };
                let skip = skip_images.or((number > MAX_IMAGES).then_some(too_many.as_str()));
                found.text(skip, &mut images)
            }
            other => block_text(other),
        });
    }
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
    Converted {
        text,
        is_error,
        images,
    }
}

/// The image types every protocol saki speaks takes (`saki_tools::image` reads the
/// type from the bytes; this is only what the server declares).
const IMAGE_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/gif",
    "image/webp",
];

struct ImageBlock<'a> {
    name: &'a str,
    mime_type: &'a str,
    data: &'a str,
}

impl ImageBlock<'_> {
    /// Its line in the text; the image joins `images` when it can be shown.
    fn text(&self, skip: Option<&str>, images: &mut Vec<NamedImage>) -> String {
        let name = self.name;
        if let Some(why) = skip {
            return format!(
                "[Image not shown: {name} ({}, {} bytes): {why}]",
                self.mime_type,
                decoded_len(self.data)
            );
        }
        let declared = self
            .mime_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if !IMAGE_TYPES.contains(&declared.as_str()) {
            return format!(
                "[Image not shown: {name} is {}; only PNG, JPEG, GIF and WebP images are \
                 passed to the model]",
                self.mime_type
            );
        }
        match saki_tools::image::prepare_base64(self.data, name) {
            Ok(prepared) => {
                let text = format!("[Image: {name} ({})]", prepared.describe());
                images.push(NamedImage {
                    path: name.to_owned(),
                    image: prepared.image,
                });
                text
            }
            Err(e) => format!("[Image not shown: {e}]"),
        }
    }
}

fn same_json(text: &str, value: &serde_json::Value) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v == *value)
}

/// A block other than an image (`convert_with` numbers those) as text.
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
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
    use saki_testkit::TINY_PNG_BASE64;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    fn text_of(value: serde_json::Value) -> (String, bool) {
        let converted = convert(&result(value), "t");
        (converted.text, converted.is_error)
    }

    #[test]
    fn every_content_kind_becomes_text() {
        let (text, is_error) = text_of(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
                {"type": "resource", "resource": {"uri": "mem://n", "text": "note"}},
                {"type": "resource", "resource": {"uri": "mem://b", "blob": "AAAA", "mimeType": "application/zip"}}
            ]
        }));
        assert!(!is_error);
        assert_eq!(
            text,
            "hello\n\
             [audio: audio/wav, 3 bytes; audio from tools is not passed to the model]\n\
             file:///a.txt\n\
             [resource: mem://n]\nnote\n\
             [resource: mem://b, application/zip, 3 bytes]"
        );
    }

    #[test]
    fn a_valid_png_becomes_an_image_named_after_the_tool() {
        let r = result(json!({"content": [
            {"type": "text", "text": "the chart:"},
            {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"}
        ]}));
        assert!(has_images(&r));
        let converted = convert(&r, "mcp__s__chart");
        assert_eq!(
            converted.text,
            "the chart:\n[Image: mcp__s__chart image 1 (PNG 3×2)]"
        );
        let [shown] = &converted.images[..] else {
            panic!("{:?}", converted.images);
        };
        assert_eq!(shown.path, "mcp__s__chart image 1");
        assert_eq!(shown.image.media_type, "image/png");
        assert_eq!((shown.image.width, shown.image.height), (3, 2));
        assert_eq!(shown.image.sha256.len(), 64);
        let sent = shown.image.data.as_ref().unwrap();
        assert_eq!(
            sent.as_str(),
            TINY_PNG_BASE64,
            "a small image is sent as it is"
        );
    }

    #[test]
    fn bad_base64_or_bytes_are_a_note() {
        let converted = convert(
            &result(json!({"content": [
                {"type": "image", "data": "!!not base64!!", "mimeType": "image/png"},
                {"type": "image", "data": "aGVsbG8h", "mimeType": "image/png"},
                {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"}
            ]})),
            "t",
        );
        assert_eq!(
            converted.text,
            "[Image not shown: t image 1 is not valid base64]\n\
             [Image not shown: t image 2 is not a PNG, JPEG, GIF or WebP image (its content is \
             something else)]\n\
             [Image: t image 3 (PNG 3×2)]"
        );
        assert_eq!(converted.images.len(), 1);
        assert_eq!(converted.images[0].path, "t image 3");
    }

    #[test]
    fn images_after_the_fourth_are_notes() {
        let image = json!({"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"});
        let content: Vec<_> = std::iter::repeat_n(image, 300).collect();
        let converted = convert(&result(json!({ "content": content })), "t");
        let names: Vec<&str> = converted.images.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(names, ["t image 1", "t image 2", "t image 3", "t image 4"]);
        let lines: Vec<&str> = converted.text.lines().collect();
        assert_eq!(lines.len(), 300);
        assert_eq!(lines[3], "[Image: t image 4 (PNG 3×2)]");
        assert_eq!(
            lines[4],
            "[Image not shown: t image 5 (image/png, 85 bytes): more than 4 images in one \
             result]"
        );
        assert!(lines[299].starts_with("[Image not shown: t image 300 "));
    }

    #[test]
    fn an_unsupported_image_type_is_a_note() {
        let converted = convert(
            &result(json!({"content": [
                {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/svg+xml"}
            ]})),
            "t",
        );
        assert_eq!(
            converted.text,
            "[Image not shown: t image 1 is image/svg+xml; only PNG, JPEG, GIF and WebP \
             images are passed to the model]"
        );
        assert!(converted.images.is_empty());
        // The declared type is read loosely; the bytes decide what is sent.
        let loose = convert(
            &result(json!({"content": [
                {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "Image/JPEG; q=1"}
            ]})),
            "t",
        );
        assert_eq!(loose.images[0].image.media_type, "image/png");
    }

    #[test]
    fn images_of_an_error_result_are_notes() {
        let converted = convert(
            &result(json!({"isError": true, "content": [
                {"type": "text", "text": "no"},
                {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"}
            ]})),
            "t",
        );
        assert!(converted.is_error && converted.images.is_empty());
        assert_eq!(
            converted.text,
            "no\n[Image not shown: t image 1 (image/png, 85 bytes): the tool reported an error]"
        );
    }

    #[test]
    fn structured_content_is_json_unless_a_text_block_repeats_it() {
        let alone = json!({"content": [], "structuredContent": {"sum": 3}});
        assert_eq!(text_of(alone).0, "{\n  \"sum\": 3\n}");
        let repeated = json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3}
        });
        assert_eq!(text_of(repeated).0, "{\"sum\": 3}");
    }

    #[test]
    fn errors_and_empty_results_say_so() {
        let failed = json!({"content": [{"type": "text", "text": "no"}], "isError": true});
        assert_eq!(text_of(failed), ("no".to_owned(), true));
        assert_eq!(
            text_of(json!({"content": []})).0,
            "(the tool returned no content)"
        );
    }
}
