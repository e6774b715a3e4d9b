//! The content-addressed object store: each distinct file content once, named by its
//! SHA-256 (`objects/ab/cdef…`, files 0600, directories 0700). A file that did not change
//! between two checkpoints, or that several sessions saw, costs nothing more.

use saki_tools::common::{is_sha256_hex, sha256_hex};
use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

#[derive(Debug)]
pub struct Objects {
    dir: PathBuf,
    /// Fan-out directories known to exist (one mkdir each per process).
    made: Mutex<HashSet<String>>,
    /// Objects this process wrote that are not fsync'd yet (made durable together when a
    /// turn is sealed), and the bytes written in all.
    fresh: Mutex<(Vec<String>, u64)>,
}

impl Objects {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            made: Mutex::new(HashSet::new()),
            fresh: Mutex::new((Vec::new(), 0)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, hash: &str) -> Option<PathBuf> {
        // An object name is 64 lowercase hex digits and nothing else: a journal entry
        // cannot name a path with it.
        is_sha256_hex(hash).then(|| self.dir.join(&hash[..2]).join(&hash[2..]))
    }

    /// Whether the object `hash` of `size` bytes is there. An object is renamed into
    /// place before it is fsync'd, so after a crash its name can hold an empty or short
    /// file: one whose length is not `size` counts as missing.
    pub fn has(&self, hash: &str, size: u64) -> bool {
        self.path_of(hash).is_some_and(|p| {
            std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() == size)
        })
    }

    /// Stores `data`, returning its hash; an object already there is left as it is,
    /// unless its length is not the data's (what a crash before its fsync can leave
    /// under its name): then it is written again.
    pub fn put(&self, data: &[u8]) -> std::io::Result<String> {
        let hash = sha256_hex(data);
        let Some(path) = self.path_of(&hash) else {
            return Err(std::io::Error::other("bad object name"));
        };
        if std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.len() == data.len() as u64)
        {
            return Ok(hash);
        }
        let fan = &hash[..2];
        let parent = self.dir.join(fan);
        let known = self
            .made
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(fan);
        if !known {
            saki_tools::common::create_private_dir(&parent)?;
            self.made
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(fan.to_owned());
        }
        // Written under a temporary name, then renamed: a reader never sees half an
        // object under its final name.
        let tmp = parent.join(format!(
            ".tmp-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        let written = file.write_all(data).and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, &path)
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let mut fresh = self.fresh.lock().unwrap_or_else(PoisonError::into_inner);
        fresh.0.push(hash.clone());
        fresh.1 += data.len() as u64;
        Ok(hash)
    }

    /// An object's bytes, checked against its name: a damaged or altered object is an
    /// error, never restored.
    pub fn get(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        let path = self
            .path_of(hash)
            .ok_or_else(|| std::io::Error::other("bad object name"))?;
        let data = std::fs::read(path)?;
        if sha256_hex(&data) != hash {
            return Err(std::io::Error::other(
                "the saved copy is damaged (its hash does not match)",
            ));
        }
        Ok(data)
    }

    /// Bytes written since the last call, and makes those objects durable, their fsyncs
    /// running together.
    pub fn sync_fresh(&self) -> u64 {
        let (hashes, written) =
            std::mem::take(&mut *self.fresh.lock().unwrap_or_else(PoisonError::into_inner));
        let paths: Vec<PathBuf> = hashes.iter().filter_map(|h| self.path_of(h)).collect();
        sync_all(&paths);
        written
    }

    /// Every object's name and size (for the size bound's sweep).
    pub fn list(&self) -> Vec<(String, u64, std::time::SystemTime)> {
        let mut out = Vec::new();
        let Ok(fans) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for fan in fans.flatten() {
            let fan_name = fan.file_name().to_string_lossy().into_owned();
            if fan_name.len() != 2 {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(fan.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = format!("{fan_name}{}", entry.file_name().to_string_lossy());
                if !is_sha256_hex(&name) {
                    continue;
                }
                if let Ok(meta) = entry.metadata() {
                    let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                    out.push((name, meta.len(), modified));
                }
            }
        }
        out
    }

    pub fn remove(&self, hash: &str) {
        if let Some(path) = self.path_of(hash) {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::debug!(path = %path.display(), error = %e, "cannot remove an object");
            }
        }
    }
}

/// fsyncs `paths` on a few threads at once: the filesystem's log can then serve them
/// together instead of one flush each.
pub fn sync_all(paths: &[PathBuf]) {
    if paths.is_empty() {
        return;
    }
    let chunk = paths.len().div_ceil(8).max(1);
    std::thread::scope(|scope| {
        for part in paths.chunks(chunk) {
            scope.spawn(move || {
                for path in part {
                    let synced = std::fs::File::open(path).and_then(|f| f.sync_all());
                    if let Err(e) = synced {
                        tracing::warn!(path = %path.display(), error = %e, "cannot fsync an undo object");
                    }
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_stored_once_and_checked_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let a = objects.put(b"hello").unwrap();
        assert_eq!(objects.put(b"hello").unwrap(), a);
        assert_eq!(objects.get(&a).unwrap(), b"hello");
        assert_eq!(objects.list().len(), 1);
        assert_eq!(objects.sync_fresh(), 5);
        std::fs::write(objects.path_of(&a).unwrap(), b"HELLO").unwrap();
        assert!(objects.get(&a).is_err());
        assert!(objects.path_of("../../etc/passwd").is_none());
        assert!(objects.get("../x").is_err());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(objects.path_of(&a).unwrap().parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn an_object_cut_short_by_a_crash_is_missing_and_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let hash = objects.put(b"hello").unwrap();
        assert!(objects.has(&hash, 5));
        assert!(!objects.has(&hash, 4));
        objects.sync_fresh();
        // What a crash between the rename and the fsync can leave: the final name, no
        // bytes.
        let path = objects.path_of(&hash).unwrap();
        std::fs::File::create(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        assert!(!objects.has(&hash, 5));
        assert_eq!(objects.put(b"hello").unwrap(), hash);
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        assert!(objects.has(&hash, 5));
        assert_eq!(objects.get(&hash).unwrap(), b"hello");
        // Written again, it is made durable with the next batch.
        assert_eq!(objects.sync_fresh(), 5);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
