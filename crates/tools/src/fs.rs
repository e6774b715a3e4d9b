//! `Fs`: where the file tools read and write. The tools resolve and scope-check every
//! path with the workspace's `Roots` first, then hand the absolute path to the
//! workspace's `Fs`. Three implementations are meant to exist:
//!
//! - [`DiskFs`], the real workspace (the default);
//! - a speculation's overlay (`saki-read-ahead`): reads see the overlay's copies laid
//!   over the real tree, writes and deletions land in the overlay only;
//! - an editor's buffers over the Agent Client Protocol (`fs/read_text_file`,
//!   `fs/write_text_file`): it implements [`Fs::read`], [`Fs::open`] and [`Fs::write`]
//!   with the round trip, and hands every other method to [`DiskFs`] (listing, search
//!   and deletion stay on disk).
//!
//! Async so that an implementation may await a round trip. The built-in tools run on
//! tokio's blocking pool (`blocking.rs`) or spawn their walks there, so [`DiskFs`] does
//! its blocking calls directly.

pub use crate::grep::Found;
use crate::ScopeError;
/// The matcher `glob` is given (re-exported so an implementation needs no `globset`).
pub use globset::GlobMatcher;
use saki_llm_worker::ToolError;
use saki_shell_safety::roots::Roots;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// What a path is (not following a symlink at the path itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A FIFO, a device, a socket: never read.
    Other,
}

/// What [`Fs::stat`] says about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub len: u64,
}

/// A file opened to read: a stream of its bytes, and its length.
pub struct Opened {
    pub reader: Box<dyn ReadSeek + Send>,
    pub len: u64,
}

/// `Read + Seek`, as one object-safe trait.
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// A `grep` over a directory or file.
#[derive(Debug, Clone)]
pub struct GrepQuery {
    pub pattern: String,
    /// Only files matching this glob.
    pub glob: Option<String>,
    pub case_insensitive: bool,
    /// Matches kept (the total is still counted).
    pub max: usize,
    /// Paths are shown relative to this (the primary workspace root).
    pub shown_root: PathBuf,
}

/// The file system the file tools work on. Every path given is absolute and was
/// resolved and scope-checked by the workspace (or, for [`Fs::resolve`], is being).
#[async_trait::async_trait]
pub trait Fs: Send + Sync + std::fmt::Debug {
    /// Resolves an existing path inside `roots` (symlinks followed). An implementation
    /// that holds files the disk lacks (an overlay's new files) says they exist; the
    /// scope check stays `roots`'.
    fn resolve(&self, roots: &Roots, path: &str) -> Result<PathBuf, ScopeError> {
        roots.resolve(path)
    }
    /// What is at `path`, `None` when nothing is.
    async fn stat(&self, path: &Path) -> std::io::Result<Option<Stat>>;
    /// A regular file's bytes; a file over `max` bytes is refused
    /// (`ErrorKind::FileTooLarge`) before it is read.
    async fn read(&self, path: &Path, max: u64) -> std::io::Result<Vec<u8>>;
    /// A regular file opened to read as a stream (`read_file` shows one page of it).
    async fn open(&self, path: &Path) -> std::io::Result<Opened>;
    /// Replaces (or creates) the file with `content`, atomically; a replaced file keeps
    /// its permissions.
    async fn write(&self, path: &Path, content: &[u8]) -> std::io::Result<()>;
    /// Removes a regular file.
    async fn remove_file(&self, path: &Path) -> std::io::Result<()>;
    /// A directory's entry names, directories ending with `/`, unsorted.
    async fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<String>>;
    /// Files under `base` (`.gitignore` respected) whose path relative to `base`
    /// matches, relative to `base`.
    async fn glob(&self, base: &Path, matcher: &GlobMatcher) -> Result<Vec<String>, ToolError>;
    /// Searches `base` (a file or a directory, `.gitignore` respected).
    async fn grep(&self, base: &Path, query: &GrepQuery) -> Result<Found, ToolError>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFs;

#[async_trait::async_trait]
impl Fs for DiskFs {
    async fn stat(&self, path: &Path) -> std::io::Result<Option<Stat>> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => Ok(Some(stat_of(&meta))),
            Err(e) if missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn read(&self, path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
        crate::common::read_regular_at_most(path, max)
    }

    async fn open(&self, path: &Path) -> std::io::Result<Opened> {
        let (file, len) = crate::common::open_regular(path)?;
        Ok(Opened {
            reader: Box::new(file),
            len,
        })
    }

    async fn write(&self, path: &Path, content: &[u8]) -> std::io::Result<()> {
        crate::atomic::write_atomic(path, content)
    }

    async fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_file(path)
    }

    async fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        Ok(std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .map(|e| {
                let mut name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                name
            })
            .collect())
    }

    async fn glob(&self, base: &Path, matcher: &GlobMatcher) -> Result<Vec<String>, ToolError> {
        let (base, matcher) = (base.to_path_buf(), matcher.clone());
        let stop = StopOnDrop::default();
        let flag = stop.0.clone();
        tokio::task::spawn_blocking(move || crate::listing::glob_walk(&base, &matcher, &flag))
            .await
            .map_err(crate::common::failed)
    }

    async fn grep(&self, base: &Path, query: &GrepQuery) -> Result<Found, ToolError> {
        let (base, query) = (base.to_path_buf(), query.clone());
        // Dropped with this future (a time budget ran out, the call was cancelled): the
        // walk on the blocking pool stops too.
        let stop = StopOnDrop::default();
        let flag = stop.0.clone();
        tokio::task::spawn_blocking(move || {
            crate::grep::search_view(&base, &query, &|_| None, &flag)
        })
        .await
        .map_err(crate::common::failed)?
    }
}

/// A flag set when it is dropped.
#[derive(Debug, Default)]
pub struct StopOnDrop(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The [`Stat`] of some metadata (taken without following a link at the path).
pub fn stat_of(meta: &std::fs::Metadata) -> Stat {
    let t = meta.file_type();
    let kind = if t.is_symlink() {
        Kind::Symlink
    } else if t.is_dir() {
        Kind::Dir
    } else if t.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    Stat {
        kind,
        len: meta.len(),
    }
}

/// Nothing is there: missing, or a file stands where a directory of the path would.
pub fn missing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;
