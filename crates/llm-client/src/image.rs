//! Images in requests: the bytes as base64, shared, because a request is rebuilt from
//! history for every model call and an image may be megabytes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// Base64 (standard alphabet, padded) of an image's bytes. Cloning shares the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Base64(Arc<str>);

impl Base64 {
    /// Wraps text that already is base64; the caller vouches for it.
    pub fn from_encoded(text: impl Into<Arc<str>>) -> Self {
        Self(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Base64 {
    // Never the whole text: a debug print or a trace line must not carry megabytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base64({} chars)", self.0.len())
    }
}

impl Serialize for Base64 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|s| Self(s.into()))
    }
}

/// One image as a request carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    pub data: Base64,
}

impl ImagePart {
    /// `data:<media type>;base64,<data>`, the form OpenAI's protocols take inline.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data.as_str())
    }
}
