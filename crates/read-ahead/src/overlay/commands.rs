//! What speculated shell commands wrote: they run with the workspace mounted as an
//! overlayfs whose upper layer is this overlay's directory (see `saki_sandbox`'s
//! `OverlayMount`), so their files land where the file tools' do. After each command
//! the upper layer is read back into the overlay's record of written files, so accept
//! applies them with the rest, all or none.
//!
//! - A file created or changed: recorded with what the real tree holds now, as a file
//!   tool's first write is.
//! - Paths the workspace's `.gitignore` ignores (build output: `target/`,
//!   `node_modules/`, `__pycache__/`) are dropped, not applied: they can be gigabytes,
//!   the overlay may sit on another file system than the workspace (so moving is a copy),
//!   and the next real build makes them again.
//! - A deletion (a whiteout) or a directory replaced whole (an opaque directory) is not
//!   applied by accept yet: the speculation stops there (the suggestion runs as a normal
//!   turn), and nothing of it reaches the real tree.
//! - A sensitive path (`.git/`, `.saki/`, ...) is a boundary too: writing it needs the
//!   person in every mode but `yolo`, and never happens unseen.

use super::apply::Original;
use super::{base, io_error, OverlayError, OverlayFs};
use saki_sandbox::OverlayMount;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Why what a command wrote cannot be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unaccepted {
    /// It wrote a file that makes tools run code (`.git/`, `.saki/`, ...).
    Sensitive(String),
    /// It deleted a file or replaced a directory, which accept does not apply yet.
    Deletion(String),
}

impl OverlayFs {
    /// The overlayfs mount a speculated command sees the workspace through: the
    /// primary root over itself, this overlay's directory as the upper layer, and a
    /// scratch directory beside it (created private, empty).
    pub fn command_mount(&self) -> Result<OverlayMount, OverlayError> {
        let work = base::work_name(&self.dir);
        if !work.is_dir() {
            std::fs::create_dir(&work).map_err(io_error(&work))?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o700))
                .map_err(io_error(&work))?;
        }
        Ok(OverlayMount {
            root: self.root.clone(),
            upper: self.dir.clone(),
            work,
        })
    }

    /// Reads what commands left in the upper layer into the record of written files
    /// (dropping ignored build output); `Err` names the first change accept cannot take.
    pub fn absorb_commands(&self) -> Result<Vec<PathBuf>, Unaccepted> {
        let ignore = gitignore(&self.root);
        let mut found = Vec::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(self.dir.join(&rel)) else {
                continue;
            };
            for entry in entries.flatten() {
                let key = rel.join(entry.file_name());
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let shown = key.display().to_string();
                let real = self.root.join(&key);
                if ignore
                    .matched_path_or_any_parents(&real, kind.is_dir())
                    .is_ignore()
                {
                    let _ = remove(&entry.path(), kind.is_dir());
                    continue;
                }
                if is_whiteout(&kind, &entry.path()) {
                    return Err(Unaccepted::Deletion(shown));
                }
                if let Some(why) = saki_tools::sensitive_path(self.workspace(), &shown) {
                    return Err(Unaccepted::Sensitive(format!("{shown} ({why})")));
                }
                if kind.is_dir() {
                    if is_opaque(&entry.path()) && real.is_dir() {
                        return Err(Unaccepted::Deletion(format!("{shown}/")));
                    }
                    stack.push(key);
                } else if kind.is_file() || kind.is_symlink() {
                    found.push(key);
                }
            }
        }
        let mut files = self.lock();
        let mut added = Vec::new();
        for key in found {
            if files.contains_key(&key) {
                continue;
            }
            let real = self.root.join(&key);
            let original = match Original::capture(&real, &key.display().to_string()) {
                Ok(original) => original,
                Err(e) => return Err(Unaccepted::Deletion(e.to_string())),
            };
            files.insert(key.clone(), original);
            added.push(key);
        }
        Ok(added)
    }

    /// Removes the scratch directory, if commands ran.
    pub(super) fn remove_work_dir(&self) {
        let work = base::work_name(&self.dir);
        if let Err(e) = remove(&work, true) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %work.display(), error = %e, "cannot remove overlay scratch dir");
            }
        }
    }
}

/// The workspace's ignore rules (`.gitignore` files and `.git/info/exclude`), as a walk
/// of the workspace applies them.
fn gitignore(root: &Path) -> ignore::gitignore::Gitignore {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    let _ = builder.add(root.join(".gitignore"));
    let _ = builder.add(root.join(".git/info/exclude"));
    builder
        .build()
        .unwrap_or_else(|_| ignore::gitignore::Gitignore::empty())
}

/// overlayfs marks a deleted path with a 0/0 character device (or, in user namespaces
/// on newer kernels, a zero-size file with the `user.overlay.whiteout` attribute).
fn is_whiteout(kind: &std::fs::FileType, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if kind.is_char_device() {
        return std::fs::symlink_metadata(path).is_ok_and(|m| m.rdev() == 0);
    }
    kind.is_file() && has_xattr(path, "user.overlay.whiteout")
}

/// A directory that hides the lower layer's (removed and made again).
fn is_opaque(path: &Path) -> bool {
    has_xattr(path, "user.overlay.opaque") || has_xattr(path, "trusted.overlay.opaque")
}

fn has_xattr(path: &Path, name: &str) -> bool {
    xattr::get(path, name).ok().flatten().is_some()
}

/// Removes a path the overlay no longer wants; overlayfs leaves its scratch directories
/// without permissions, which a recursive removal needs.
fn remove(path: &Path, dir: bool) -> std::io::Result<()> {
    if !dir {
        return std::fs::remove_file(path);
    }
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![path.to_path_buf()];
    while let Some(next) = stack.pop() {
        let _ = std::fs::set_permissions(&next, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(&next) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
        }
    }
    std::fs::remove_dir_all(path)
}
