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
//! - A deletion (a whiteout) is recorded with what the real file was (a directory: every
//!   file and directory below it), and so are the real files a directory replaced whole
//!   (an opaque directory) no longer has; accept removes them, all or none with the rest,
//!   and a file the person changed since is a conflict. A symbolic link deleted is not
//!   applied: the speculation stops there.
//! - A file whose permission bits a command changed is recorded like any changed file,
//!   and accept gives the real file those bits.
//! - A sensitive path (`.git/`, `.saki/`, ...) is a boundary too: writing it needs the
//!   person in every mode but `yolo`, and never happens unseen.

use super::original::{Gone, Original};
use super::{base, io_error, OverlayError, OverlayFs};
use saki_sandbox::OverlayMount;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Why what a command wrote cannot be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unaccepted {
    /// It wrote a file that makes tools run code (`.git/`, `.saki/`, ...).
    Sensitive(String),
    /// It deleted something accept does not apply (a symbolic link), or what it deleted
    /// cannot be read.
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
        let mut gone = Vec::new();
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
                if let Some(why) = saki_tools::sensitive_path(self.workspace(), &shown) {
                    return Err(Unaccepted::Sensitive(format!("{shown} ({why})")));
                }
                if is_whiteout(&kind, &entry.path()) {
                    gone.push(key);
                    continue;
                }
                if kind.is_dir() {
                    if is_opaque(&entry.path()) && real.is_dir() {
                        // What the real directory holds that the new one lacks is gone.
                        for name in std::fs::read_dir(&real).into_iter().flatten().flatten() {
                            let below = key.join(name.file_name());
                            if std::fs::symlink_metadata(self.dir.join(&below)).is_err() {
                                gone.push(below);
                            }
                        }
                    }
                    stack.push(key);
                } else if kind.is_file() || kind.is_symlink() {
                    found.push(key);
                }
            }
        }
        let deletions = self.deletions(&gone)?;
        let mut files = self.lock();
        // A file a tool wrote and a command then deleted is no longer written: its
        // place in the upper layer is a whiteout, which must not be applied as a file.
        for key in &gone {
            files.remove(key);
        }
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
        drop(files);
        let mut deleted = self.lock_deleted();
        for (key, what) in deletions {
            if let std::collections::btree_map::Entry::Vacant(entry) = deleted.entry(key) {
                added.push(entry.key().clone());
                entry.insert(what);
            }
        }
        Ok(added)
    }

    /// What deleting each of `keys` removed from the real tree: the file, or the
    /// directory with everything below it (directories after what they hold).
    fn deletions(&self, keys: &[PathBuf]) -> Result<Vec<(PathBuf, Gone)>, Unaccepted> {
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = keys.to_vec();
        while let Some(key) = stack.pop() {
            let real = self.root.join(&key);
            let shown = key.display().to_string();
            let Ok(meta) = std::fs::symlink_metadata(&real) else {
                // Made and removed within the speculation: nothing real is gone.
                continue;
            };
            if let Some(why) = saki_tools::sensitive_path(self.workspace(), &shown) {
                return Err(Unaccepted::Sensitive(format!("{shown} ({why})")));
            }
            if meta.is_dir() {
                for entry in std::fs::read_dir(&real).into_iter().flatten().flatten() {
                    stack.push(key.join(entry.file_name()));
                }
                out.push((key, Gone::Dir));
            } else if meta.is_file() {
                let original = Original::capture(&real, &shown)
                    .map_err(|e| Unaccepted::Deletion(e.to_string()))?;
                out.push((key, Gone::File(original)));
            } else {
                return Err(Unaccepted::Deletion(format!(
                    "{shown} (not a regular file or directory)"
                )));
            }
        }
        Ok(out)
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
