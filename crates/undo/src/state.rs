//! What a path held at one moment ([`FileState`]), how it is read from disk, and which
//! workspace-relative paths saki records at all.

use super::objects::Objects;
use serde::{Deserialize, Serialize};
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path};

/// A path's content at one moment, as far as undo needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileState {
    Absent,
    /// A regular file whose bytes are in the object store under `hash`.
    File {
        hash: String,
        size: u64,
        mode: u32,
    },
    Symlink {
        target: String,
    },
    Dir {
        mode: u32,
    },
    /// Something was there whose content was not saved (too large, not a regular file,
    /// unreadable, or the store was full). It cannot be restored; it is compared by size
    /// and modification time only.
    Unsaved {
        size: u64,
        mtime_ns: i64,
        why: String,
    },
}

impl FileState {
    pub fn is_absent(&self) -> bool {
        matches!(self, FileState::Absent)
    }

    /// The object this state needs, when it needs one.
    pub fn hash(&self) -> Option<&str> {
        match self {
            FileState::File { hash, .. } => Some(hash),
            _ => None,
        }
    }

    pub fn size(&self) -> u64 {
        match self {
            FileState::File { size, .. } | FileState::Unsaved { size, .. } => *size,
            _ => 0,
        }
    }

    /// Short words for people: "a file (1.2 KB)", "nothing".
    pub fn describe(&self) -> String {
        match self {
            FileState::Absent => "nothing".into(),
            FileState::File { size, mode, .. } => format!("a file ({}, {mode:o})", bytes(*size)),
            FileState::Symlink { target } => format!("a symlink to {target}"),
            FileState::Dir { .. } => "a directory".into(),
            FileState::Unsaved { why, .. } => format!("a file that was not saved ({why})"),
        }
    }
}

/// `1.2 MB`, `340 B`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// What an lstat says about a path, enough to tell that it did not change since it was
/// read (git's index does the same): any difference means it is read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatKey {
    pub kind: u8,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

pub const KIND_FILE: u8 = 1;
pub const KIND_DIR: u8 = 2;
pub const KIND_SYMLINK: u8 = 3;
pub const KIND_OTHER: u8 = 4;

impl StatKey {
    pub fn of(meta: &Metadata) -> Self {
        let ft = meta.file_type();
        let kind = if ft.is_file() {
            KIND_FILE
        } else if ft.is_dir() {
            KIND_DIR
        } else if ft.is_symlink() {
            KIND_SYMLINK
        } else {
            KIND_OTHER
        };
        Self {
            kind,
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mode: meta.mode() & 0o7777,
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ctime_ns: meta.ctime().saturating_mul(1_000_000_000) + meta.ctime_nsec(),
        }
    }

    /// Changed so recently that a second change within the same timestamp tick would
    /// not show in the stat: such an entry is read again at the next scan.
    pub fn is_racy(&self, scan_started_ns: i64) -> bool {
        const TICK_NS: i64 = 20_000_000;
        self.mtime_ns.max(self.ctime_ns) >= scan_started_ns - TICK_NS
    }
}

pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Reads what `abs` holds now (without following a final symlink), saving a regular
/// file's bytes in `objects`. `max_file` bounds what is saved; `allow_save` false (the
/// store's budget is spent) records a file as unsaved.
pub fn capture(abs: &Path, objects: &Objects, max_file: u64, allow_save: bool) -> FileState {
    match std::fs::symlink_metadata(abs) {
        Ok(meta) => capture_with(abs, &meta, objects, max_file, allow_save),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Absent,
        Err(e) => FileState::Unsaved {
            size: 0,
            mtime_ns: 0,
            why: format!("cannot read it: {e}"),
        },
    }
}

/// [`capture`] with the lstat already taken.
pub fn capture_with(
    abs: &Path,
    meta: &Metadata,
    objects: &Objects,
    max_file: u64,
    allow_save: bool,
) -> FileState {
    let key = StatKey::of(meta);
    let unsaved = |why: String| FileState::Unsaved {
        size: key.size,
        mtime_ns: key.mtime_ns,
        why,
    };
    match key.kind {
        KIND_DIR => FileState::Dir { mode: key.mode },
        KIND_SYMLINK => match std::fs::read_link(abs) {
            Ok(target) => match target.into_os_string().into_string() {
                Ok(target) => FileState::Symlink { target },
                Err(_) => unsaved("its symlink target is not UTF-8".into()),
            },
            Err(e) => unsaved(format!("cannot read the symlink: {e}")),
        },
        KIND_FILE if key.size > max_file => unsaved(format!(
            "{}, over undo.max_file_mb ({})",
            bytes(key.size),
            bytes(max_file)
        )),
        KIND_FILE if !allow_save => unsaved("the undo store's budget is spent".into()),
        KIND_FILE => match read_regular(abs, max_file) {
            Ok((data, mode)) => match objects.put(&data) {
                Ok(hash) => FileState::File {
                    hash,
                    size: data.len() as u64,
                    mode,
                },
                Err(e) => unsaved(format!("cannot save it: {e}")),
            },
            Err(e) => unsaved(format!("cannot read it: {e}")),
        },
        _ => unsaved("not a regular file".into()),
    }
}

/// A regular file's bytes and permission bits: opened without following a symlink and
/// without blocking (a FIFO put in its place is refused, never waited on).
fn read_regular(abs: &Path, max_file: u64) -> std::io::Result<(Vec<u8>, u32)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(abs)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > max_file {
        return Err(std::io::Error::other("grew past undo.max_file_mb"));
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte more than allowed tells a file that grew while it was read.
    file.take(max_file.saturating_add(1))
        .read_to_end(&mut data)?;
    if data.len() as u64 > max_file {
        return Err(std::io::Error::other("grew past undo.max_file_mb"));
    }
    Ok((data, meta.permissions().mode() & 0o7777))
}

/// Whether saki records and restores `rel`: a `/`-separated workspace-relative path of
/// plain components, none of them `.git` (the repository's own data is never touched,
/// nor a nested repository's), without NUL.
pub fn valid_rel(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.contains('\0')
        && !rel.starts_with('/')
        && Path::new(rel).components().all(|c| match c {
            Component::Normal(name) => name != ".git",
            _ => false,
        })
        && !rel.split('/').any(|part| part.is_empty() || part == ".")
}

/// `abs` relative to `root`, as a recordable path.
pub fn rel_of(root: &Path, abs: &Path) -> Option<String> {
    let rel = abs.strip_prefix(root).ok()?.to_str()?.to_owned();
    valid_rel(&rel).then_some(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_inside_are_recorded() {
        assert!(valid_rel("src/main.rs"));
        assert!(valid_rel(".gitignore"));
        assert!(valid_rel("a/.github/x"));
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "./a",
            "a//b",
            ".git/config",
            "sub/.git/index",
            "a\0b",
            "a/",
        ] {
            assert!(!valid_rel(bad), "{bad:?}");
        }
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(bytes(340), "340 B");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(bytes(32 * 1024 * 1024), "32.0 MB");
    }
}
