//! Applying an overlay to the real tree, and what a real file was at its first write
//! (so a file the person changed meanwhile is reported, not overwritten).

use super::{io_error, OverlayError};
use saki_tools::Workspace;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
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
                let bytes = std::fs::read(real).map_err(io_error(real))?;
                Ok(Original::File(Fingerprint {
                    len: m.len(),
                    modified: m.modified().ok(),
                    hash: content_hash(&bytes),
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
    fn conflict(&self, target: &Path) -> Option<&'static str> {
        let meta = match std::fs::symlink_metadata(target) {
            Ok(m) => m,
            Err(_) => {
                return match self {
                    Original::Missing => None,
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

/// Why one file was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The real file changed after the speculation copied it; it is left as it is.
    #[error("not applied: {0}")]
    Conflict(String),
    /// The path now leads somewhere else (a directory became a symlink).
    #[error("not applied: the path now leads elsewhere ({0})")]
    Moved(String),
    #[error("{0}")]
    Io(String),
}

/// The result for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileApply {
    /// Relative to the workspace root.
    pub path: PathBuf,
    pub result: Result<(), ApplyError>,
}

/// Every written file, in path order, with its result: apply never stops at the first
/// failure.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyReport {
    pub files: Vec<FileApply>,
}

impl ApplyReport {
    /// True when every file was applied.
    pub fn is_complete(&self) -> bool {
        self.files.iter().all(|f| f.result.is_ok())
    }

    /// Files written to the real tree.
    pub fn applied(&self) -> Vec<&Path> {
        self.files
            .iter()
            .filter(|f| f.result.is_ok())
            .map(|f| f.path.as_path())
            .collect()
    }

    /// Files not written, with why.
    pub fn failures(&self) -> Vec<(&Path, &ApplyError)> {
        self.files
            .iter()
            .filter_map(|f| f.result.as_ref().err().map(|e| (f.path.as_path(), e)))
            .collect()
    }
}

pub(crate) fn apply_all(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    files: &BTreeMap<PathBuf, Original>,
) -> ApplyReport {
    let mut report = ApplyReport::default();
    for (key, original) in files {
        let source = dir.join(key);
        if !source.is_file() {
            continue;
        }
        let result = apply_one(workspace, &root.join(key), original, &source);
        if let Err(e) = &result {
            tracing::warn!(path = %key.display(), error = %e, "overlay file not applied");
        }
        report.files.push(FileApply {
            path: key.clone(),
            result,
        });
    }
    tracing::debug!(
        applied = report.applied().len(),
        failed = report.failures().len(),
        "overlay applied"
    );
    report
}

fn apply_one(
    workspace: &Workspace,
    target: &Path,
    original: &Original,
    source: &Path,
) -> Result<(), ApplyError> {
    // Checked again: the tree may have changed since the first write.
    let resolved = workspace
        .resolve_for_write(&target.to_string_lossy())
        .map_err(|e| ApplyError::Moved(e.to_string()))?;
    if resolved != target {
        return Err(ApplyError::Moved(resolved.display().to_string()));
    }
    if let Some(why) = original.conflict(target) {
        return Err(ApplyError::Conflict(why.to_owned()));
    }
    write_atomic_from(source, target).map_err(|e| ApplyError::Io(e.to_string()))
}

/// The overlay file written over `target` with `saki_tools::atomic`'s one atomic write
/// (temporary file beside it, fsync, rename; the target's permissions are kept, a new
/// file gets the overlay file's).
fn write_atomic_from(source: &Path, target: &Path) -> Result<(), OverlayError> {
    use std::os::unix::fs::PermissionsExt;
    let bytes = std::fs::read(source).map_err(io_error(source))?;
    let mode = std::fs::metadata(source)
        .map_err(io_error(source))?
        .permissions()
        .mode();
    saki_tools::atomic::write_atomic_mode(target, &bytes, mode & 0o7777).map_err(io_error(target))
}
