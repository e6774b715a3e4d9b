//! The images of sessions, kept by content beside the session logs: `images/<sha256>`
//! in the session directory (directory 0700, files 0600, written atomically). A log
//! line names an image by its digest and never holds its bytes; the same image in
//! several prompts or sessions is stored once. Loading a session reads each image back
//! and checks it against its digest, so a resumed session sends the very bytes it sent
//! before (the request prefix stays byte-identical).
//!
//! Also `@path` references to images: [`resolve_image`] turns one into an image item.

use saki_llm_worker::{ImageRef, Item};
use saki_tools::common::{is_sha256_hex, sha256_hex};
use saki_tools::image::{decode_base64, encode_base64, MAX_SENT_BYTES};
use std::path::{Path, PathBuf};

/// Where a session directory keeps its images.
#[derive(Debug, Clone)]
pub struct ImageStore {
    dir: PathBuf,
}

impl ImageStore {
    /// The store of the session directory `sessions`.
    pub fn for_sessions(sessions: &Path) -> Self {
        Self {
            dir: sessions.join("images"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, digest: &str) -> Option<PathBuf> {
        // A digest names a file in the store and nothing else.
        is_sha256_hex(digest).then(|| self.dir.join(digest))
    }

    /// Stores an item's image unless it is there already; durable when it returns, so a
    /// log line written after it never names a missing file. Items without images, and
    /// images whose bytes are not at hand, need nothing.
    pub fn put(&self, item: &Item) -> std::io::Result<()> {
        let Item::Image { image, .. } = item else {
            return Ok(());
        };
        let Some(data) = &image.data else {
            return Ok(());
        };
        let path = self
            .path_of(&image.sha256)
            .ok_or_else(|| std::io::Error::other("an image's digest is not a SHA-256"))?;
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        let bytes = decode_base64(data)
            .filter(|bytes| sha256_hex(bytes) == image.sha256)
            .ok_or_else(|| std::io::Error::other("an image's bytes do not match its digest"))?;
        saki_tools::common::create_private_dir(&self.dir)?;
        saki_tools::atomic::write_atomic_mode(&path, &bytes, 0o600)?;
        // The rename must be durable before the line naming the file is written.
        std::fs::File::open(&self.dir)?.sync_all()
    }

    /// Reads the bytes of every image item back. An image that is missing, unreadable
    /// or not what its digest says stays without bytes (the model is then told it is
    /// gone), with a warning.
    pub fn load_all(&self, items: &mut [Item]) -> Vec<String> {
        let mut warnings = Vec::new();
        for item in items {
            if let Item::Image { path, image, .. } = item {
                if let Err(e) = self.load(image) {
                    warnings.push(format!("image {path} could not be loaded: {e}"));
                }
            }
        }
        warnings
    }

    fn load(&self, image: &mut ImageRef) -> Result<(), String> {
        let file = self
            .path_of(&image.sha256)
            .ok_or("its digest is not a SHA-256")?;
        let bytes = saki_tools::common::read_regular_at_most(&file, MAX_SENT_BYTES as u64)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        if sha256_hex(&bytes) != image.sha256 {
            return Err(format!("{} does not match its digest", file.display()));
        }
        image.data = Some(encode_base64(&bytes));
        Ok(())
    }
}

/// Why an `@path` image was not attached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefError {
    #[error(
        "the model {model} does not accept images (if it does, set `vision = true` under \
         [models.\"{model}\"] in config.toml)"
    )]
    NoVision { model: String },
    #[error("{0}")]
    Image(#[from] saki_tools::image::ImageError),
}

/// An `@path` image (already resolved in scope) as an item, read through `fs` (an
/// editor's buffer, a speculation's overlay) as the file tools read it; `no_vision`
/// names the model when it reads no images.
pub async fn resolve_image(
    fs: &dyn saki_tools::fs::Fs,
    real: &Path,
    shown: &str,
    no_vision: Option<&str>,
) -> Result<Item, ImageRefError> {
    if let Some(model) = no_vision {
        return Err(ImageRefError::NoVision {
            model: model.to_owned(),
        });
    }
    let prepared = saki_tools::image::load_from(fs, real, shown).await?;
    Ok(Item::Image {
        path: shown.to_owned(),
        image: prepared.image,
        call_id: None,
    })
}

/// [`resolve_image`] for a file already read (an image under another name).
pub fn image_from_bytes(
    bytes: &[u8],
    shown: &str,
    no_vision: Option<&str>,
) -> Result<Item, ImageRefError> {
    if let Some(model) = no_vision {
        return Err(ImageRefError::NoVision {
            model: model.to_owned(),
        });
    }
    let prepared = saki_tools::image::prepare(bytes, shown)?;
    Ok(Item::Image {
        path: shown.to_owned(),
        image: prepared.image,
        call_id: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(bytes: &[u8]) -> Item {
        Item::Image {
            path: "a.png".into(),
            image: ImageRef {
                media_type: "image/png".into(),
                sha256: sha256_hex(bytes),
                width: 1,
                height: 1,
                bytes: bytes.len() as u64,
                data: Some(encode_base64(bytes)),
            },
            call_id: None,
        }
    }

    #[test]
    fn an_image_is_stored_once_privately_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::for_sessions(dir.path());
        let stored = item(b"not really a png");
        store.put(&stored).unwrap();
        store.put(&stored).unwrap();
        let files: Vec<_> = std::fs::read_dir(store.dir()).unwrap().collect();
        assert_eq!(files.len(), 1);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(&files[0].as_ref().unwrap().path()), 0o600);

        let mut loaded =
            vec![serde_json::from_str::<Item>(&serde_json::to_string(&stored).unwrap()).unwrap()];
        assert!(matches!(&loaded[0], Item::Image { image, .. } if image.data.is_none()));
        assert!(store.load_all(&mut loaded).is_empty());
        let (Item::Image { image: a, .. }, Item::Image { image: b, .. }) = (&loaded[0], &stored)
        else {
            unreachable!()
        };
        assert_eq!(a.data, b.data);
    }

    #[test]
    fn a_missing_or_altered_image_is_a_warning_not_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::for_sessions(dir.path());
        let stored = item(b"bytes");
        store.put(&stored).unwrap();
        let mut items = vec![stored.clone(), item(b"never stored")];
        for item in &mut items {
            if let Item::Image { image, .. } = item {
                image.data = None;
            }
        }
        let file = store.dir().join(sha256_hex(b"bytes"));
        std::fs::write(&file, b"other bytes").unwrap();
        let warnings = store.load_all(&mut items);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("does not match its digest"),
            "{warnings:?}"
        );
        assert!(items
            .iter()
            .all(|i| matches!(i, Item::Image { image, .. } if image.data.is_none())));
    }

    #[test]
    fn a_digest_never_names_a_path() {
        let store = ImageStore::for_sessions(Path::new("/x"));
        assert_eq!(store.path_of("../../etc/passwd"), None);
        assert_eq!(store.path_of(&"A".repeat(64)), None);
        assert!(store.path_of(&"a".repeat(64)).is_some());
    }
}
