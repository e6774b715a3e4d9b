//! Applying an overlay to the real tree: every change checked, journaled, staged and
//! made durable, then renamed (or, for a deletion, removed), all or none.

use super::original::{Gone, Original};
use saki_tools::atomic::Staged;
use saki_tools::Workspace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// What the overlay changed: files written (with what each was at the first write) and
/// paths commands deleted.
pub(crate) struct Changes<'a> {
    pub(crate) written: &'a BTreeMap<PathBuf, Original>,
    pub(crate) deleted: &'a BTreeMap<PathBuf, Gone>,
}

/// No deletions.
#[cfg(test)]
static NOTHING_DELETED: BTreeMap<PathBuf, Gone> = BTreeMap::new();

#[cfg(test)]
impl<'a> Changes<'a> {
    /// Written files only.
    pub(crate) fn written(written: &'a BTreeMap<PathBuf, Original>) -> Self {
        Self {
            written,
            deleted: &NOTHING_DELETED,
        }
    }
}

/// What is done to one file.
pub(super) enum Action {
    /// Its new bytes and permission bits (a new file's, or a changed mode).
    Write {
        bytes: Vec<u8>,
        mode: u32,
        set_mode: bool,
    },
    /// A command deleted it.
    Remove,
}

/// One file to change, checked.
pub(super) struct Planned {
    pub(super) key: PathBuf,
    pub(super) target: PathBuf,
    original: Original,
    pub(super) action: Action,
}

impl Planned {
    /// What the apply leaves in the file (`None`: no file).
    pub(super) fn bytes(&self) -> Option<&[u8]> {
        match &self.action {
            Action::Write { bytes, .. } => Some(bytes),
            Action::Remove => None,
        }
    }
}

/// Applies the overlay's changes over `root`, all or none: every file is checked
/// before any is changed; the originals are saved in a journal (in `journal_dir`, or
/// in memory only when there is none) before the first change; a failure midway puts
/// back what was changed; the journal goes after the last. A process killed midway
/// leaves the journal, and the next saki rolls it back ([`super::journal::recover`]).
/// Directories commands deleted go last, when empty.
pub(crate) fn apply_all(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    changes: &Changes<'_>,
    journal_dir: Option<&Path>,
) -> ApplyReport {
    apply_all_with(workspace, root, dir, changes, journal_dir, &|p, staged| {
        commit_one(workspace, p, staged)
    })
}

/// How one checked file's durable temporary file is renamed over it, or a deleted
/// file removed (tests put a failure in).
pub(super) type Writer<'a> = &'a dyn Fn(&Planned, Option<Staged>) -> Result<(), ApplyError>;

/// [`apply_all`], changing each file with `write`.
pub(super) fn apply_all_with(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    changes: &Changes<'_>,
    journal_dir: Option<&Path>,
    write: Writer<'_>,
) -> ApplyReport {
    let mut checked = Vec::new();
    for (key, original) in changes.written {
        let source = dir.join(key);
        if !source.is_file() {
            continue;
        }
        checked.push(plan_one(workspace, root, key, original, &source));
    }
    for (key, gone) in changes.deleted {
        if let Gone::File(original) = gone {
            if !changes.written.contains_key(key) {
                checked.push(plan_removal(workspace, root, key, original));
            }
        }
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
    let staged = match stage_all(&planned) {
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
    remove_deleted_dirs(root, changes.deleted);
    tracing::debug!(applied = planned.len(), "overlay applied");
    report(planned.into_iter().map(|p| (p.key, Ok(()))).collect())
}

/// Directories commands deleted, deepest first, when nothing is left in them (a file
/// the person put there since stays, and so does its directory).
fn remove_deleted_dirs(root: &Path, deleted: &BTreeMap<PathBuf, Gone>) {
    for (key, _) in deleted.iter().rev().filter(|(_, g)| **g == Gone::Dir) {
        let _ = std::fs::remove_dir(root.join(key));
    }
}

/// Every planned write staged in a temporary file (a removal stages nothing), then all
/// made durable at once; on failure, the file that failed (`None`: the batch's fsync)
/// and why.
fn stage_all(planned: &[Planned]) -> Result<Vec<Option<Staged>>, (Option<usize>, std::io::Error)> {
    let staged = planned
        .iter()
        .enumerate()
        .map(|(i, p)| match &p.action {
            Action::Write {
                bytes,
                mode,
                set_mode,
            } => {
                let staged = saki_tools::atomic::stage(&p.target, bytes, *mode)
                    .and_then(|s| match set_mode {
                        true => s.set_mode(*mode).map(|()| s),
                        false => Ok(s),
                    })
                    .map_err(|e| (Some(i), e))?;
                Ok(Some(staged))
            }
            Action::Remove => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let writes: Vec<&Staged> = staged.iter().flatten().collect();
    saki_tools::atomic::sync_staged(&writes).map_err(|e| (None, e))?;
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
    // A file the speculation gave other permission bits gets them; otherwise the real
    // file keeps its own (the person may have changed them meanwhile).
    let set_mode = matches!(original, Original::File(fp) if fp.mode != mode);
    Ok(Planned {
        key: key.to_path_buf(),
        target,
        original: original.clone(),
        action: Action::Write {
            bytes,
            mode,
            set_mode,
        },
    })
}

/// Checks one file a command deleted.
fn plan_removal(
    workspace: &Workspace,
    root: &Path,
    key: &Path,
    original: &Original,
) -> Result<Planned, (PathBuf, ApplyError)> {
    let target = root.join(key);
    check(workspace, &target, original).map_err(|e| (key.to_path_buf(), e))?;
    Ok(Planned {
        key: key.to_path_buf(),
        target,
        original: original.clone(),
        action: Action::Remove,
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
/// then its temporary file, already durable, is renamed over it (or, for a file a
/// command deleted, the file is removed).
pub(super) fn commit_one(
    workspace: &Workspace,
    p: &Planned,
    staged: Option<Staged>,
) -> Result<(), ApplyError> {
    check(workspace, &p.target, &p.original)?;
    let io = |e: std::io::Error| ApplyError::Io(format!("{}: {e}", p.target.display()));
    match staged {
        Some(staged) => staged.commit().map_err(io),
        None => std::fs::remove_file(&p.target).map_err(io),
    }
}

/// One file checked and changed on its own with `saki_tools::atomic` (temporary file,
/// fsync, rename): what an apply does to each file, one at a time.
#[cfg(test)]
pub(super) fn write_one(workspace: &Workspace, p: &Planned) -> Result<(), ApplyError> {
    check(workspace, &p.target, &p.original)?;
    let io = |e: std::io::Error| ApplyError::Io(format!("{}: {e}", p.target.display()));
    match &p.action {
        Action::Write { bytes, mode, .. } => {
            saki_tools::atomic::write_atomic_mode(&p.target, bytes, *mode).map_err(io)
        }
        Action::Remove => std::fs::remove_file(&p.target).map_err(io),
    }
}
