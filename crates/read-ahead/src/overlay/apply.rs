//! Applying an overlay to the real tree: its changes planned (each with the overlay's own
//! conflict check) and handed to saki-tools' file transaction, all or none.

use super::original::{Gone, Original};
use saki_tools::txn::{self, Planned, To};
use saki_tools::Workspace;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use saki_tools::txn::{ApplyError, ApplyReport, FileApply};

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

/// Applies the overlay's changes over `root`, all or none (see `saki_tools::txn`); then
/// the directories commands deleted go, when empty.
pub(crate) fn apply_all(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    changes: &Changes<'_>,
    journal_dir: Option<&Path>,
) -> ApplyReport {
    apply_all_with(workspace, root, dir, changes, journal_dir, &txn::commit_one)
}

/// [`apply_all`], changing each file with `write`.
pub(super) fn apply_all_with(
    workspace: &Workspace,
    root: &Path,
    dir: &Path,
    changes: &Changes<'_>,
    journal_dir: Option<&Path>,
    write: txn::Writer<'_>,
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
    let report = txn::apply_with(root, checked, journal_dir, write);
    if report.is_complete() {
        remove_deleted_dirs(root, changes.deleted);
    }
    report
}

/// Directories commands deleted, deepest first, when nothing is left in them (a file
/// the person put there since stays, and so does its directory).
fn remove_deleted_dirs(root: &Path, deleted: &BTreeMap<PathBuf, Gone>) {
    for (key, _) in deleted.iter().rev().filter(|(_, g)| **g == Gone::Dir) {
        let _ = std::fs::remove_dir(root.join(key));
    }
}

/// The overlay's check: the target still is what the speculation saw, where it saw it.
fn check_of(workspace: &Workspace, original: &Original) -> txn::Check {
    let (workspace, original) = (workspace.clone(), original.clone());
    Box::new(move |target| check(&workspace, target, &original))
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
    let fail = |e: ApplyError| (key.to_path_buf(), e);
    check(workspace, &root.join(key), original).map_err(fail)?;
    let io = |e: std::io::Error| fail(ApplyError::Io(format!("cannot read the overlay: {e}")));
    let bytes = std::fs::read(source).map_err(io)?;
    let mode = std::fs::metadata(source).map_err(io)?.permissions().mode() & 0o7777;
    // A file the speculation gave other permission bits gets them; otherwise the real
    // file keeps its own (the person may have changed them meanwhile).
    let set_mode = matches!(original, Original::File(fp) if fp.mode != mode);
    let to = To::File {
        bytes,
        mode,
        set_mode,
    };
    Planned::new(root, key, to, check_of(workspace, original))
}

/// Checks one file a command deleted.
fn plan_removal(
    workspace: &Workspace,
    root: &Path,
    key: &Path,
    original: &Original,
) -> Result<Planned, (PathBuf, ApplyError)> {
    Planned::new(root, key, To::Absent, check_of(workspace, original))
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
