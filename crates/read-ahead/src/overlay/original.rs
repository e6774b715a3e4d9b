//! What a real file was when the speculation first changed it (so a file the person
//! changed meanwhile is reported, not overwritten), and what a command deleted.

use super::{io_error, OverlayError};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::SystemTime;

/// The real file at the first write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Original {
    Missing,
    File(Fingerprint),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    hash: u64,
    /// Permission bits: a speculation that changed them has accept change them too.
    pub(crate) mode: u32,
}

/// What a speculated command deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gone {
    /// A file, as it was when the deletion was found.
    File(Original),
    /// A directory: removed by accept once its files are, when nothing else is in it.
    Dir,
}

fn content_hash(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

impl Original {
    /// What is at `real` now; directories and special files cannot be written.
    pub(crate) fn capture(real: &Path, shown: &str) -> Result<Original, OverlayError> {
        match std::fs::metadata(real) {
            Ok(m) if m.is_dir() => Err(OverlayError::IsDirectory(shown.to_owned())),
            Ok(m) if !m.is_file() => Err(OverlayError::NotAFile(shown.to_owned())),
            Ok(m) => {
                use std::os::unix::fs::PermissionsExt;
                let bytes = std::fs::read(real).map_err(io_error(real))?;
                Ok(Original::File(Fingerprint {
                    len: m.len(),
                    modified: m.modified().ok(),
                    hash: content_hash(&bytes),
                    mode: m.permissions().mode() & 0o7777,
                }))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                // The nearest existing ancestor must be a directory, or apply could
                // never create the file.
                match real.ancestors().skip(1).find(|a| a.exists()) {
                    Some(a) if !a.is_dir() => Err(OverlayError::NotADirectory(shown.to_owned())),
                    _ => Ok(Original::Missing),
                }
            }
            Err(e) => Err(io_error(real)(e)),
        }
    }

    /// Puts the first-write copy at `target` (nothing for a new file).
    pub(crate) fn copy_into(&self, real: &Path, target: &Path) -> Result<(), OverlayError> {
        if let Original::File(_) = self {
            // `fs::copy` keeps the permission bits.
            std::fs::copy(real, target).map_err(io_error(target))?;
        }
        Ok(())
    }

    /// Why the real file no longer matches, if it does not.
    pub(crate) fn conflict(&self, target: &Path) -> Option<&'static str> {
        let meta = match std::fs::symlink_metadata(target) {
            Ok(m) => m,
            Err(_) => {
                return match self {
                    Original::Missing => match target.ancestors().skip(1).find(|a| a.exists()) {
                        Some(a) if !a.is_dir() => {
                            Some("a file now stands where its directory would be")
                        }
                        _ => None,
                    },
                    Original::File(_) => Some("it was deleted since the speculation read it"),
                }
            }
        };
        let Original::File(fp) = self else {
            return Some("it was created since the speculation started");
        };
        if !meta.is_file() {
            return Some("it is no longer a regular file");
        }
        if meta.len() == fp.len && meta.modified().ok() == fp.modified {
            return None;
        }
        match std::fs::read(target) {
            Ok(bytes) if bytes.len() as u64 == fp.len && content_hash(&bytes) == fp.hash => None,
            _ => Some("it was changed since the speculation read it"),
        }
    }
}
