//! Images in history. An item names its image by content (`sha256`) and says what it
//! is; the bytes travel beside it (`data`), never in the session log: saki-pod writes
//! them to its image store when the item is recorded and reads them back on resume.

use saki_llm_client::{Base64, ContentPart, ImagePart};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageRef {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// SHA-256 of the bytes sent (after any downscaling), lowercase hex.
    pub sha256: String,
    pub width: u32,
    pub height: u32,
    /// Size of the bytes sent.
    pub bytes: u64,
    /// The bytes as base64 when they are at hand; `None` for an item read back from a
    /// log whose stored copy is gone.
    #[serde(skip)]
    pub data: Option<Base64>,
}

/// Two references are the same image when they name the same content, loaded or not.
impl PartialEq for ImageRef {
    fn eq(&self, other: &Self) -> bool {
        self.media_type == other.media_type
            && self.sha256 == other.sha256
            && self.width == other.width
            && self.height == other.height
            && self.bytes == other.bytes
    }
}

impl Eq for ImageRef {}

impl ImageRef {
    /// The image as a request part, when its bytes are at hand.
    pub fn part(&self) -> Option<ImagePart> {
        self.data.as_ref().map(|data| ImagePart {
            media_type: self.media_type.clone(),
            data: data.clone(),
        })
    }

    /// `PNG 800×600`, for people and for the model's text.
    pub fn describe(&self) -> String {
        let kind = self
            .media_type
            .strip_prefix("image/")
            .unwrap_or(&self.media_type)
            .to_ascii_uppercase();
        format!("{kind} {}×{}", self.width, self.height)
    }
}

/// An image a tool returned, with the path it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedImage {
    pub path: String,
    pub image: ImageRef,
}

/// What the model reads in place of an image it cannot be sent.
pub fn image_note(path: &str, image: &ImageRef, vision: bool) -> String {
    if vision {
        format!(
            "[Image: {path} ({}) — its stored copy is gone; read it again to see it]",
            image.describe()
        )
    } else {
        format!(
            "[Image: {path} ({}) — not shown: the model in use does not accept images]",
            image.describe()
        )
    }
}

/// The parts an image item becomes: the image (after a `[Image: path]` label when it
/// stands alone), or a note when it cannot be sent.
pub(crate) fn image_parts(
    path: &str,
    image: &ImageRef,
    call_id: Option<&str>,
    vision: bool,
) -> Vec<ContentPart> {
    let part = image.part().filter(|_| vision);
    match (part, call_id) {
        (Some(image), None) => vec![
            ContentPart::Text {
                text: format!("[Image: {path}]"),
            },
            ContentPart::Image {
                image,
                tool_use_id: None,
            },
        ],
        (Some(image), Some(id)) => vec![ContentPart::Image {
            image,
            tool_use_id: Some(id.to_owned()),
        }],
        (None, _) => vec![ContentPart::Text {
            text: image_note(path, image, vision),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{to_messages, to_messages_with, Item};
    use saki_llm_client::Role;

    fn png(data: bool) -> ImageRef {
        ImageRef {
            media_type: "image/png".into(),
            sha256: "ab".repeat(32),
            width: 4,
            height: 3,
            bytes: 70,
            data: data.then(|| Base64::from_encoded("iVBORw0KGgo=")),
        }
    }

    #[test]
    fn the_log_line_names_the_image_and_holds_no_bytes() {
        let item = Item::Image {
            path: "shot.png".into(),
            image: png(true),
            call_id: None,
        };
        let line = serde_json::to_string(&item).unwrap();
        assert!(!line.contains("iVBOR"), "{line}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap(),
            serde_json::json!({"type": "image", "path": "shot.png", "media_type": "image/png",
                "sha256": "ab".repeat(32), "width": 4, "height": 3, "bytes": 70})
        );
        // Read back it is the same image, its bytes not loaded yet.
        let back: Item = serde_json::from_str(&line).unwrap();
        assert_eq!(back, item);
        assert!(matches!(back, Item::Image { image, .. } if image.data.is_none()));
    }

    #[test]
    fn an_attached_image_is_a_message_of_its_own_with_its_label() {
        let history = [
            Item::user("what is in @shot.png"),
            Item::Image {
                path: "shot.png".into(),
                image: png(true),
                call_id: None,
            },
        ];
        let messages = to_messages(&history);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].role, Role::User);
        assert!(matches!(&messages[1].content[..], [
            ContentPart::Text { text },
            ContentPart::Image { tool_use_id: None, .. },
        ] if text == "[Image: shot.png]"));
    }

    #[test]
    fn without_vision_or_bytes_an_image_is_a_note() {
        let item = |data| Item::Image {
            path: "shot.png".into(),
            image: png(data),
            call_id: None,
        };
        let note = |messages: Vec<saki_llm_client::Message>| match &messages[0].content[..] {
            [ContentPart::Text { text }] => text.clone(),
            other => panic!("{other:?}"),
        };
        let off = note(to_messages_with(&[item(true)], false));
        assert!(off.contains("does not accept images"), "{off}");
        assert!(off.contains("PNG 4×3"), "{off}");
        let gone = note(to_messages(&[item(false)]));
        assert!(gone.contains("stored copy is gone"), "{gone}");
    }
}
