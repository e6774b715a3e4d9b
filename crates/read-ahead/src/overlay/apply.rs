//! Applying an overlay to the real tree, and what a real file was at its first write
//! (so a file the person changed meanwhile is reported, not overwritten).

use super::{io_error, OverlayError};
use saki_tools::atomic::Staged;
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
    /// Not written because another file could not be: an accept writes all or none.
    #[error("not applied: another file could not be, and an accept writes all files or none")]
    NotWritten,
    /// Written, then put back as it was because a later file could not be written.
    #[error("written, then restored: another file could not be written")]
    Restored,
    /// Written, and it could not be put back: it holds the speculation's version.
    #[error("written, and could not be restored ({0}); it holds the speculation's version")]
    NotRestored(String),
}

/// The result for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileApply {
    /// Relative to the workspace root.
    pub path: PathBuf,
    pub result: Result<(), ApplyError>,
}

/// Every file of the overlay, in path order, with its result. An apply writes all files
/// or none: either every result is `Ok`, or the real tree is as it was (files that could
/// not be put back are `NotRestored`).
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

    /// Files the apply left changed although it did not complete (they could not be
    /// restored): the tree is half changed when this is not empty.
    pub fn left_changed(&self) -> Vec<&Path> {
        self.files
            .iter()
            .filter(|f| matches!(f.result, Err(ApplyError::NotRestored(_))))
            .map(|f| f.path.as_path())
            .collect()
    }

    /// The real tree is as it was before: nothing written, or all of it put back.
    pub fn wrote_nothing(&self) -> bool {
        self.applied().is_empty() && self.left_changed().is_empty()
    }

    /// One line for the person: the files that failed and why, and what that left.
    pub fn describe(&self) -> String {
        let causes: Vec<String> = self
            .files
            .iter()
            .filter_map(|f| match &f.result {
                Ok(()) | Err(ApplyError::NotWritten | ApplyError::Restored) => None,
                Err(e) => Some(format!("{}: {e}", f.path.display())),
            })
            .collect();
        let outcome = if self.is_complete() {
            "every file was applied"
        } else if self.wrote_nothing() {
            "no file was changed"
        } else {
            "some files are left changed"
        };
        if causes.is_empty() {
            outcome.to_owned()
        } else {
            format!("{}; {outcome}", causes.join("; "))
        }
    }
}

/// One file to write, checked.
pub(super) struct Planned {
    pub(super) key: PathBuf,
    pub(super) target: PathBuf,
    original: Original,
    /// The overlay file's bytes and permission bits (for a new file).
    pub(super) bytes: Vec<u8>,
    mode: u32,
}

/// Applies the overlay files in `dir` over `root`, all or none: every file is checked
/// before any is written; the originals are saved in a journal (in `journal_dir`, or
/// in memory only when there is none) before the first write; a failure midway puts back
/// what was written; the journal goes after the last write. A process killed midway
/// leaves the journal, and the next saki rolls it back ([`super::journal::recover`]).
pub(crate) fn apply_all(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    files: &BTreeMap<PathBuf, Original>,
    journal_dir: Option<&Path>,
) -> ApplyReport {
    apply_all_with(workspace, root, dir, files, journal_dir, &|p, staged| {
        commit_one(workspace, p, staged)
    })
}

/// How one checked file's durable temporary file is renamed over it (tests put a
/// failure in).
pub(super) type Writer<'a> = &'a dyn Fn(&Planned, Staged) -> Result<(), ApplyError>;

/// [`apply_all`], writing each file with `write`.
pub(super) fn apply_all_with(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    files: &BTreeMap<PathBuf, Original>,
    journal_dir: Option<&Path>,
    write: Writer<'_>,
) -> ApplyReport {
    let mut checked = Vec::new();
    for (key, original) in files {
        let source = dir.join(key);
        if !source.is_file() {
            continue;
        }
        checked.push(plan_one(workspace, root, key, original, &source));
    }
    if let Some((key, cause)) = checked.iter().find_map(|c| c.as_ref().err()) {
        tracing::warn!(path = %key.display(), error = %cause, "overlay not applied: a file cannot be");
        let files = checked
            .into_iter()
            .map(|c| match c {
                Ok(p) => (p.key, Err(ApplyError::NotWritten)),
                Err((key, e)) => (key, Err(e)),
            })
            .collect();
        return report(files);
    }
    let planned: Vec<Planned> = checked.into_iter().filter_map(Result::ok).collect();
    let journal = match super::journal::Journal::begin(journal_dir, root, &planned) {
        Ok(journal) => journal,
        Err(e) => {
            tracing::warn!(error = %e, "overlay not applied: the journal cannot be written");
            let why = format!("not applied: the originals could not be saved first ({e})");
            let files = planned
                .into_iter()
                .map(|p| (p.key, Err(ApplyError::Io(why.clone()))))
                .collect();
            return report(files);
        }
    };
    // Every file goes to a temporary file beside it first, and the batch is made durable
    // at once (parallel fsyncs, about the cost of one): nothing is renamed before every
    // new content is on disk, so a target holds its original or what the apply wrote,
    // never a torn file, even after a power cut; the journal rolls back either.
    let staged = stage_all(&planned);
    let staged = match staged {
        Ok(staged) => staged,
        Err((index, e)) => {
            tracing::warn!(error = %e, "overlay not applied: a file cannot be written");
            // No target was touched; the temporary files went when dropped.
            journal.remove_created_dirs();
            journal.finish();
            let files = planned
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    let result = match index {
                        Some(index) if index != i => Err(ApplyError::NotWritten),
                        _ => Err(ApplyError::Io(format!("{}: {e}", p.target.display()))),
                    };
                    (p.key, result)
                })
                .collect();
            return report(files);
        }
    };
    let mut results: Vec<Result<(), ApplyError>> = Vec::with_capacity(planned.len());
    let mut staged = staged.into_iter();
    for (p, file) in planned.iter().zip(staged.by_ref()) {
        if let Err(e) = write(p, file) {
            tracing::warn!(path = %p.key.display(), error = %e, "overlay file not applied; restoring");
            // The files not reached: their temporary files go, then the directories made
            // for them.
            drop(staged);
            let mut restored_all = true;
            for (index, result) in results.iter_mut().enumerate() {
                *result = match journal.restore(index) {
                    Ok(()) => Err(ApplyError::Restored),
                    Err(why) => {
                        restored_all = false;
                        Err(ApplyError::NotRestored(why))
                    }
                };
            }
            journal.remove_created_dirs();
            results.push(Err(e));
            results.resize(planned.len(), Err(ApplyError::NotWritten));
            if restored_all {
                journal.finish();
            }
            let files = planned.into_iter().map(|p| p.key).zip(results).collect();
            return report(files);
        }
        results.push(Ok(()));
        if results.len() == 1 {
            saki_tools::state::pause_point("apply");
        }
    }
    journal.finish();
    tracing::debug!(applied = planned.len(), "overlay applied");
    report(planned.into_iter().map(|p| (p.key, Ok(()))).collect())
}

/// Every planned file written to its temporary file, then all made durable at once; on
/// failure, the file that failed (`None`: the batch's fsync) and why.
fn stage_all(planned: &[Planned]) -> Result<Vec<Staged>, (Option<usize>, std::io::Error)> {
    let staged = planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            saki_tools::atomic::stage(&p.target, &p.bytes, p.mode).map_err(|e| (Some(i), e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    saki_tools::atomic::sync_staged(&staged).map_err(|e| (None, e))?;
    Ok(staged)
}

fn report(files: Vec<(PathBuf, Result<(), ApplyError>)>) -> ApplyReport {
    ApplyReport {
        files: files
            .into_iter()
            .map(|(path, result)| FileApply { path, result })
            .collect(),
    }
}

/// Checks one file and reads what will be written.
pub(super) fn plan_one(
    workspace: &Workspace,
    root: &Path,
    key: &Path,
    original: &Original,
    source: &Path,
) -> Result<Planned, (PathBuf, ApplyError)> {
    use std::os::unix::fs::PermissionsExt;
    let target = root.join(key);
    let fail = |e: ApplyError| (key.to_path_buf(), e);
    check(workspace, &target, original).map_err(fail)?;
    let io = |e: std::io::Error| fail(ApplyError::Io(format!("cannot read the overlay: {e}")));
    let bytes = std::fs::read(source).map_err(io)?;
    let mode = std::fs::metadata(source).map_err(io)?.permissions().mode() & 0o7777;
    Ok(Planned {
        key: key.to_path_buf(),
        target,
        original: original.clone(),
        bytes,
        mode,
    })
}

/// The target still is what the speculation saw, where it saw it.
fn check(workspace: &Workspace, target: &Path, original: &Original) -> Result<(), ApplyError> {
    let resolved = workspace
        .resolve_for_write(&target.to_string_lossy())
        .map_err(|e| ApplyError::Moved(e.to_string()))?;
    if resolved != target {
        return Err(ApplyError::Moved(resolved.display().to_string()));
    }
    match original.conflict(target) {
        Some(why) => Err(ApplyError::Conflict(why.to_owned())),
        None => Ok(()),
    }
}

/// Checked again right before the rename (the tree may have changed since the plan),
/// then its temporary file, already durable, is renamed over it.
pub(super) fn commit_one(
    workspace: &Workspace,
    p: &Planned,
    staged: Staged,
) -> Result<(), ApplyError> {
    check(workspace, &p.target, &p.original)?;
    staged
        .commit()
        .map_err(|e| ApplyError::Io(format!("{}: {e}", p.target.display())))
}

/// One file checked and written on its own with `saki_tools::atomic` (temporary file,
/// fsync, rename): what an apply does to each file, one at a time.
#[cfg(test)]
pub(super) fn write_one(workspace: &Workspace, p: &Planned) -> Result<(), ApplyError> {
    check(workspace, &p.target, &p.original)?;
    saki_tools::atomic::write_atomic_mode(&p.target, &p.bytes, p.mode)
        .map_err(|e| ApplyError::Io(format!("{}: {e}", p.target.display())))
}
