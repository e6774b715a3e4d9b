//! One file transaction, for every change saki makes to the person's files in one go
//! (accepting a speculation, an undo, a redo, a rewind): every change checked before any
//! is made, the originals saved in a journal first (`journal.rs`), the new contents staged
//! beside their targets and made durable together, then each renamed over its target (or
//! the target removed), checked once more right before; a failure midway puts back what
//! was changed, and a process killed midway is rolled back by the next one at start
//! ([`recover`]). All or none: after it, every target holds its original or what the
//! transaction wrote, never a torn file.
//!
//! What a conflict is belongs to the caller: each change carries its own check (an
//! overlay compares the file with what the speculation saw; an undo with what the turn
//! left).

mod journal;

pub use journal::{recover, Journal, RolledBack, JOURNAL_DIR};

use crate::atomic::Staged;
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
    #[error("not applied: another file could not be, and saki changes all files or none")]
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

/// What a change leaves at its target.
pub enum To {
    /// A file with these bytes; `mode` is a new file's permission bits, and with
    /// `set_mode` an existing file's too (otherwise it keeps its own).
    File {
        bytes: Vec<u8>,
        mode: u32,
        set_mode: bool,
    },
    /// No file: an existing regular file is removed.
    Absent,
}

/// The check a change makes of its target, before anything is written and again right
/// before its own rename: `Err` when the target is not what the change expects.
pub type Check = Box<dyn Fn(&Path) -> Result<(), ApplyError> + Send + Sync>;

/// One change to make, checked.
pub struct Planned {
    /// As reported (relative to the root).
    pub key: PathBuf,
    pub target: PathBuf,
    pub to: To,
    check: Check,
}

impl Planned {
    /// A change of `root.join(key)`, checked by `check` (once now, once before its rename).
    pub fn new(
        root: &Path,
        key: &Path,
        to: To,
        check: Check,
    ) -> Result<Planned, (PathBuf, ApplyError)> {
        let target = root.join(key);
        check(&target).map_err(|e| (key.to_path_buf(), e))?;
        Ok(Planned {
            key: key.to_path_buf(),
            target,
            to,
            check,
        })
    }

    /// What the change leaves in the file (`None`: no file).
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.to {
            To::File { bytes, .. } => Some(bytes),
            To::Absent => None,
        }
    }

    /// The target is still what the change expects.
    pub fn check(&self) -> Result<(), ApplyError> {
        (self.check)(&self.target)
    }
}

/// How one change is made once every new content is durable: its staged file renamed
/// over the target, or the target removed ([`commit_one`]; tests put a failure in).
pub type Writer<'a> = &'a dyn Fn(&Planned, Option<Staged>) -> Result<(), ApplyError>;

/// Applies `checked` (each change planned, or why it could not be) under `root`, all or
/// none, with the journal in `journal_dir` (in memory only when `None`).
pub fn apply(
    root: &Path,
    checked: Vec<Result<Planned, (PathBuf, ApplyError)>>,
    journal_dir: Option<&Path>,
) -> ApplyReport {
    apply_with(root, checked, journal_dir, &commit_one)
}

/// [`apply`], making each change with `write`.
pub fn apply_with(
    root: &Path,
    checked: Vec<Result<Planned, (PathBuf, ApplyError)>>,
    journal_dir: Option<&Path>,
    write: Writer<'_>,
) -> ApplyReport {
    if let Some((key, cause)) = checked.iter().find_map(|c| c.as_ref().err()) {
        tracing::warn!(path = %key.display(), error = %cause, "transaction not applied: a file cannot be");
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
    let journal = match Journal::begin(journal_dir, root, &planned) {
        Ok(journal) => journal,
        Err(e) => {
            tracing::warn!(error = %e, "transaction not applied: the journal cannot be written");
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
    // new content is on disk, so a target holds its original or what was written, never
    // a torn file, even after a power cut; the journal rolls back either.
    let staged = match stage_all(&planned) {
        Ok(staged) => staged,
        Err((index, e)) => {
            tracing::warn!(error = %e, "transaction not applied: a file cannot be written");
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
            tracing::warn!(path = %p.key.display(), error = %e, "file not changed; restoring the others");
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
            crate::state::pause_point("apply");
        }
    }
    journal.finish();
    tracing::debug!(changed = planned.len(), "transaction applied");
    report(planned.into_iter().map(|p| (p.key, Ok(()))).collect())
}

/// Every write staged in a temporary file (a removal stages nothing), then all made
/// durable at once; on failure, the file that failed (`None`: the batch's fsync) and why.
fn stage_all(planned: &[Planned]) -> Result<Vec<Option<Staged>>, (Option<usize>, std::io::Error)> {
    let staged = planned
        .iter()
        .enumerate()
        .map(|(i, p)| match &p.to {
            To::File {
                bytes,
                mode,
                set_mode,
            } => {
                let staged = crate::atomic::stage(&p.target, bytes, *mode)
                    .and_then(|s| match set_mode {
                        true => s.set_mode(*mode).map(|()| s),
                        false => Ok(s),
                    })
                    .map_err(|e| (Some(i), e))?;
                Ok(Some(staged))
            }
            To::Absent => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let writes: Vec<&Staged> = staged.iter().flatten().collect();
    crate::atomic::sync_staged(&writes).map_err(|e| (None, e))?;
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

/// Checked again right before the rename (the tree may have changed since the plan),
/// then its temporary file, already durable, is renamed over it (or, for a removal, the
/// file is removed).
pub fn commit_one(p: &Planned, staged: Option<Staged>) -> Result<(), ApplyError> {
    p.check()?;
    let io = |e: std::io::Error| ApplyError::Io(format!("{}: {e}", p.target.display()));
    match staged {
        Some(staged) => staged.commit().map_err(io),
        None => match std::fs::remove_file(&p.target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        },
    }
}

/// One change checked and made on its own (temporary file, fsync, rename): what a
/// transaction does to each file, one at a time, without a journal (tests use it to
/// stand for a process killed midway).
pub fn apply_one(p: &Planned) -> Result<(), ApplyError> {
    p.check()?;
    let io = |e: std::io::Error| ApplyError::Io(format!("{}: {e}", p.target.display()));
    match &p.to {
        To::File { bytes, mode, .. } => {
            crate::atomic::write_atomic_mode(&p.target, bytes, *mode).map_err(io)
        }
        To::Absent => std::fs::remove_file(&p.target).map_err(io),
    }
}
