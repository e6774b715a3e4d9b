//! Putting paths back: what an undo (or redo) means for each path, whether the person
//! changed it since (a conflict), and writing it. Every write stays inside the root: the
//! path is a recorded relative path with plain components, none `.git`, and each parent
//! directory is looked at with lstat before anything is written beneath it, so a
//! directory replaced by a symlink (to `/etc`, say) is refused, never written through.

use super::journal::Checkpoint;
use super::objects::Objects;
use super::state::{valid_rel, FileState};
use saki_tools::common::sha256_hex;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One path to put back: what it should hold now (`expect`; `None`: unknown, the turn
/// was cut off) and what it gets (`to`).
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub path: String,
    pub expect: Option<FileState>,
    pub to: FileState,
    /// A command ran when the change was found, at a path it does not name: it or the
    /// person made it (the command, shortened). Written only when forced.
    pub uncertain: Option<String>,
}

/// Which way to go through checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Back to what the oldest of them found.
    Undo,
    /// Forward again to what the newest of them left.
    Redo,
}

/// The targets for `checkpoints` (oldest first) taken together: per path, the state the
/// oldest found and the state the newest left; uncertain when any of them is, since the
/// state written skips over that change either way.
pub fn plan(checkpoints: &[&Checkpoint], direction: Direction) -> Vec<Target> {
    let mut first: BTreeMap<&str, FileState> = BTreeMap::new();
    let mut last: BTreeMap<&str, Option<FileState>> = BTreeMap::new();
    let mut uncertain: BTreeMap<&str, String> = BTreeMap::new();
    for cp in checkpoints {
        for (path, change) in cp.changed() {
            first
                .entry(path.as_str())
                .or_insert_with(|| change.before.clone());
            last.insert(path.as_str(), change.after.clone());
            if let Some(command) = &change.uncertain {
                uncertain
                    .entry(path.as_str())
                    .or_insert_with(|| command.clone());
            }
        }
    }
    first
        .into_iter()
        .filter_map(|(path, before)| {
            let after = last.remove(path).flatten();
            let (expect, to) = match direction {
                Direction::Undo => (after, before),
                Direction::Redo => (Some(before), after?),
            };
            (expect.as_ref() != Some(&to)).then(|| Target {
                path: path.to_owned(),
                expect,
                to,
                uncertain: uncertain.get(path).cloned(),
            })
        })
        .collect()
}

/// A path the person (or something else) changed since the turn, or that cannot be
/// written safely, or whose change the turn may not have made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    pub why: String,
    /// Nothing changed it since; but saki cannot tell whether the command named in
    /// `why` or the person made the turn's change there.
    pub uncertain: bool,
}

/// What a restore did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Restored {
    pub restored: Vec<String>,
    /// Paths left as they are, and why (not saved, the saved copy is gone, ...).
    pub left: Vec<(String, String)>,
}

/// Conflicts: paths that do not hold what the checkpoints say they should. Also returns
/// the paths that cannot be restored at all (no saved copy).
pub fn check(
    root: &Path,
    targets: &[Target],
    objects: &Objects,
) -> (Vec<Conflict>, Vec<(String, String)>) {
    let mut conflicts = Vec::new();
    let mut unrestorable = Vec::new();
    for target in targets {
        if let Some(why) = unrestorable_why(&target.to, objects) {
            unrestorable.push((target.path.clone(), why));
            continue;
        }
        let why = match &target.expect {
            None => Some("the turn was cut off before saki saw what it left there".to_owned()),
            Some(expect) => match holds(root, &target.path, expect) {
                Ok(true) => None,
                Ok(false) => Some(format!(
                    "changed since the turn (it left {}, now: {})",
                    expect.describe(),
                    now_describe(root, &target.path)
                )),
                Err(why) => Some(why),
            },
        };
        // A change since is the stronger reason; without one, an uncertain change is
        // still not the turn's for sure.
        let (why, uncertain) = match (why, &target.uncertain) {
            (Some(why), _) => (Some(why), false),
            (None, Some(command)) => (Some(uncertain_why(command)), true),
            (None, None) => (None, false),
        };
        // Already holding what it would get is no conflict: nothing to write.
        if let Some(why) = why {
            if !holds(root, &target.path, &target.to).unwrap_or(false) {
                conflicts.push(Conflict {
                    path: target.path.clone(),
                    why,
                    uncertain,
                });
            }
        }
    }
    (conflicts, unrestorable)
}

/// Why an uncertain change is not restored unless forced.
pub fn uncertain_why(command: &str) -> String {
    format!(
        "changed while `{command}` ran, which does not name it: saki cannot tell whether the \
         command or you changed it"
    )
}

fn unrestorable_why(to: &FileState, objects: &Objects) -> Option<String> {
    match to {
        FileState::Unsaved { why, .. } => Some(format!("it was not saved ({why})")),
        FileState::File { hash, size, .. } if !objects.has(hash, *size) => {
            Some("its saved copy is gone (dropped to stay under undo.max_mb)".into())
        }
        _ => None,
    }
}

/// Checks the directories above `rel`: each must be a real directory (a missing one
/// ends the check: nothing below it exists). Returns the absolute path.
pub(crate) fn parents_safe(root: &Path, rel: &str) -> Result<PathBuf, String> {
    if !valid_rel(rel) {
        return Err("not a path saki restores".into());
    }
    let mut dir = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("{} is a symlink now", display(root, &dir)))
            }
            Ok(m) if !m.is_dir() => {
                return Err(format!("{} is not a directory now", display(root, &dir)))
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(root.join(rel))
}

fn display(root: &Path, abs: &Path) -> String {
    abs.strip_prefix(root)
        .map_or_else(|_| abs.display().to_string(), |r| r.display().to_string())
}

/// Whether `rel` holds `state` now.
pub fn holds(root: &Path, rel: &str, state: &FileState) -> Result<bool, String> {
    let abs = parents_safe(root, rel)?;
    let meta = match std::fs::symlink_metadata(&abs) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(state.is_absent()),
        Err(e) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => return Ok(state.is_absent()),
        Err(e) => return Err(format!("cannot look at it: {e}")),
    };
    let mode = meta.mode() & 0o7777;
    Ok(match state {
        FileState::Absent => false,
        FileState::Dir { mode: m } => meta.is_dir() && mode == *m,
        FileState::Symlink { target } => {
            meta.file_type().is_symlink()
                && std::fs::read_link(&abs).is_ok_and(|t| t.as_os_str() == target.as_str())
        }
        FileState::File {
            hash,
            size,
            mode: m,
        } => {
            meta.is_file()
                && meta.len() == *size
                && mode == *m
                && std::fs::read(&abs).is_ok_and(|data| sha256_hex(&data) == *hash)
        }
        FileState::Unsaved { size, mtime_ns, .. } => {
            let mtime = meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec();
            meta.len() == *size && mtime == *mtime_ns
        }
    })
}

fn now_describe(root: &Path, rel: &str) -> String {
    match std::fs::symlink_metadata(root.join(rel)) {
        Err(_) => "nothing".into(),
        Ok(m) if m.is_dir() => "a directory".into(),
        Ok(m) if m.file_type().is_symlink() => "a symlink".into(),
        Ok(m) => format!(
            "a file ({}, {:o})",
            super::state::bytes(m.len()),
            m.mode() & 0o7777
        ),
    }
}

/// Writes every target but the unrestorable ones. Files (written, or removed where a
/// regular file stands) go through one `saki_tools::txn` transaction: all or none,
/// journaled, made durable together before any is renamed; a failure midway puts the
/// others back. Around it, directories are made (shallowest first) before, and
/// directories and symbolic links removed or made (deepest first) after, one by one.
pub fn apply(root: &Path, targets: &[Target], objects: &Objects) -> Restored {
    let mut done = Restored::default();
    let mut order: Vec<&Target> = targets.iter().collect();
    let depth = |t: &&Target| t.path.matches('/').count();
    order.sort_by_key(|t| match t.to {
        FileState::Dir { .. } => (0, depth(t)),
        FileState::File { .. } | FileState::Unsaved { .. } => (1, depth(t)),
        _ => (2, usize::MAX - depth(t)),
    });
    let mut checked = Vec::new();
    let mut rest = Vec::new();
    let mut files = Vec::new();
    for target in order {
        if let Some(why) = unrestorable_why(&target.to, objects) {
            done.left.push((target.path.clone(), why));
        } else if matches!(target.to, FileState::Dir { .. }) {
            rest.push(target);
        } else {
            files.push(target);
        }
    }
    // Directories first: the files may go into them.
    put_each(root, &rest, objects, &mut done);
    let mut after = Vec::new();
    for target in files {
        match holds(root, &target.path, &target.to) {
            Ok(true) => {
                done.restored.push(target.path.clone());
                continue;
            }
            Err(why) => {
                done.left.push((target.path.clone(), why));
                continue;
            }
            Ok(false) => {}
        }
        match plan_file(root, target, objects) {
            Some(planned) => checked.push(planned),
            None => after.push(target),
        }
    }
    let journal = saki_tools::state::data_dir().map(|d| d.join(saki_tools::txn::JOURNAL_DIR));
    let report = saki_tools::txn::apply(root, checked, journal.as_deref());
    for file in report.files {
        let path = file.path.to_string_lossy().into_owned();
        match file.result {
            Ok(()) => done.restored.push(path),
            Err(e) => done.left.push((path, e.to_string())),
        }
    }
    put_each(root, &after, objects, &mut done);
    done
}

/// Puts each target in place on its own (directories, symbolic links, and files where a
/// directory or a link stands now).
fn put_each(root: &Path, targets: &[&Target], objects: &Objects, done: &mut Restored) {
    for target in targets {
        let result = put(root, target, objects).and_then(|staged| match staged {
            None => Ok(()),
            Some((stage, mode)) => {
                let abs = root.join(&target.path);
                stage
                    .sync()
                    .and_then(|()| stage.commit())
                    .and_then(|()| {
                        std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(mode))
                    })
                    .map_err(|e| format!("cannot write it: {e}"))
            }
        });
        match result {
            Ok(()) => done.restored.push(target.path.clone()),
            Err(why) => done.left.push((target.path.clone(), why)),
        }
    }
}

/// The transaction's change for a file target: a file written where a regular file or
/// nothing stands, or a regular file removed. `None`: not a file's change (a directory or
/// a symbolic link is involved), for [`put`]; `Some(Err)`: it cannot be made.
fn plan_file(
    root: &Path,
    target: &Target,
    objects: &Objects,
) -> Option<Result<saki_tools::txn::Planned, (PathBuf, saki_tools::txn::ApplyError)>> {
    use saki_tools::txn::{ApplyError, Planned, To};
    let now = std::fs::symlink_metadata(root.join(&target.path)).ok();
    if now.as_ref().is_some_and(|m| !m.is_file()) {
        return None;
    }
    let key = PathBuf::from(&target.path);
    let fail = |why: String| Some(Err((key.clone(), ApplyError::Io(why))));
    let to = match &target.to {
        FileState::Absent => To::Absent,
        FileState::File { hash, mode, .. } => {
            let bytes = match objects.get(hash) {
                Ok(bytes) => bytes,
                Err(e) => return fail(format!("its saved copy: {e}")),
            };
            if let Err(why) = make_parents(root, &target.path) {
                return fail(why);
            }
            To::File {
                bytes,
                mode: *mode,
                set_mode: true,
            }
        }
        _ => return None,
    };
    // Checked at the plan and again right before its rename: the parents are still real
    // directories, and a regular file or nothing stands there.
    let (root_owned, rel) = (root.to_path_buf(), target.path.clone());
    let check: saki_tools::txn::Check = Box::new(move |abs: &Path| {
        parents_safe(&root_owned, &rel).map_err(ApplyError::Moved)?;
        match std::fs::symlink_metadata(abs) {
            Ok(m) if !m.is_file() => Err(ApplyError::Conflict(
                "it is no longer a regular file".to_owned(),
            )),
            _ => Ok(()),
        }
    });
    Some(Planned::new(root, &key, to, check))
}

type Stage = (saki_tools::atomic::Staged, u32);

/// Puts one target in place; a file's content comes back staged, to be made durable and
/// renamed with the others.
fn put(root: &Path, target: &Target, objects: &Objects) -> Result<Option<Stage>, String> {
    if holds(root, &target.path, &target.to)? {
        return Ok(None);
    }
    let abs = parents_safe(root, &target.path)?;
    if !target.to.is_absent() {
        make_parents(root, &target.path)?;
    }
    let current = std::fs::symlink_metadata(&abs).ok();
    let clear = |what: &str| -> Result<(), String> {
        match &current {
            None => Ok(()),
            Some(m) if m.is_dir() => std::fs::remove_dir(&abs)
                .map_err(|e| format!("cannot {what}: the directory is not empty ({e})")),
            Some(_) => std::fs::remove_file(&abs).map_err(|e| format!("cannot {what}: {e}")),
        }
    };
    match &target.to {
        FileState::Absent => clear("remove it").map(|()| None),
        FileState::Dir { mode } => {
            if !current.as_ref().is_some_and(|m| m.is_dir()) {
                clear("make it a directory")?;
                std::fs::create_dir(&abs).map_err(|e| format!("cannot create it: {e}"))?;
            }
            std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(*mode))
                .map_err(|e| format!("cannot set its mode: {e}"))?;
            Ok(None)
        }
        FileState::Symlink { target: link } => {
            clear("replace it")?;
            std::os::unix::fs::symlink(link, &abs)
                .map_err(|e| format!("cannot create the symlink: {e}"))?;
            Ok(None)
        }
        FileState::File { hash, mode, .. } => {
            let data = objects
                .get(hash)
                .map_err(|e| format!("its saved copy: {e}"))?;
            // A directory in the way goes first (it must be empty); a file or symlink
            // is replaced by the rename itself, never written through.
            if current.as_ref().is_some_and(|m| m.is_dir()) {
                clear("replace the directory")?;
            }
            let stage = saki_tools::atomic::stage(&abs, &data, *mode)
                .map_err(|e| format!("cannot write it: {e}"))?;
            Ok(Some((stage, *mode)))
        }
        FileState::Unsaved { why, .. } => Err(format!("it was not saved ({why})")),
    }
}

/// Creates the missing directories above `rel`, one level at a time, each checked.
fn make_parents(root: &Path, rel: &str) -> Result<(), String> {
    let mut dir = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() && !m.file_type().is_symlink() => {}
            Ok(_) => return Err(format!("{} is not a directory now", display(root, &dir))),
            Err(_) => std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create {}: {e}", display(root, &dir)))?,
        }
    }
    Ok(())
}
