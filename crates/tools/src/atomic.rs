//! Atomic file writes, and removing the temporary files a killed saki left behind.
//!
//! A write goes to `.saki-<pid>-<random>.tmp` beside its target, is fsync'd, then
//! renamed over the target. A `kill -9` between the two leaves the temporary file, full
//! size, in the person's tree. So that a later saki can remove it without walking the
//! workspace, each process records — once per directory, before its first temporary
//! file there — the directories it writes temporary files in:
//! `<data dir>/inflight/<pid>` (directory 0700, file 0600, one NUL-terminated path per
//! directory). At start, [`clean_stale`] takes each record of a process that no longer
//! runs, removes in every directory it lists the regular files named
//! `.saki-<that pid>-*.tmp`, then the record.
//!
//! Per directory rather than per file: a record line per write (and its removal after
//! the rename) would add two writes to every file saved; a directory is recorded once
//! per process. The pid in the name keeps the cleanup to that dead process's files.

use std::collections::HashSet;
use std::fs::Permissions;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The subdirectory of the data directory holding the per-process records.
pub const INFLIGHT_DIR: &str = "inflight";

/// Writes atomically: a temporary file in the same directory, then a rename. An
/// existing file's permissions are kept; a new file is 0644. Parent directories are
/// created.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    write_atomic_mode(path, contents, 0o644)
}

/// [`write_atomic`], with the permission bits a new file gets.
pub fn write_atomic_mode(path: &Path, contents: &[u8], new_file_mode: u32) -> std::io::Result<()> {
    let staged = stage(path, contents, new_file_mode)?;
    staged.sync()?;
    crate::state::pause_point("write_atomic");
    staged.commit()
}

/// A temporary file written beside its target, not yet durable and not yet renamed over
/// it: the first half of [`write_atomic_mode`], for a caller that writes several files
/// and makes them durable together ([`sync_staged`]) before renaming any. Dropped
/// without [`Staged::commit`], the temporary file is removed.
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
}

/// Writes `contents` to a temporary file beside `path` (parent directories created; an
/// existing file's permissions, or `new_file_mode` for a new one), without fsync.
pub fn stage(path: &Path, contents: &[u8], new_file_mode: u32) -> std::io::Result<Staged> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let permissions = std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions())
        .unwrap_or_else(|| Permissions::from_mode(new_file_mode));
    note_directory(dir);
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(std::process::id()))
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    // A temporary file is created 0600.
    std::fs::set_permissions(tmp.path(), permissions)?;
    Ok(Staged {
        tmp,
        target: path.to_path_buf(),
    })
}

impl Staged {
    /// Makes the temporary file's content durable (fsync).
    pub fn sync(&self) -> std::io::Result<()> {
        self.tmp.as_file().sync_all()
    }

    /// Gives the temporary file these permission bits instead of the target's (a change
    /// of mode the caller means to make).
    pub fn set_mode(&self, mode: u32) -> std::io::Result<()> {
        std::fs::set_permissions(self.tmp.path(), Permissions::from_mode(mode))
    }

    /// Renames the temporary file over its target.
    pub fn commit(self) -> std::io::Result<()> {
        self.tmp.persist(&self.target).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Makes every staged file durable, their fsyncs running at once (one thread each but
/// the last): the disk and the filesystem's log can then serve them together, so the
/// batch costs about one fsync instead of one per file. The first error is returned.
pub fn sync_staged<S: std::borrow::Borrow<Staged> + Sync>(staged: &[S]) -> std::io::Result<()> {
    let Some((last, rest)) = staged.split_last() else {
        return Ok(());
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = rest
            .iter()
            .map(|s| scope.spawn(|| s.borrow().sync()))
            .collect();
        let mut result = last.borrow().sync();
        for handle in handles {
            let synced = handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("an fsync thread panicked")));
            result = result.and(synced);
        }
        result
    })
}

const TEMP_SUFFIX: &str = ".tmp";

fn temp_prefix(pid: u32) -> String {
    format!(".saki-{pid}-")
}

/// Whether `name` is a temporary file of process `pid`.
fn is_temp_of(name: &[u8], pid: u32) -> bool {
    let prefix = temp_prefix(pid);
    name.len() > prefix.len() + TEMP_SUFFIX.len()
        && name.starts_with(prefix.as_bytes())
        && name.ends_with(TEMP_SUFFIX.as_bytes())
}

/// The directories this process has recorded.
static RECORDED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Records `dir` in this process's registry once (when a data directory is set). A
/// failure is logged and the write goes on: the file is still written atomically, only
/// a kill in the middle would leave its temporary file for good.
fn note_directory(dir: &Path) {
    let Some(data) = crate::state::data_dir() else {
        return;
    };
    let mut recorded = RECORDED.lock().unwrap_or_else(PoisonError::into_inner);
    let recorded = recorded.get_or_insert_with(HashSet::new);
    if recorded.contains(dir) {
        return;
    }
    let registry = data.join(INFLIGHT_DIR);
    match append_record(&registry, dir) {
        Ok(()) => {
            recorded.insert(dir.to_path_buf());
        }
        Err(e) => tracing::warn!(
            registry = %registry.display(),
            error = %e,
            "cannot record a temporary file's directory; a kill mid-write would leave it"
        ),
    }
}

fn append_record(registry: &Path, dir: &Path) -> std::io::Result<()> {
    crate::common::create_private_dir(registry)?;
    let mut file =
        crate::common::open_private_append(&registry.join(std::process::id().to_string()))?;
    let mut line = dir.as_os_str().as_bytes().to_vec();
    line.push(0);
    file.write_all(&line)?;
    // Durable before the temporary file exists, so a power cut cannot orphan it either.
    file.sync_data()
}

/// Removes the temporary files that processes no longer running left in the
/// directories they recorded under `registry` (`<data dir>/inflight`), then their
/// records. This process's record, and those of running processes, are left alone.
/// Returns the files removed.
pub fn clean_stale(registry: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(registry) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut removed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || crate::state::pid_alive(pid) {
            continue;
        }
        let record = entry.path();
        match std::fs::read(&record) {
            Ok(bytes) => {
                for dir in bytes.split(|b| *b == 0).filter(|d| !d.is_empty()) {
                    let dir = Path::new(std::ffi::OsStr::from_bytes(dir));
                    remove_temps_of(dir, pid, &mut removed);
                }
            }
            Err(e) => tracing::warn!(record = %record.display(), error = %e, "unreadable record"),
        }
        if let Err(e) = std::fs::remove_file(&record) {
            tracing::warn!(record = %record.display(), error = %e, "cannot remove a stale record");
        }
    }
    if !removed.is_empty() {
        tracing::info!(
            count = removed.len(),
            "removed temporary files a killed saki left"
        );
    }
    removed
}

fn remove_temps_of(dir: &Path, pid: u32, removed: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if !is_temp_of(entry.file_name().as_bytes(), pid) {
            continue;
        }
        // Not followed: only a regular file saki made is removed.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_file(&path) {
            Ok(()) => removed.push(path),
            Err(e) => tracing::warn!(file = %path.display(), error = %e, "cannot remove"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names() {
        assert!(is_temp_of(b".saki-12-abcdef.tmp", 12));
        assert!(!is_temp_of(b".saki-123-abcdef.tmp", 12));
        assert!(!is_temp_of(b".saki-12-.tmp", 12), "nothing between");
        assert!(!is_temp_of(b".saki-12-abc.txt", 12));
        assert!(!is_temp_of(b".saki-abc.tmp", 12));
    }

    #[test]
    fn stale_temp_files_of_dead_processes_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let registry = tmp.path().join("inflight");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let dead = 4_999_999;
        let files = [
            ws.join(format!(".saki-{dead}-aaaaaa.tmp")),
            ws.join("sub").join(format!(".saki-{dead}-bbbbbb.tmp")),
            // Not of the dead process, or not saki's name: kept.
            ws.join(".saki-1-cccccc.tmp"),
            ws.join(format!(".saki-{dead}-dddddd.txt")),
            ws.join("notes.tmp"),
        ];
        for f in &files {
            std::fs::write(f, "x").unwrap();
        }
        // A directory with the name is not a file saki wrote.
        std::fs::create_dir(ws.join(format!(".saki-{dead}-dir.tmp"))).unwrap();
        append_record(&registry, &ws).unwrap();
        std::fs::rename(
            registry.join(std::process::id().to_string()),
            registry.join(dead.to_string()),
        )
        .unwrap();
        std::fs::write(
            registry.join(dead.to_string()),
            [
                ws.as_os_str().as_bytes(),
                b"\0",
                ws.join("sub").as_os_str().as_bytes(),
                b"\0",
            ]
            .concat(),
        )
        .unwrap();
        // A running process's record (pid 1) and this process's are left alone.
        std::fs::write(
            registry.join("1"),
            [ws.as_os_str().as_bytes(), b"\0"].concat(),
        )
        .unwrap();
        append_record(&registry, &ws).unwrap();

        let mut removed = clean_stale(&registry);
        removed.sort();
        assert_eq!(removed, files[..2].to_vec());
        for f in &files[2..] {
            assert!(f.exists(), "{}", f.display());
        }
        assert!(ws.join(format!(".saki-{dead}-dir.tmp")).is_dir());
        assert!(!registry.join(dead.to_string()).exists(), "record removed");
        assert!(registry.join("1").exists());
        assert!(registry.join(std::process::id().to_string()).exists());
        assert!(clean_stale(&tmp.path().join("missing")).is_empty());
    }
}
