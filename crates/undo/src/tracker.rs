//! The live half of checkpoints: what the current turn changed, seen as it happens.
//! Everything here is blocking file-system work, called off the async runtime by
//! `checkpoints.rs`, under one lock (so batches, scans and undos never interleave).

use super::journal::{now_secs, FileRecord, Journal, Record};
use super::objects::Objects;
use super::scan::{shadow_path, Shadow};
use super::state::{capture_with, now_ns, rel_of, FileState, StatKey};
use super::watch::Watcher;
use super::{gc, UndoLimits};
use saki_tools::Workspace;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod batch;
mod shadow;
#[cfg(test)]
mod tests;

use batch::Batch;

/// How far before a command's start a change still counts as its own: file timestamps
/// come from the kernel's coarse clock, which lags the one `now_ns` reads.
const CLOCK_SLACK_NS: i64 = 20_000_000;
/// Most paths under named directories (ignored ones) saved before one batch runs.
const NAMED_ENTRIES: usize = 5_000;
/// How often, at most, the shadow is written at a turn's end.
const SHADOW_SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// Threads the scan walks with (the machines saki runs on have at least two cores).
const WALK_THREADS: usize = 2;

/// What a sealed turn's checkpoint holds, for the front end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnReport {
    pub turn: u64,
    /// Paths whose content the turn changed.
    pub files: Vec<String>,
    /// What people should know: files not saved, checkpoints dropped.
    pub notes: Vec<String>,
}

struct Turn {
    turn: u64,
    prompt: String,
    seq: Option<u64>,
    /// Paths with a before-image in this checkpoint.
    recorded: BTreeSet<String>,
    /// Paths whose result was not seen yet (their tool is running).
    open: BTreeSet<String>,
    notes: Vec<String>,
    refreshed: bool,
    batch: Option<Batch>,
    /// Paths a file tool wrote, and the batch it ran in: the scan after a command in
    /// that batch finds the write too, and it is the tool's, not uncertain.
    tool_written: BTreeMap<String, String>,
}

pub(crate) struct Tracker {
    workspace: Arc<Workspace>,
    root: PathBuf,
    dir: PathBuf,
    objects: Arc<Objects>,
    limits: Option<UndoLimits>,
    shadow: Option<Shadow>,
    shadow_path: PathBuf,
    pub(crate) journal: Option<Journal>,
    session: Option<String>,
    /// User prompts this session has committed: the next turn's number is one more.
    pub(crate) turns: u64,
    turn: Option<Turn>,
    store_size: Option<u64>,
    /// The last size pass could not get the store under the bound: the next waits.
    gc_stuck: Option<gc::Stuck>,
    /// Size passes run (for tests).
    #[cfg(test)]
    gc_passes: u32,
    warned_unrecordable: bool,
    /// Reports the changes in the walked directories (`watch.rs`); `watching` once its
    /// watches match the last walk.
    watcher: Option<Watcher>,
    watching: bool,
    no_watcher: bool,
    /// The shadow is being read in the background (`Checkpoints::warm`).
    warming: bool,
    shadow_saved: Option<std::time::Instant>,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.save_shadow();
    }
}

impl Tracker {
    pub fn new(workspace: Arc<Workspace>, dir: PathBuf, limits: Option<UndoLimits>) -> Self {
        let root = workspace.root().to_path_buf();
        Self {
            shadow_path: shadow_path(&dir, &root),
            objects: Arc::new(Objects::new(dir.join("objects"))),
            workspace,
            root,
            dir,
            limits,
            shadow: None,
            journal: None,
            session: None,
            turns: 0,
            turn: None,
            store_size: None,
            gc_stuck: None,
            #[cfg(test)]
            gc_passes: 0,
            warned_unrecordable: false,
            watcher: None,
            watching: false,
            no_watcher: false,
            warming: false,
            shadow_saved: None,
        }
    }

    pub fn on(&self) -> bool {
        self.limits.is_some_and(|l| l.max_bytes > 0)
    }

    pub fn set_limits(&mut self, limits: Option<UndoLimits>) {
        self.limits = limits;
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn set_session(&mut self, id: Option<&str>, turns: u64) {
        self.session = id.map(str::to_owned);
        self.journal = id
            .and_then(|id| super::journal_path(&self.dir, id))
            .map(Journal::load);
        self.turns = turns;
        self.turn = None;
    }

    fn limits(&self) -> UndoLimits {
        self.limits.unwrap_or_default()
    }

    /// Loads the workspace's shadow and brings it up to date; the first time in a
    /// workspace this reads every file the scan covers (see the README).
    fn note(&mut self, note: String) {
        match self.turn.as_mut() {
            Some(turn) if !turn.notes.contains(&note) => turn.notes.push(note),
            Some(_) => {}
            None => tracing::info!("{note}"),
        }
    }

    /// A prompt was committed: a new turn begins (its checkpoint is written at its first
    /// change).
    pub fn begin(&mut self, prompt: &str) {
        self.turns += 1;
        self.turn = Some(Turn {
            turn: self.turns,
            prompt: prompt.to_owned(),
            seq: None,
            recorded: BTreeSet::new(),
            open: BTreeSet::new(),
            notes: Vec::new(),
            refreshed: false,
            batch: None,
            tool_written: BTreeMap::new(),
        });
    }

    /// An accepted speculation that committed nothing: its turn number is not used.
    pub fn abandon(&mut self) {
        if self.turn.as_ref().is_some_and(|t| t.seq.is_none()) {
            self.turn = None;
            self.turns = self.turns.saturating_sub(1);
        }
    }

    fn ensure_turn(&mut self) {
        if self.turn.is_none() {
            // A change outside any prompt (never expected): recorded under the last turn.
            self.turns = self.turns.max(1);
            self.turn = Some(Turn {
                turn: self.turns,
                prompt: String::new(),
                seq: None,
                recorded: BTreeSet::new(),
                open: BTreeSet::new(),
                notes: Vec::new(),
                refreshed: true,
                batch: None,
                tool_written: BTreeMap::new(),
            });
        }
    }

    /// The workspace-relative path a tool's `path` argument writes, resolved as the tool
    /// resolves it (symlinks followed, scope checked).
    fn tool_path(&mut self, arg: &str) -> Option<String> {
        let abs = self.workspace.resolve_for_write(arg).ok()?;
        match rel_of(&self.root, &abs) {
            Some(rel) => Some(rel),
            None => {
                let why = if abs.components().any(|c| c.as_os_str() == ".git") {
                    "changes inside .git are never checkpointed"
                } else {
                    "it is outside the workspace's first root"
                };
                self.note(format!("undo: {arg} is not covered: {why}"));
                None
            }
        }
    }

    /// A file tool of batch `batch` is about to write `arg`: its before-image.
    pub fn before_tool(&mut self, batch: &str, arg: &str) {
        if let Some(rel) = self.tool_path(arg) {
            self.before_paths(std::slice::from_ref(&rel));
            if let Some(turn) = self.turn.as_mut() {
                turn.tool_written.insert(rel, batch.to_owned());
            }
        }
    }

    /// The file tool finished: what it left.
    pub fn after_tool(&mut self, arg: &str) {
        if let Some(rel) = self.tool_path(arg) {
            self.after_paths(&[rel]);
        }
    }

    /// Before-images of paths about to change (a file tool's target, an accepted
    /// speculation's files).
    pub fn before_paths(&mut self, rels: &[String]) {
        if !self.on() {
            return;
        }
        self.ensure_turn();
        for rel in rels {
            if self.turn.as_ref().is_some_and(|t| t.recorded.contains(rel)) {
                continue;
            }
            let before = self.current(rel);
            self.record(rel, Some(before), None, None);
        }
    }

    pub fn after_paths(&mut self, rels: &[String]) {
        if !self.on() {
            return;
        }
        for rel in rels {
            let after = self.current(rel);
            self.record(rel, None, Some(after), None);
        }
    }

    /// What `rel` holds now: the shadow's copy when its stat is unchanged, else read.
    fn current(&mut self, rel: &str) -> FileState {
        let abs = self.root.join(rel);
        let limits = self.limits();
        let meta = std::fs::symlink_metadata(&abs).ok();
        let key = meta.as_ref().map(StatKey::of);
        if let (Some(entry), Some(key)) = (self.shadow.as_ref().and_then(|s| s.get(rel)), key) {
            let saved = entry
                .state
                .hash()
                .is_none_or(|h| self.objects.has(h, entry.state.size()));
            if entry.key == key && !entry.racy && saved {
                return entry.state.clone();
            }
        }
        let state = match &meta {
            Some(meta) => capture_with(&abs, meta, &self.objects, limits.max_file_bytes, true),
            None => FileState::Absent,
        };
        if let Some(shadow) = self.shadow.as_mut() {
            shadow.set(rel, key, state.clone(), now_ns());
        }
        state
    }

    /// Records one path's change in the turn's checkpoint: the first before-image wins,
    /// the last result wins. `uncertain`: the command that, or the person who, made it.
    fn record(
        &mut self,
        rel: &str,
        before: Option<FileState>,
        after: Option<FileState>,
        uncertain: Option<String>,
    ) {
        self.ensure_turn();
        let Some(seq) = self.ensure_checkpoint() else {
            return;
        };
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let first = turn.recorded.insert(rel.to_owned());
        let before = if first {
            before.map(|b| match b {
                FileState::File { ref hash, size, .. } if !self.objects.has(hash, size) => {
                    FileState::Unsaved {
                        size,
                        mtime_ns: 0,
                        why: "its saved copy was dropped to stay under undo.max_mb".into(),
                    }
                }
                other => other,
            })
        } else {
            None
        };
        if first && before.is_none() {
            turn.recorded.remove(rel);
            return;
        }
        match &after {
            Some(_) => turn.open.remove(rel),
            None => turn.open.insert(rel.to_owned()),
        };
        let mut skipped = None;
        if let Some(FileState::Unsaved { why, .. }) = &before {
            let note =
                format!("undo: {rel} was not saved ({why}); undoing this turn leaves it as it is");
            if !turn.notes.contains(&note) {
                turn.notes.push(note);
            }
            skipped = Some(why.clone());
        }
        let Some(journal) = self.journal.as_mut() else {
            return;
        };
        let mut written = journal.append(Record::Files {
            seq,
            files: vec![FileRecord {
                path: rel.to_owned(),
                before,
                after,
                uncertain,
            }],
        });
        if let Some(why) = skipped {
            written = written.and_then(|()| {
                journal.append(Record::Skipped {
                    seq,
                    path: rel.to_owned(),
                    why,
                })
            });
        }
        if let Err(e) = written {
            let note = format!("undo: the checkpoint could not be written: {e}");
            tracing::warn!("{note}");
            self.note(note);
        }
    }

    fn ensure_checkpoint(&mut self) -> Option<u64> {
        let journal = self.journal.as_mut()?;
        let turn = self.turn.as_mut()?;
        if let Some(seq) = turn.seq {
            return Some(seq);
        }
        let seq = journal.next_seq();
        let record = Record::Checkpoint {
            seq,
            turn: turn.turn,
            prompt: turn.prompt.clone(),
            time: now_secs(),
        };
        match journal.append(record) {
            Ok(()) => {
                turn.seq = Some(seq);
                Some(seq)
            }
            Err(e) => {
                let note = format!("undo: the checkpoint could not be written: {e}");
                if !turn.notes.contains(&note) {
                    turn.notes.push(note);
                }
                None
            }
        }
    }

    /// The turn is over: whatever is still open is looked at, the checkpoint sealed and
    /// made durable, and the store kept under its bound.
    pub fn end(&mut self) -> Option<TurnReport> {
        if !self.on() {
            self.turn = None;
            return None;
        }
        let pending = self
            .turn
            .as_ref()
            .and_then(|t| t.batch.as_ref())
            .filter(|b| !b.scanned)
            .map(|b| b.id.clone());
        if let Some(id) = pending {
            self.batch_ends(&id);
        }
        let open: Vec<String> = self
            .turn
            .as_ref()
            .map(|t| t.open.iter().cloned().collect())
            .unwrap_or_default();
        self.after_paths(&open);
        let turn = self.turn.take()?;
        let mut report = TurnReport {
            turn: turn.turn,
            files: Vec::new(),
            notes: turn.notes,
        };
        if let (Some(seq), Some(journal)) = (turn.seq, self.journal.as_mut()) {
            let _ = journal.append(Record::Sealed { seq });
            let written = self.objects.sync_fresh();
            if let Err(e) = journal.sync() {
                report.notes.push(format!(
                    "undo: the checkpoint could not be made durable: {e}"
                ));
            }
            if let Some(cp) = journal.get(seq) {
                report.files = cp.changed().map(|(p, _)| p.clone()).collect();
            }
            let size = self.store_size.unwrap_or_else(|| gc::total(&self.objects)) + written;
            self.store_size = Some(size);
            let max = self.limits().max_bytes;
            if size > max && self.gc_stuck.is_none_or(|s| s.retry(size, max)) {
                let pass = gc::enforce(
                    &self.dir,
                    &self.objects,
                    max,
                    gc::Live {
                        shadow: self.shadow.as_ref(),
                        shadow_path: &self.shadow_path,
                        journal: self.journal.as_mut(),
                        keep_seq: Some(seq),
                    },
                );
                #[cfg(test)]
                {
                    self.gc_passes += 1;
                }
                self.store_size = Some(pass.total);
                self.gc_stuck = gc::Stuck::after(&pass, max);
                report.notes.extend(pass.notes);
            }
        }
        // The shadow is a cache (lost, the next session reads the files again): saved
        // at most once a minute and when the session ends, not at every turn, since
        // writing it costs tens of milliseconds in a large workspace.
        if self
            .shadow_saved
            .is_none_or(|at| at.elapsed() > SHADOW_SAVE_EVERY)
        {
            self.save_shadow();
        }
        Some(report)
    }

    /// Saves the shadow when it changed. The objects it names are made durable first
    /// (the shadow's write is fsync'd): a shadow that outlives a crash never names an
    /// object the crash cut short.
    pub fn save_shadow(&mut self) {
        if let Some(shadow) = self.shadow.as_mut().filter(|s| s.dirty) {
            let written = self.objects.sync_fresh();
            if let Some(size) = self.store_size.as_mut() {
                *size += written;
            }
            self.shadow_saved = Some(std::time::Instant::now());
            if let Err(e) = shadow.save(&self.shadow_path) {
                tracing::warn!(error = %e, "cannot save the undo shadow");
            }
        }
    }

    /// Paths an undo or redo wrote: the shadow learns what they hold, so the next scan
    /// does not take them for the person's edits.
    pub fn restored(&mut self, rels: &[String]) {
        if self.shadow.is_none() {
            return;
        }
        for rel in rels {
            let _ = self.current(rel);
        }
    }
}
