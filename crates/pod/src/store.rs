//! The session store: one JSON Lines file per session under
//! `$XDG_DATA_HOME/saki/sessions/`. The first line holds the session's metadata; every
//! later line is one history item, appended, flushed and fsync'd as it is committed, so a
//! process killed at any moment loses at most the item in flight.

use crate::images::ImageStore;
use saki_llm_worker::{Compaction, CompactionReport, HistoryEdit, Item};
pub use saki_undo::UndoNote;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session store {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no session with id `{0}` (see `saki sessions`)")]
    NotFound(String),
    #[error("no earlier session for {0} (see `saki sessions`)")]
    NoneForWorkspace(String),
    #[error("session file {path} has no valid header: {message}")]
    BadHeader { path: PathBuf, message: String },
    #[error("`{0}` is not a session id (ids are file names without a path; see `saki sessions`)")]
    BadId(String),
    #[error(
        "session {0} is in use by another saki process; two writers would interleave its \
         log. Wait for it to finish, or start a new session"
    )]
    Busy(String),
}

/// An id names a file in the store and nothing else: no path, no `..`, no hidden file.
fn check_id(id: &str) -> Result<(), StoreError> {
    let bad =
        id.is_empty() || id.starts_with('.') || id.contains(['/', '\\', '\0']) || id.contains("..");
    if bad {
        Err(StoreError::BadId(id.to_owned()))
    } else {
        Ok(())
    }
}

/// One writer per session: an advisory lock held while the file is open for appending
/// (released when the process ends, however it ends).
fn lock(file: &File, id: &str, path: &Path) -> Result<(), StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy(id.to_owned())),
        Err(std::fs::TryLockError::Error(e)) => Err(io(path)(e)),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    pub workspace: String,
    pub provider: String,
    pub model: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    /// The first prompt, shortened.
    pub title: String,
    /// The system prompt the session started with; resumed turns reuse it byte for byte.
    #[serde(default)]
    pub system_prompt: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Line {
    Session(SessionMeta),
    Item {
        item: Item,
    },
    /// A compaction of the model's view of the items before it. The raw items stay in
    /// the file; loading replays the edit.
    Compaction {
        edit: HistoryEdit,
        report: CompactionReport,
    },
    /// Files were put back (`/undo`, `saki undo`, a redo); for the record; the model
    /// learns it from the system item committed with it.
    Undo(UndoNote),
    /// `/rewind`: the conversation goes back to its first `keep` items (the model's view,
    /// compactions applied); loading cuts it there.
    Rewind {
        keep: usize,
        turn: u64,
    },
    /// An item of a subagent (an `agent` tool call's own loop), under its parent call:
    /// shown on resume, never part of the conversation's history.
    Subagent {
        parent_call_id: String,
        agent: String,
        item: Item,
    },
    /// The next `count` items are an accepted speculation's (for `saki export`).
    Speculated {
        count: usize,
    },
    /// One main request's token usage, as the provider reported it (for `saki export`).
    Usage {
        usage: saki_llm_client::UsageEvent,
    },
}

/// A session read back from disk.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub meta: SessionMeta,
    /// The model's view of history: the items with every recorded compaction applied.
    pub items: Vec<Item>,
    /// Problems found while loading (torn or unreadable lines), for the person.
    pub warnings: Vec<String>,
    pub path: PathBuf,
    /// The file does not end with a line break (a write was cut off).
    pub torn_tail: bool,
    /// Prompts the session has committed (rewound ones not counted): turn numbers go on
    /// from here.
    pub turns: u64,
}

#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

pub use saki_tools::common::now_secs;

impl SessionStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `$XDG_DATA_HOME/saki/sessions`, defaulting to `~/.local/share/saki/sessions`.
    pub fn default_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        saki_tools::state::default_data_dir(env).map(|d| d.join("sessions"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sessions hold prompts, file contents and tool output: the directory, and saki's data
    /// directory above it, are this user's only (also when an older saki made them 0755).
    fn make_private(&self) -> Result<(), StoreError> {
        saki_tools::common::create_private_dir(&self.dir).map_err(io(&self.dir))?;
        if let Some(data) = self.dir.parent().filter(|p| p.ends_with("saki")) {
            saki_tools::common::create_private_dir(data).map_err(io(data))?;
        }
        Ok(())
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// A fresh session id: when it was made and a random part (`1764000000-0a1b2c`).
    pub fn new_id() -> String {
        format!("{}-{:06x}", now_secs(), fastrand::u32(..0x100_0000))
    }

    /// Starts a new session file and writes its header.
    pub fn create(
        &self,
        workspace: &str,
        provider: &str,
        model: &str,
        title: &str,
        system_prompt: Option<&str>,
    ) -> Result<SessionWriter, StoreError> {
        self.create_as(
            &Self::new_id(),
            workspace,
            provider,
            model,
            title,
            system_prompt,
        )
    }

    /// [`Self::create`] under an id given beforehand (one [`Self::new_id`] made, which a
    /// front end has already named the session by); an id in use is an error.
    pub fn create_as(
        &self,
        id: &str,
        workspace: &str,
        provider: &str,
        model: &str,
        title: &str,
        system_prompt: Option<&str>,
    ) -> Result<SessionWriter, StoreError> {
        check_id(id)?;
        self.make_private()?;
        let created = now_secs();
        let id = id.to_owned();
        let title: String = title
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(80)
            .collect();
        let meta = SessionMeta {
            id,
            workspace: workspace.into(),
            provider: provider.into(),
            model: model.into(),
            created,
            title,
            system_prompt: system_prompt.map(str::to_owned),
        };
        let path = self.path_of(&meta.id);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(io(&path))?;
        lock(&file, &meta.id, &path)?;
        let mut writer = SessionWriter {
            images: ImageStore::for_sessions(&self.dir),
            file,
            path,
            meta: meta.clone(),
        };
        writer.write_line(&Line::Session(meta))?;
        Ok(writer)
    }

    /// Reopens a session to append to it. A torn last line (from a crash) is ended
    /// first, so new items start on a line of their own; the fragment stays on disk.
    pub fn append_to(&self, loaded: &LoadedSession) -> Result<SessionWriter, StoreError> {
        let path = &loaded.path;
        self.make_private()?;
        let mut file = saki_tools::common::open_private_append(path).map_err(io(path))?;
        lock(&file, &loaded.meta.id, path)?;
        if loaded.torn_tail {
            file.write_all(b"\n").map_err(io(path))?;
            file.sync_data().map_err(io(path))?;
        }
        Ok(SessionWriter {
            images: ImageStore::for_sessions(&self.dir),
            file,
            path: path.clone(),
            meta: loaded.meta.clone(),
        })
    }

    pub fn load(&self, id: &str) -> Result<LoadedSession, StoreError> {
        check_id(id)?;
        let path = self.path_of(id);
        if !path.is_file() {
            return Err(StoreError::NotFound(id.to_owned()));
        }
        load_file(&path)
    }

    /// Every session's metadata, newest first. Unreadable files are skipped.
    pub fn list(&self) -> Result<Vec<SessionMeta>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(StoreError::Io {
                    path: self.dir.clone(),
                    source: e,
                })
            }
        };
        let mut metas: Vec<SessionMeta> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|p| read_header(&p).ok())
            .collect();
        metas.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
        Ok(metas)
    }

    /// The newest session of a workspace. Session files written after it that cannot be
    /// read (no valid header) are named in its warnings: the person asked for the last
    /// session, and may have meant one of them.
    pub fn latest_for(&self, workspace: &str) -> Result<LoadedSession, StoreError> {
        let meta = self
            .list()?
            .into_iter()
            .find(|m| m.workspace == workspace)
            .ok_or_else(|| StoreError::NoneForWorkspace(workspace.to_owned()))?;
        let mut loaded = self.load(&meta.id)?;
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let chosen = modified(&loaded.path);
        let entries = std::fs::read_dir(&self.dir).map_err(io(&self.dir))?;
        let mut skipped: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && *p != loaded.path)
            .filter(|p| modified(p) > chosen)
            .filter_map(|p| match read_header(&p) {
                Err(e) => Some(format!(
                    "a newer session file was skipped: {e}; resumed {} instead",
                    meta.id
                )),
                Ok(_) => None,
            })
            .collect();
        skipped.sort();
        loaded.warnings.extend(skipped);
        Ok(loaded)
    }
}

fn read_header(path: &Path) -> Result<SessionMeta, StoreError> {
    let file = File::open(path).map_err(io(path))?;
    let mut first = String::new();
    BufReader::new(file)
        .read_line(&mut first)
        .map_err(io(path))?;
    parse_header(&first, path)
}

fn parse_header(line: &str, path: &Path) -> Result<SessionMeta, StoreError> {
    match serde_json::from_str::<Line>(line) {
        Ok(Line::Session(meta)) => Ok(meta),
        Ok(_) => Err(StoreError::BadHeader {
            path: path.into(),
            message: "the first line is not a session header".into(),
        }),
        Err(e) => Err(StoreError::BadHeader {
            path: path.into(),
            message: e.to_string(),
        }),
    }
}

fn load_file(path: &Path) -> Result<LoadedSession, StoreError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.split_inclusive('\n').enumerate().peekable();
    let meta = parse_header(lines.next().map_or("", |(_, l)| l), path)?;
    let mut items = Vec::new();
    let mut warnings = Vec::new();
    let mut turns = 0u64;
    while let Some((n, line)) = lines.next() {
        let torn = lines.peek().is_none() && !line.ends_with('\n');
        match serde_json::from_str::<Line>(line.trim_end()) {
            Ok(Line::Item { item }) => {
                turns += u64::from(matches!(item, Item::User { .. }));
                items.push(item);
            }
            Ok(
                Line::Undo(_)
                | Line::Subagent { .. }
                | Line::Speculated { .. }
                | Line::Usage { .. },
            ) => {}
            Ok(Line::Rewind { keep, .. }) if keep <= items.len() => {
                let cut = items[keep..]
                    .iter()
                    .filter(|i| matches!(i, Item::User { .. }))
                    .count();
                turns = turns.saturating_sub(cut as u64);
                items.truncate(keep);
            }
            Ok(Line::Rewind { keep, .. }) => warnings.push(format!(
                "line {}: a rewind to item {keep} of {} is ignored",
                n + 1,
                items.len()
            )),
            Ok(Line::Compaction { edit, .. }) => {
                if let Err(e) = edit.apply(&mut items) {
                    warnings.push(format!("line {}: {e}; the compaction is ignored", n + 1));
                }
            }
            Ok(Line::Session(_)) => {
                warnings.push(format!("line {}: unexpected record skipped", n + 1))
            }
            Err(_) if torn => warnings.push(format!(
                "the last line (line {}) was cut off mid-write and is skipped",
                n + 1
            )),
            Err(e) => warnings.push(format!("line {}: unreadable item skipped ({e})", n + 1)),
        }
    }
    drop_orphan_results(&mut items, &mut warnings);
    if let Some(dir) = path.parent() {
        warnings.extend(ImageStore::for_sessions(dir).load_all(&mut items));
    }
    for w in &warnings {
        tracing::warn!(session = %meta.id, "{w}");
    }
    Ok(LoadedSession {
        meta,
        items,
        warnings,
        path: path.to_path_buf(),
        torn_tail: bytes.last().is_some_and(|b| *b != b'\n'),
        turns,
    })
}

/// A tool result whose call is not before it (a hand-edited or damaged log) would be
/// rejected by every provider; it is left out, with a warning.
fn drop_orphan_results(items: &mut Vec<Item>, warnings: &mut Vec<String>) {
    let mut calls = std::collections::HashSet::new();
    let mut dropped = 0;
    items.retain(|item| match item {
        Item::ToolCall { ctx, .. } => {
            calls.insert(ctx.call_id.clone());
            true
        }
        Item::ToolResult { ctx, .. } if !calls.contains(&ctx.call_id) => {
            dropped += 1;
            false
        }
        _ => true,
    });
    if dropped > 0 {
        warnings.push(if dropped == 1 {
            "1 tool result without its call left out".to_owned()
        } else {
            format!("{dropped} tool results without their call left out")
        });
    }
}

/// Appends items to one session file, durably.
#[derive(Debug)]
pub struct SessionWriter {
    /// Where the images the items name are written, before the items.
    images: ImageStore,
    file: File,
    path: PathBuf,
    meta: SessionMeta,
}

impl SessionWriter {
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    fn write_line(&mut self, line: &Line) -> Result<(), StoreError> {
        self.write_lines(std::slice::from_ref(line))
    }

    /// Appends a subagent's items under its parent call (see `crate::subagent_log`).
    pub fn append_subagent(
        &mut self,
        parent_call_id: &str,
        agent: &str,
        items: &[Item],
    ) -> Result<(), StoreError> {
        let lines: Vec<Line> = items
            .iter()
            .map(|item| Line::Subagent {
                parent_call_id: parent_call_id.to_owned(),
                agent: agent.to_owned(),
                item: item.clone(),
            })
            .collect();
        self.write_lines(&lines)
    }

    /// Written without an fsync: a record only reports read back (usage), whose loss in a
    /// crash costs nothing; the next item's fsync makes it durable anyway.
    fn write_unsynced(&mut self, line: &Line) -> Result<(), StoreError> {
        let mut bytes = serde_json::to_vec(line).map_err(|e| StoreError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        bytes.push(b'\n');
        self.file.write_all(&bytes).map_err(io(&self.path))
    }

    /// Records that the next `count` items are an accepted speculation's.
    pub fn append_speculated(&mut self, count: usize) -> Result<(), StoreError> {
        self.write_unsynced(&Line::Speculated { count })
    }

    /// Records one main request's token usage.
    pub fn append_usage(&mut self, usage: &saki_llm_client::UsageEvent) -> Result<(), StoreError> {
        self.write_unsynced(&Line::Usage { usage: *usage })
    }

    fn write_lines(&mut self, lines: &[Line]) -> Result<(), StoreError> {
        let mut bytes = Vec::new();
        for line in lines {
            if let Line::Item { item } = line {
                self.images.put(item).map_err(io(self.images.dir()))?;
            }
            serde_json::to_writer(&mut bytes, line).map_err(|e| StoreError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(e),
            })?;
            bytes.push(b'\n');
        }
        // One write per line keeps a crash to at most one torn, final line.
        self.file.write_all(&bytes).map_err(io(&self.path))?;
        self.file.flush().map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))
    }

    pub fn append(&mut self, item: &Item) -> Result<(), StoreError> {
        self.write_line(&Line::Item { item: item.clone() })
    }

    /// Appends items produced together with one write and one fsync; a crash tears at
    /// most the last line, and a torn batch resumes well-formed (dangling calls closed).
    pub fn append_all(&mut self, items: &[Item]) -> Result<(), StoreError> {
        let lines: Vec<Line> = items
            .iter()
            .map(|item| Line::Item { item: item.clone() })
            .collect();
        self.write_lines(&lines)
    }

    /// Records an undo or redo.
    pub fn append_undo(&mut self, note: &UndoNote) -> Result<(), StoreError> {
        self.write_line(&Line::Undo(note.clone()))
    }

    /// Records a rewind: the conversation keeps its first `keep` items.
    pub fn append_rewind(&mut self, keep: usize, turn: u64) -> Result<(), StoreError> {
        self.write_line(&Line::Rewind { keep, turn })
    }

    /// Records a compaction that changed history (one without an edit is not recorded).
    pub fn append_compaction(&mut self, compaction: &Compaction) -> Result<(), StoreError> {
        match &compaction.edit {
            Some(edit) => self.write_line(&Line::Compaction {
                edit: edit.clone(),
                report: compaction.report.clone(),
            }),
            None => Ok(()),
        }
    }
}
