//! `OverlayFs`: the copy-on-write overlay a speculation writes into.
//!
//! ```text
//! real root:  /home/me/project/            overlay: <tmp>/saki-<uid>/saki-overlay-<pid>-<n>/
//! write src/app.rs  -> first time: copy project/src/app.rs to overlay/src/app.rs,
//!                      then the tool writes overlay/src/app.rs
//! read  src/app.rs  -> overlay/src/app.rs once written, else project/src/app.rs
//! write src/new.rs  -> overlay/src/new.rs (nothing to copy)
//! apply             -> every file checked, the originals saved in a journal, then each
//!                      overlay file written atomically over the real one: all or none
//! abort / drop      -> rm -rf overlay/
//! ```
//!
//! Files are keyed by their canonical path relative to the primary workspace root, so
//! `./src/app.rs`, `src/../src/app.rs` and a symlink to it are one file, and a symlink
//! that leads outside the workspace is outside. File tools never delete; a deletion by a
//! speculated command (a whiteout in the upper layer) is recorded by `absorb_commands`
//! with what the real file was, and accept removes the file.
//!
//! Speculated shell commands write into the same directory through an overlayfs mount
//! (`commands.rs`): the file tools and the commands see one tree.

mod apply;
mod base;
mod commands;
mod original;

pub use apply::{ApplyError, ApplyReport, FileApply};
pub use base::{cleanup_stale, default_base};
pub use commands::Unaccepted;
pub use saki_tools::txn::{recover as recover_applies, RolledBack, JOURNAL_DIR};

use original::{Gone, Original};
use saki_tools::{ScopeError, Workspace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error(transparent)]
    Scope(#[from] ScopeError),
    #[error("{path} is outside {root}; speculative writes are limited to the workspace root")]
    OutsideRoot { path: String, root: String },
    #[error("{0} is a directory")]
    IsDirectory(String),
    #[error("{0} is not a regular file")]
    NotAFile(String),
    #[error("{0} is below a file, not a directory")]
    NotADirectory(String),
    #[error("the overlay was already applied")]
    Applied,
    #[error("overlay base {0} belongs to another user")]
    ForeignBase(PathBuf),
    #[error(
        "the overlay {0} would lie inside the workspace; speculation needs a temp dir outside it"
    )]
    InsideWorkspace(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> OverlayError + '_ {
    move |source| OverlayError::Io {
        path: path.display().to_string(),
        source,
    }
}

pub struct OverlayFs {
    workspace: Arc<Workspace>,
    /// The primary workspace root (canonical).
    root: PathBuf,
    /// The overlay directory (canonical).
    dir: PathBuf,
    /// Written files by key, with what the real file was at the first write.
    files: Mutex<BTreeMap<PathBuf, Original>>,
    /// Paths speculated commands deleted, by key (see `commands.rs`).
    deleted: Mutex<BTreeMap<PathBuf, Gone>>,
    applied: AtomicBool,
    /// Removed (abort) or handed over (keep): Drop leaves the directory alone.
    finished: bool,
}

impl std::fmt::Debug for OverlayFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OverlayFs")
            .field("root", &self.root)
            .field("dir", &self.dir)
            .field("files", &self.lock().len())
            .finish()
    }
}

impl OverlayFs {
    /// A new, empty overlay under [`default_base`].
    pub fn new(workspace: Arc<Workspace>) -> Result<Self, OverlayError> {
        Self::new_in(workspace, &default_base())
    }

    /// A new, empty overlay `saki-overlay-<pid>-<n>` under `base` (created private
    /// to this user if missing).
    pub fn new_in(workspace: Arc<Workspace>, base: &Path) -> Result<Self, OverlayError> {
        let dir = base::create_overlay_dir(base)?;
        // Inside the workspace, the overlay itself would be a change to the real tree
        // (and show up in every listing).
        if workspace.roots().iter().any(|r| dir.starts_with(r)) {
            let _ = std::fs::remove_dir(&dir);
            return Err(OverlayError::InsideWorkspace(dir));
        }
        tracing::debug!(dir = %dir.display(), "overlay created");
        Ok(Self {
            root: workspace.root().to_path_buf(),
            workspace,
            dir,
            files: Mutex::new(BTreeMap::new()),
            deleted: Mutex::new(BTreeMap::new()),
            applied: AtomicBool::new(false),
            finished: false,
        })
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// The primary workspace root the overlay mirrors.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The overlay directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `path` with the overlay directory taken off when it leads into it (the workspace
    /// path it stands for, relative to the root); any other path as it is.
    pub fn workspace_path(&self, path: &str) -> String {
        match Path::new(path).strip_prefix(&self.dir) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.to_owned(),
        }
    }

    /// Text a tool wrote about the overlay's files with the overlay's own paths made
    /// workspace paths: the model must never see (and copy) where the overlay lives.
    pub fn hide_dir(&self, text: &str) -> String {
        let dir = self.dir.display().to_string();
        if !text.contains(&dir) {
            return text.to_owned();
        }
        text.replace(&format!("{dir}/"), "").replace(&dir, ".")
    }

    /// Where a read of `path` goes: the overlay copy once the file was written, else
    /// the real (canonical) path, which may not exist. Paths outside the workspace are
    /// an error.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, OverlayError> {
        let (real, key) = self.locate(path)?;
        match key {
            Some(key) if self.lock().contains_key(&key) => Ok(self.dir.join(key)),
            _ => Ok(real),
        }
    }

    /// The canonical real path of `path` (which may not exist), checked to be inside
    /// the workspace: what directory tools are given, as they merge the overlay in.
    pub fn resolve_view(&self, path: &str) -> Result<PathBuf, OverlayError> {
        Ok(self.locate(path)?.0)
    }

    /// Where a write of `path` goes: its overlay copy. The first write of an existing
    /// file copies it (with its permissions) into the overlay; a new file has no
    /// copy until the tool creates it. Only files under the primary root can be written.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, OverlayError> {
        if self.applied.load(Ordering::Acquire) {
            return Err(OverlayError::Applied);
        }
        let (real, key) = self.locate(path)?;
        let key = key.filter(|k| !k.as_os_str().is_empty()).ok_or_else(|| {
            if real == self.root {
                OverlayError::IsDirectory(path.to_owned())
            } else {
                OverlayError::OutsideRoot {
                    path: path.to_owned(),
                    root: self.root.display().to_string(),
                }
            }
        })?;
        let target = self.dir.join(&key);
        // A path a command deleted starts empty, as a new file (taken before the files'
        // lock: `is_deleted` takes them in the other order).
        let was_deleted = self.lock_deleted().keys().any(|k| key.starts_with(k));
        // Held across the copy so two parallel first writes copy once.
        let mut files = self.lock();
        if files.contains_key(&key) {
            return Ok(target);
        }
        if key.ancestors().skip(1).any(|a| files.contains_key(a)) {
            return Err(OverlayError::NotADirectory(path.to_owned()));
        }
        if target.is_dir() {
            return Err(OverlayError::IsDirectory(path.to_owned()));
        }
        let original = Original::capture(&real, path)?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        if was_deleted {
            // Its whiteout goes: the file is the speculation's own from here.
            if let Err(e) = std::fs::remove_file(&target) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(io_error(&target)(e));
                }
            }
        } else {
            original.copy_into(&real, &target)?;
        }
        tracing::trace!(key = %key.display(), "overlay: first write");
        files.insert(key, original);
        Ok(target)
    }

    /// Written files (relative to the workspace root, sorted) that exist in the
    /// overlay; a redirected write that never happened is not listed.
    pub fn written_files(&self) -> Vec<PathBuf> {
        self.lock()
            .keys()
            .filter(|k| self.dir.join(k).is_file())
            .cloned()
            .collect()
    }

    /// Whether the overlay holds its own copy of the file `key` (relative to the root).
    pub fn holds(&self, key: &Path) -> bool {
        self.lock().contains_key(key)
    }

    /// Whether `key` (relative to the root) is gone in the overlay: a command deleted it
    /// or a directory above it, and nothing the speculation wrote since stands there.
    pub fn is_deleted(&self, key: &Path) -> bool {
        let deleted = self.lock_deleted();
        if deleted.is_empty() || !key.ancestors().any(|a| deleted.contains_key(a)) {
            return false;
        }
        drop(deleted);
        !self.lock().keys().any(|k| k.starts_with(key))
    }

    /// Files speculated commands deleted (relative to the root, sorted).
    pub fn deleted_files(&self) -> Vec<PathBuf> {
        self.lock_deleted()
            .iter()
            .filter(|(_, g)| matches!(g, Gone::File(_)))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Where the merged view reads the file `key` (relative to the root) from.
    pub fn view_path(&self, key: &Path) -> PathBuf {
        if self.lock().contains_key(key) {
            self.dir.join(key)
        } else {
            self.root.join(key)
        }
    }

    /// Written files present in the overlay, with whether the real tree lacked them.
    pub(crate) fn overlay_files(&self) -> Vec<(PathBuf, bool)> {
        self.lock()
            .iter()
            .filter(|(k, _)| self.dir.join(k).is_file())
            .map(|(k, o)| (k.clone(), matches!(o, Original::Missing)))
            .collect()
    }

    /// Writes every overlay file into the real tree, all or none; see [`ApplyReport`].
    /// The journal goes to saki's data directory (`saki_tools::state`), so a saki killed
    /// midway is rolled back by the next one ([`recover_applies`]); without one it is
    /// kept in memory only. Applies once: after a complete apply later writes are
    /// refused and a second call applies nothing; after one that did not complete the
    /// overlay stays as it was.
    pub fn apply(&self) -> ApplyReport {
        let journal = saki_tools::state::data_dir().map(|d| d.join(JOURNAL_DIR));
        self.apply_with_journal(journal.as_deref())
    }

    /// [`OverlayFs::apply`] with the journal in `journal_dir`.
    pub fn apply_with_journal(&self, journal_dir: Option<&Path>) -> ApplyReport {
        if self.applied.swap(true, Ordering::AcqRel) {
            tracing::warn!(dir = %self.dir.display(), "overlay applied twice; ignored");
            return ApplyReport::default();
        }
        let report = apply::apply_all(
            &self.workspace,
            &self.root,
            &self.dir,
            &apply::Changes {
                written: &self.lock(),
                deleted: &self.lock_deleted(),
            },
            journal_dir,
        );
        if !report.is_complete() {
            self.applied.store(false, Ordering::Release);
        }
        report
    }

    /// Deletes the overlay directory.
    pub fn abort(mut self) -> Result<(), OverlayError> {
        self.finished = true;
        self.remove_work_dir();
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&self.dir)(e)),
            _ => Ok(()),
        }
    }

    /// Keeps the overlay (after an apply that did not complete, so nothing is lost): it is renamed to
    /// `saki-kept-<pid>-<n>`, which [`cleanup_stale`] never removes, and returned.
    pub fn keep(mut self) -> PathBuf {
        self.finished = true;
        self.remove_work_dir();
        let kept = base::kept_name(&self.dir);
        match std::fs::rename(&self.dir, &kept) {
            Ok(()) => kept,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot rename kept overlay");
                self.dir.clone()
            }
        }
    }

    /// Splits a path into its canonical real path and, under the primary root, its key.
    pub(crate) fn locate(&self, path: &str) -> Result<(PathBuf, Option<PathBuf>), OverlayError> {
        let real = self.workspace.resolve_for_write(path)?;
        let key = real.strip_prefix(&self.root).ok().map(Path::to_path_buf);
        Ok((real, key))
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Original>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_deleted(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Gone>> {
        self.deleted.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for OverlayFs {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.remove_work_dir();
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove overlay");
            }
        }
    }
}

#[cfg(test)]
mod journal_tests;
#[cfg(test)]
mod tests;
