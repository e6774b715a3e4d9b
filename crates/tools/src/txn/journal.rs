//! The transaction journal: what the real files were before a transaction (an accept, an
//! undo, a redo, a rewind) changed them, so a failure midway, or a process killed midway,
//! never leaves a half-changed tree.
//!
//! One file per apply, `<data dir>/journal/apply-<pid>-<n>.journal` (0600, in a 0700
//! directory): a JSON line (the workspace root, and per file its path, its original —
//! absent, with the directories the apply would create, or its bytes' place in the rest
//! of the file and its permission bits — and the length and hash of what the apply
//! writes), then the originals' bytes. It is written atomically and fsync'd (directory
//! included) before the first file is written, and removed after the last.
//!
//! At start, [`recover`] rolls back the journals of processes no longer running: a file
//! that holds what the apply wrote gets its original back (a new one is removed, with the
//! directories the apply created if they are empty); a file that holds its original was
//! not reached; a file that holds anything else was changed since, and is left alone.

use super::Planned;
use crate::Workspace;
use serde::{Deserialize, Serialize};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The subdirectory of saki's data directory holding apply journals.
pub const JOURNAL_DIR: &str = "journal";

const PREFIX: &str = "apply-";
const SUFFIX: &str = ".journal";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A path as its bytes (paths need not be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct RawPath(Vec<u8>);

impl RawPath {
    fn of(path: &Path) -> Self {
        Self(path.as_os_str().as_bytes().to_vec())
    }
    fn path(&self) -> PathBuf {
        PathBuf::from(std::ffi::OsString::from_vec(self.0.clone()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Before {
    /// No file; the apply creates it, and these directories (relative, deepest first).
    Absent { created_dirs: Vec<RawPath> },
    /// A file: its bytes at `offset..offset + len` after the header line, and its mode.
    File { offset: u64, len: u64, mode: u32 },
}

/// Length and (stable) hash of some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    len: u64,
    hash: u64,
}

impl Stamp {
    fn of(bytes: &[u8]) -> Self {
        Self {
            len: bytes.len() as u64,
            hash: fnv1a(bytes),
        }
    }
}

/// FNV-1a, 64 bits: stable across builds (std's hasher is not promised to be), so a
/// later saki can tell whether a file still holds what the apply wrote.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// Relative to the root.
    key: RawPath,
    before: Before,
    /// What the apply leaves there; `None`: no file (a deletion).
    written: Option<Stamp>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Header {
    version: u32,
    root: RawPath,
    entries: Vec<Entry>,
}

/// The journal of one apply in progress.
pub struct Journal {
    /// On disk, when there is a data directory.
    path: Option<PathBuf>,
    root: PathBuf,
    entries: Vec<Entry>,
    originals: Vec<u8>,
}

impl Journal {
    /// Saves what every planned target is now, durably when `dir` is given.
    pub fn begin(dir: Option<&Path>, root: &Path, planned: &[Planned]) -> std::io::Result<Journal> {
        use std::os::unix::fs::PermissionsExt;
        let mut entries = Vec::with_capacity(planned.len());
        let mut originals = Vec::new();
        for p in planned {
            let before = match std::fs::symlink_metadata(&p.target) {
                Ok(meta) => {
                    let bytes = std::fs::read(&p.target)?;
                    let before = Before::File {
                        offset: originals.len() as u64,
                        len: bytes.len() as u64,
                        mode: meta.permissions().mode() & 0o7777,
                    };
                    originals.extend_from_slice(&bytes);
                    before
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Before::Absent {
                    created_dirs: p
                        .key
                        .ancestors()
                        .skip(1)
                        .filter(|a| !a.as_os_str().is_empty() && !root.join(a).exists())
                        .map(RawPath::of)
                        .collect(),
                },
                Err(e) => return Err(e),
            };
            entries.push(Entry {
                key: RawPath::of(&p.key),
                before,
                written: p.bytes().map(Stamp::of),
            });
        }
        let mut journal = Journal {
            path: None,
            root: root.to_path_buf(),
            entries,
            originals,
        };
        if let Some(dir) = dir {
            journal.path = Some(journal.save(dir)?);
        }
        Ok(journal)
    }

    fn save(&self, dir: &Path) -> std::io::Result<PathBuf> {
        crate::common::create_private_dir(dir)?;
        let header = Header {
            version: 1,
            root: RawPath::of(&self.root),
            entries: self.entries.clone(),
        };
        let mut bytes = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        bytes.extend_from_slice(&self.originals);
        let pid = std::process::id();
        let path = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let candidate = dir.join(format!("{PREFIX}{pid}-{n}{SUFFIX}"));
            if !candidate.exists() {
                break candidate;
            }
        };
        crate::atomic::write_atomic_mode(&path, &bytes, 0o600)?;
        sync_dir(dir)?;
        Ok(path)
    }

    /// Puts file `index` back as it was; `Err` says why it could not be.
    pub fn restore(&self, index: usize) -> Result<(), String> {
        match self.entries.get(index) {
            Some(entry) => match restore_entry(&self.root, entry, &self.originals) {
                Restored::Put | Restored::Removed | Restored::Unchanged => Ok(()),
                Restored::Left(why) | Restored::Failed(why) => Err(why),
            },
            None => Err("not in the journal".to_owned()),
        }
    }

    /// Removes the directories the apply created for new files it did not write, while
    /// they are empty (after a failure, once their temporary files are gone).
    pub fn remove_created_dirs(&self) {
        for entry in &self.entries {
            if let Before::Absent { created_dirs } = &entry.before {
                if !self.root.join(entry.key.path()).exists() {
                    remove_empty(&self.root, created_dirs);
                }
            }
        }
    }

    /// The apply is over: the journal is removed (durably, so a power cut cannot bring
    /// it back and roll back a finished apply).
    pub fn finish(self) {
        let Some(path) = self.path else {
            return;
        };
        let removed =
            std::fs::remove_file(&path).and_then(|()| path.parent().map_or(Ok(()), sync_dir));
        if let Err(e) = removed {
            tracing::warn!(journal = %path.display(), error = %e, "cannot remove an apply journal");
        }
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// What became of one file when a journal was rolled back.
enum Restored {
    /// The original was written back.
    Put,
    /// The file the apply created was removed.
    Removed,
    /// It holds its original: the apply had not reached it.
    Unchanged,
    /// It holds something else than the apply wrote: left alone, with why.
    Left(String),
    Failed(String),
}

fn restore_entry(root: &Path, entry: &Entry, originals: &[u8]) -> Restored {
    let key = entry.key.path();
    let target = root.join(&key);
    // The path must still lead where the apply wrote (no symlink swapped in since).
    let leads_there = Workspace::new(root)
        .and_then(|w| {
            w.resolve_for_write(&target.to_string_lossy())
                .map_err(std::io::Error::other)
        })
        .is_ok_and(|resolved| resolved == target);
    if !leads_there {
        return Restored::Left("the path now leads elsewhere".to_owned());
    }
    let now = match std::fs::symlink_metadata(&target) {
        Ok(meta) if meta.is_file() => match std::fs::read(&target) {
            Ok(bytes) => Some(bytes),
            Err(e) => return Restored::Failed(e.to_string()),
        },
        Ok(_) => return Restored::Left("it is no longer a regular file".to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Restored::Failed(e.to_string()),
    };
    let holds_written = match entry.written {
        Some(stamp) => now.as_deref().is_some_and(|b| Stamp::of(b) == stamp),
        None => now.is_none(),
    };
    match &entry.before {
        Before::Absent { created_dirs } => {
            if now.is_none() {
                remove_empty(root, created_dirs);
                return Restored::Unchanged;
            }
            if !holds_written {
                return Restored::Left("it was changed since".to_owned());
            }
            if let Err(e) = std::fs::remove_file(&target) {
                return Restored::Failed(e.to_string());
            }
            remove_empty(root, created_dirs);
            Restored::Removed
        }
        Before::File { offset, len, mode } => {
            let range = usize::try_from(*offset)
                .ok()
                .zip(usize::try_from(offset.saturating_add(*len)).ok())
                .and_then(|(start, end)| originals.get(start..end));
            let Some(original) = range else {
                return Restored::Failed("the journal is cut short".to_owned());
            };
            let put = || match crate::atomic::write_atomic_mode(&target, original, *mode) {
                Ok(()) => {
                    set_mode(&target, *mode).map_or_else(Restored::Failed, |()| Restored::Put)
                }
                Err(e) => Restored::Failed(e.to_string()),
            };
            match now {
                // Its bytes are back; a mode the apply changed goes back too.
                Some(bytes) if bytes == original => match holds_written {
                    true => set_mode(&target, *mode)
                        .map_or_else(Restored::Failed, |()| Restored::Unchanged),
                    false => Restored::Unchanged,
                },
                _ if holds_written => put(),
                Some(_) => Restored::Left("it was changed since".to_owned()),
                None => Restored::Left("it was deleted since".to_owned()),
            }
        }
    }
}

/// Gives `target` these permission bits (a file written over keeps its own, so a mode
/// the apply changed is put back by hand).
fn set_mode(target: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(target, std::fs::Permissions::from_mode(mode))
        .map_err(|e| e.to_string())
}

/// Removes the directories an apply created, deepest first, while they are empty.
fn remove_empty(root: &Path, dirs: &[RawPath]) {
    for dir in dirs {
        if std::fs::remove_dir(root.join(dir.path())).is_err() {
            break;
        }
    }
}

/// An apply a killed saki left half done, rolled back at start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RolledBack {
    /// The workspace root it was applied to.
    pub root: PathBuf,
    /// Files given back their original content (relative to `root`).
    pub restored: Vec<PathBuf>,
    /// New files the apply had created, removed.
    pub removed: Vec<PathBuf>,
    /// Files left as found, with why (changed since, or could not be restored).
    pub left: Vec<(PathBuf, String)>,
    /// A journal that could not be read (renamed to `*.unreadable`, and kept).
    pub unreadable: Option<PathBuf>,
}

impl RolledBack {
    /// Whether the person needs to hear about it: something was changed, or could not be.
    pub fn changed_anything(&self) -> bool {
        !self.restored.is_empty()
            || !self.removed.is_empty()
            || !self.left.is_empty()
            || self.unreadable.is_some()
    }
}

impl std::fmt::Display for RolledBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(journal) = &self.unreadable {
            return write!(
                f,
                "a saki stopped while changing files (an accept, an undo or a redo), and \
                 its journal cannot be read ({}); files it named may be half changed",
                journal.display()
            );
        }
        write!(
            f,
            "a saki stopped while changing files in {} (an accept, an undo or a redo); \
             rolled back",
            self.root.display()
        )?;
        if !self.restored.is_empty() {
            write!(f, "; restored: {}", list(&self.restored))?;
        }
        if !self.removed.is_empty() {
            write!(f, "; removed (new files): {}", list(&self.removed))?;
        }
        for (path, why) in &self.left {
            write!(f, "; left as found: {} ({why})", path.display())?;
        }
        Ok(())
    }
}

fn journal_pid(name: &str) -> Option<u32> {
    let (pid, n) = name
        .strip_prefix(PREFIX)?
        .strip_suffix(SUFFIX)?
        .split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Rolls back the journals in `dir` that processes no longer running left (this
/// process's and running ones' are left alone); each is removed once every file is back
/// or left alone for a reason, and kept (to try again at the next start) when a restore
/// failed. Returns one report per journal, for the person.
pub fn recover(dir: &Path) -> Vec<RolledBack> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut names: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str().and_then(journal_pid)?;
            Some((pid, e.path()))
        })
        .filter(|(pid, _)| *pid != me && !crate::state::pid_alive(*pid))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|(_, path)| roll_back(&path))
        .collect()
}

fn roll_back(path: &Path) -> RolledBack {
    let Some((header, originals)) = std::fs::read(path).ok().and_then(|bytes| parse(&bytes)) else {
        let aside = path.with_extension("unreadable");
        if let Err(e) = std::fs::rename(path, &aside) {
            tracing::warn!(journal = %path.display(), error = %e, "cannot set aside a journal");
        }
        return RolledBack {
            unreadable: Some(aside),
            ..RolledBack::default()
        };
    };
    let root = header.root.path();
    let mut out = RolledBack {
        root: root.clone(),
        ..RolledBack::default()
    };
    let mut failed = false;
    for entry in &header.entries {
        let key = entry.key.path();
        match restore_entry(&root, entry, &originals) {
            Restored::Put => out.restored.push(key),
            Restored::Removed => out.removed.push(key),
            Restored::Unchanged => {}
            Restored::Left(why) => out.left.push((key, why)),
            Restored::Failed(why) => {
                failed = true;
                out.left
                    .push((key, format!("could not be restored: {why}")));
            }
        }
    }
    tracing::warn!(journal = %path.display(), restored = out.restored.len(),
        removed = out.removed.len(), left = out.left.len(), "rolled back an unfinished apply");
    if !failed {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(journal = %path.display(), error = %e, "cannot remove a journal");
        }
    }
    out
}

fn parse(bytes: &[u8]) -> Option<(Header, Vec<u8>)> {
    let end = bytes.iter().position(|b| *b == b'\n')?;
    let header: Header = serde_json::from_slice(&bytes[..end]).ok()?;
    (header.version == 1).then(|| (header, bytes[end + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hash() {
        assert_eq!(journal_pid("apply-12-3.journal"), Some(12));
        assert_eq!(journal_pid("apply-12.journal"), None);
        assert_eq!(journal_pid("apply-12-3.journal.unreadable"), None);
        assert_eq!(journal_pid(".saki-12-abc.tmp"), None);
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
