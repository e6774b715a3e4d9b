//! Checkpoints: every turn's file changes can be taken back, without git.
//!
//! Before a turn's first change, saki keeps the before-image of every path the turn
//! changes, whoever changed it: the file tools (`write_file`, `edit`, `delete_file`) are
//! read right before they run; shell commands (and tools saki does not know, such as
//! MCP tools) are caught by a stat scan of the workspace compared with the *shadow*
//! (`scan.rs`), plus the paths the command names; an accepted speculation names the
//! files it applies. Contents go to a content-addressed store in saki's data dir
//! (`objects.rs`), each turn's record to the session's journal (`journal.rs`). Nothing
//! is ever written into the workspace's `.git`. See the README ("Undo").

mod checkpoints;
pub mod gc;
pub mod journal;
pub mod named;
pub mod objects;
pub mod ops;
pub mod restore;
pub mod scan;
pub mod state;
mod tracker;
pub mod watch;

pub use checkpoints::{Checkpoints, TurnReport};
pub use journal::{journal_path, Journal};
pub use ops::{Outcome, Summary};
pub use restore::Conflict;
pub use state::FileState;

/// An undo or redo, as the session log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoNote {
    pub redo: bool,
    /// The turns whose file changes were taken back (or put back).
    pub turns: Vec<u64>,
    pub files: Vec<String>,
    #[serde(default)]
    pub forced: bool,
}

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `undo.max_mb` and `undo.max_file_mb`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoLimits {
    /// The whole store (every object) stays under this; the oldest checkpoints go first.
    pub max_bytes: u64,
    /// Larger files are not saved (the turn says so).
    pub max_file_bytes: u64,
}

pub const DEFAULT_MAX_MB: u64 = 512;
pub const DEFAULT_MAX_FILE_MB: u64 = 32;

impl Default for UndoLimits {
    fn default() -> Self {
        Self::from_mb(DEFAULT_MAX_MB, DEFAULT_MAX_FILE_MB)
    }
}

impl UndoLimits {
    pub fn from_mb(max_mb: u64, max_file_mb: u64) -> Self {
        Self {
            max_bytes: max_mb.saturating_mul(1024 * 1024),
            max_file_bytes: max_file_mb.saturating_mul(1024 * 1024),
        }
    }
}

/// The undo store of a data directory: `<data dir>/undo`, beside `sessions/`.
pub fn store_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("undo")
}

#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error("nothing to undo: no turn of this session changed files (or all were undone)")]
    NothingToUndo,
    #[error(
        "only {available} turn(s) can be undone, {asked} were asked for (older checkpoints were \
         undone already or dropped to stay under undo.max_mb)"
    )]
    NotEnough { asked: usize, available: usize },
    #[error("nothing to redo")]
    NothingToRedo,
    #[error(
        "turn {turn}'s checkpoint was dropped to stay under undo.max_mb; its files cannot be \
         put back (--force reverts the later turns anyway)"
    )]
    Dropped { turn: u64 },
    #[error("{}", conflicts_text(.0))]
    Conflicts(Vec<Conflict>),
    /// Every path that needed writing was left as it is: the turns still stand, and the
    /// journal does not say otherwise.
    #[error("{}", nothing_restored_text(*.redo, .left))]
    NothingRestored {
        redo: bool,
        /// Paths left as they are, and why.
        left: Vec<(String, String)>,
    },
    #[error("undo is off for this session (no data directory, or undo.max_mb = 0)")]
    Off,
    #[error("undo store {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl UndoError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

fn nothing_restored_text(redo: bool, left: &[(String, String)]) -> String {
    let (verb, state) = if redo {
        ("redone", "undone")
    } else {
        ("undone", "applied")
    };
    let mut text = format!("not {verb}: no file could be put back, so the turns stay {state}");
    for (path, why) in left.iter().take(20) {
        text.push_str(&format!("\n  {path}: {why}"));
    }
    if left.len() > 20 {
        text.push_str(&format!("\n  and {} more", left.len() - 20));
    }
    text
}

fn conflicts_text(conflicts: &[Conflict]) -> String {
    let uncertain = conflicts.iter().filter(|c| c.uncertain).count();
    let mut text = String::from(if uncertain == 0 {
        "not undone: files changed since the turn (--force overwrites them)"
    } else if uncertain == conflicts.len() {
        "not undone: saki cannot tell who changed these files, the command or you \
         (--force restores them anyway)"
    } else {
        "not undone: files changed since the turn, or by a command or you \
         (--force overwrites them)"
    });
    for c in conflicts.iter().take(20) {
        text.push_str(&format!("\n  {}: {}", c.path, c.why));
    }
    if conflicts.len() > 20 {
        text.push_str(&format!("\n  and {} more", conflicts.len() - 20));
    }
    if uncertain > 0 {
        // The common case is no one's edit at all: say so, or people will think undo
        // is broken after every `cargo fmt`.
        text.push_str(
            "\n  a command that changes files it does not name (a formatter such as \
             `cargo fmt`, a code generator) can only be undone with --force: your own save \
             while it ran would look the same",
        );
    }
    text
}
