//! A `session/prompt`'s content blocks as a prompt for the engine: text as it is, a link
//! to a workspace file as an `@path` reference (read, capped and scope-checked by the
//! engine like a typed one), an embedded resource as an attachment holding the editor's
//! text (an unsaved buffer), an image as an image part.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use base64::Engine as _;
use saki_engine::Attachment;

/// A prompt split into what the engine takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptParts {
    pub text: String,
    pub attachments: Vec<Attachment>,
    /// What could not be taken (audio, a binary resource), for a note to the person.
    pub refused: Vec<String>,
}

/// The engine's prompt for `blocks`.
pub fn prompt_of(blocks: &[ContentBlock]) -> PromptParts {
    let mut parts = PromptParts::default();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => push_text(&mut parts.text, &text.text),
            ContentBlock::ResourceLink(link) => match file_path(&link.uri) {
                Some(path) => push_text(&mut parts.text, &reference(&path)),
                // Not a file: the model can only be told where it is.
                None => push_text(&mut parts.text, &link.uri),
            },
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(res) => {
                    parts.attachments.push(Attachment::Text {
                        path: file_path(&res.uri).unwrap_or_else(|| res.uri.clone()),
                        text: res.text.clone(),
                    });
                }
                EmbeddedResourceResource::BlobResourceContents(res) => {
                    let image = res.mime_type.as_deref().is_some_and(is_image_type);
                    match decode(&res.blob).filter(|_| image) {
                        Some(data) => parts.attachments.push(Attachment::Image {
                            name: file_path(&res.uri).unwrap_or_else(|| res.uri.clone()),
                            data,
                        }),
                        None => parts.refused.push(format!("{} (binary)", res.uri)),
                    }
                }
                _ => parts
                    .refused
                    .push("a resource of an unknown kind".to_owned()),
            },
            ContentBlock::Image(image) => match decode(&image.data) {
                Some(data) => parts.attachments.push(Attachment::Image {
                    name: image
                        .uri
                        .as_deref()
                        .and_then(file_path)
                        .unwrap_or_else(|| "image".to_owned()),
                    data,
                }),
                None => parts
                    .refused
                    .push("an image that is not valid base64".into()),
            },
            ContentBlock::Audio(_) => parts.refused.push("audio".to_owned()),
            _ => parts.refused.push("a block of an unknown kind".to_owned()),
        }
    }
    parts
}

/// Blocks join with a space, as a person would type a mention inside a sentence.
fn push_text(out: &mut String, text: &str) {
    if !out.is_empty()
        && !out.ends_with(char::is_whitespace)
        && !text.starts_with(char::is_whitespace)
    {
        out.push(' ');
    }
    out.push_str(text);
}

/// `@path`, quoted when the path has spaces (the engine's reference syntax).
fn reference(path: &str) -> String {
    if path.contains(char::is_whitespace) {
        format!("@\"{path}\"")
    } else {
        format!("@{path}")
    }
}

/// The path of a `file://` URI (percent-escapes decoded); `None` for any other scheme.
fn file_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: only the local host names a file here.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()
        .map(|p| p.into_owned())
}

fn decode(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()
}

fn is_image_type(mime: &str) -> bool {
    mime.starts_with("image/")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_client_protocol::v1::schema::{
        BlobResourceContents, EmbeddedResource, ImageContent, ResourceLink, TextContent,
        TextResourceContents,
    };

    #[test]
    fn text_and_links_become_one_prompt_with_references() {
        let parts = prompt_of(&[
            ContentBlock::Text(TextContent::new("explain")),
            ContentBlock::ResourceLink(ResourceLink::new("calc.py", "file:///w/src/calc.py")),
            ContentBlock::ResourceLink(ResourceLink::new("my file", "file:///w/my%20file.txt")),
            ContentBlock::ResourceLink(ResourceLink::new("doc", "https://example.com/doc")),
        ]);
        assert_eq!(
            parts.text,
            "explain @/w/src/calc.py @\"/w/my file.txt\" https://example.com/doc"
        );
        assert!(parts.attachments.is_empty());
    }

    #[test]
    fn embedded_text_is_an_attachment_at_its_path() {
        let parts = prompt_of(&[ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                "unsaved text",
                "file:///w/a.py",
            )),
        ))]);
        assert_eq!(
            parts.attachments,
            vec![Attachment::Text {
                path: "/w/a.py".into(),
                text: "unsaved text".into()
            }]
        );
    }

    #[test]
    fn images_are_decoded_and_what_cannot_be_taken_is_named() {
        let parts = prompt_of(&[
            ContentBlock::Image(ImageContent::new("AAEC", "image/png")),
            ContentBlock::Image(ImageContent::new("%%%", "image/png")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::BlobResourceContents(BlobResourceContents::new(
                    "AAEC",
                    "file:///w/a.bin",
                )),
            )),
        ]);
        assert_eq!(
            parts.attachments,
            vec![Attachment::Image {
                name: "image".into(),
                data: vec![0, 1, 2]
            }]
        );
        assert_eq!(parts.refused.len(), 2);
    }

    #[test]
    fn only_local_file_uris_are_paths() {
        assert_eq!(file_path("file:///a/b"), Some("/a/b".into()));
        assert_eq!(file_path("file://localhost/a"), Some("/a".into()));
        assert_eq!(file_path("file://other/a"), None);
        assert_eq!(file_path("zed://a"), None);
        assert_eq!(file_path("file:///%ff"), None);
    }
}
