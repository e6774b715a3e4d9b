//! Batches that may change files beyond what they name (shell commands that are not
//! proven read-only, tools saki does not know): the paths a command names that the scan
//! does not cover are saved before it runs; afterwards one scan finds what changed.
//!
//! Which process wrote a file cannot be known without privileges, so a change the scan
//! finds at a path no command of the batch names may be the person's (an editor's save
//! during a long `cargo test`): it is recorded as uncertain, and an undo leaves it alone
//! unless forced (`restore.rs`).

use super::{Tracker, CLOCK_SLACK_NS, NAMED_ENTRIES};
use crate::named::{named, Named};
use crate::ops::short;
use crate::state::{capture, capture_with, now_ns, rel_of, FileState, StatKey};
use std::collections::BTreeMap;
use std::path::Path;

/// One batch of calls that may change files beyond what they name.
pub(super) struct Batch {
    pub(super) id: String,
    pub(super) started_ns: i64,
    /// Paths the commands name that the scan does not cover (ignored by `.gitignore`),
    /// as they were before the batch ran.
    pub(super) named: BTreeMap<String, (FileState, Option<StatKey>)>,
    pub(super) named_dirs: Vec<String>,
    pub(super) scanned: bool,
    /// Everything its commands name, for telling their changes from the person's.
    names: Named,
    /// Its commands (or unknown tools), shortened, to name in an uncertain change.
    running: Vec<String>,
}

/// How much of a command an uncertain change keeps (the journal is not the place for
/// a long script, and the person only needs to recognise it).
const LABEL_CHARS: usize = 60;

/// A command as an uncertain change names it: its first line, shortened.
fn label(command: &str) -> String {
    let mut lines = command.trim().lines();
    let first = short(lines.next().unwrap_or(""), LABEL_CHARS);
    if lines.next().is_some() && !first.ends_with('…') {
        format!("{first} …")
    } else {
        first
    }
}

impl Tracker {
    /// A batch with a shell command (or an unknown tool, `tool`) is about to run: the
    /// person's changes so far are taken into the shadow, and the paths the command
    /// names that the scan does not cover are saved.
    pub fn batch_starts(&mut self, id: &str, tool: &str, command: Option<&str>) {
        if !self.on() {
            return;
        }
        self.ensure_turn();
        self.ensure_shadow();
        let current = self
            .turn
            .as_ref()
            .and_then(|t| t.batch.as_ref())
            .map(|b| (b.id.clone(), b.scanned));
        match current {
            Some((bid, _)) if bid == id => {}
            previous => {
                // A batch whose end was never seen (its turn was cancelled) is scanned
                // before the next one starts.
                if let Some((bid, false)) = previous {
                    self.batch_ends(&bid);
                }
                if let Some(turn) = self.turn.as_mut() {
                    turn.batch = Some(Batch {
                        id: id.to_owned(),
                        started_ns: now_ns(),
                        named: BTreeMap::new(),
                        named_dirs: Vec::new(),
                        scanned: false,
                        names: Named::default(),
                        running: Vec::new(),
                    });
                }
            }
        }
        let names = command.map(|c| named(c, &self.root)).unwrap_or_default();
        let paths = names.paths.clone();
        if let Some(batch) = self.turn.as_mut().and_then(|t| t.batch.as_mut()) {
            let running = command.map_or_else(|| tool.to_owned(), label);
            if !batch.running.contains(&running) {
                batch.running.push(running);
            }
            batch.names.extend(names);
        }
        for rel in paths {
            self.save_named(&rel);
        }
    }

    /// Whether a change the scan found after `batch` may be the person's: `None` when it
    /// is the batch's for sure, else what was running (shortened). Sure are a deletion
    /// and a directory (undoing them puts a file back or removes an empty directory, so
    /// nothing of the person's can be lost), a path a command names, and a file tool's
    /// write in the same batch.
    pub(super) fn uncertain(&self, batch: &Batch, rel: &str, after: &FileState) -> Option<String> {
        let sure = matches!(after, FileState::Absent | FileState::Dir { .. })
            || batch.names.covers(rel)
            || self
                .turn
                .as_ref()
                .and_then(|t| t.tool_written.get(rel))
                .is_some_and(|b| *b == batch.id);
        if sure {
            return None;
        }
        // Parallel calls: shell's `&` says they ran together.
        let running = batch.running.join(" & ");
        Some(short(&running, 2 * LABEL_CHARS))
    }

    /// Saves a named path (and what lies under a named directory) that the shadow does
    /// not hold.
    fn save_named(&mut self, rel: &str) {
        // A directory on the way that is a symlink now leads elsewhere: not followed.
        let Ok(abs) = crate::restore::parents_safe(&self.root, rel) else {
            return;
        };
        let limits = self.limits();
        let Ok(meta) = std::fs::symlink_metadata(&abs) else {
            if self.shadow.as_ref().is_none_or(|s| s.get(rel).is_none()) {
                self.add_named(rel.to_owned(), FileState::Absent, None);
            }
            return;
        };
        let is_dir = meta.is_dir();
        let mut found: Vec<(String, std::fs::Metadata)> = vec![(rel.to_owned(), meta)];
        let mut truncated = false;
        if is_dir {
            truncated = list_under(&self.root, &abs, NAMED_ENTRIES, &mut found);
            if let Some(batch) = self.turn.as_mut().and_then(|t| t.batch.as_mut()) {
                batch.named_dirs.push(rel.to_owned());
            }
        }
        let mut saved = 0u64;
        for (path, meta) in found {
            let known = self.shadow.as_ref().is_some_and(|s| s.get(&path).is_some());
            let taken = self
                .turn
                .as_ref()
                .and_then(|t| t.batch.as_ref())
                .is_some_and(|b| b.named.contains_key(&path));
            if known || taken {
                continue;
            }
            // What a command names beyond the scan may be large (`rm -rf target`): a
            // quarter of the store at most.
            let room = saved + meta.len() <= limits.max_bytes / 4;
            let state = capture_with(
                &self.root.join(&path),
                &meta,
                &self.objects,
                limits.max_file_bytes,
                room,
            );
            saved += state.size();
            self.add_named(path, state, Some(StatKey::of(&meta)));
        }
        if truncated {
            self.note(format!(
                "undo: {rel}/ holds more than {NAMED_ENTRIES} paths ignored by .gitignore; only the first were saved"
            ));
        }
    }

    fn add_named(&mut self, rel: String, state: FileState, key: Option<StatKey>) {
        if let Some(batch) = self.turn.as_mut().and_then(|t| t.batch.as_mut()) {
            batch.named.insert(rel, (state, key));
        }
    }

    /// The batch finished: one scan, and the named paths looked at again.
    pub fn batch_ends(&mut self, id: &str) {
        if !self.on() {
            return;
        }
        let Some(mut batch) = self.turn.as_mut().and_then(|t| t.batch.take()) else {
            return;
        };
        if batch.id != id || batch.scanned {
            if let Some(turn) = self.turn.as_mut() {
                turn.batch = Some(batch);
            }
            return;
        }
        batch.scanned = true;
        let since = batch.started_ns - CLOCK_SLACK_NS;
        self.refresh(Some((since, &batch)));
        let limits = self.limits();
        // Named paths the scan does not cover: as they were, and as they are.
        let mut now: Vec<(String, std::fs::Metadata)> = Vec::new();
        for dir in &batch.named_dirs {
            list_under(&self.root, &self.root.join(dir), NAMED_ENTRIES, &mut now);
        }
        for (rel, (before, key)) in &batch.named {
            if self.shadow.as_ref().is_some_and(|s| s.get(rel).is_some()) {
                continue;
            }
            let abs = self.root.join(rel);
            let meta = std::fs::symlink_metadata(&abs).ok();
            let unchanged = meta.as_ref().map(StatKey::of) == *key
                && key.is_some_and(|k| !k.is_racy(batch.started_ns));
            if unchanged {
                continue;
            }
            let after = capture(&abs, &self.objects, limits.max_file_bytes, true);
            if after != *before {
                let uncertain = self.uncertain(&batch, rel, &after);
                self.record(rel, Some(before.clone()), Some(after), uncertain);
            }
        }
        for (rel, meta) in now {
            let known = batch.named.contains_key(&rel)
                || self.shadow.as_ref().is_some_and(|s| s.get(&rel).is_some());
            if known || StatKey::of(&meta).ctime_ns < since {
                continue;
            }
            let after = capture_with(
                &self.root.join(&rel),
                &meta,
                &self.objects,
                limits.max_file_bytes,
                true,
            );
            let uncertain = self.uncertain(&batch, &rel, &after);
            self.record(&rel, Some(FileState::Absent), Some(after), uncertain);
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.batch = Some(batch);
        }
    }
}

/// Every path under `dir` (ignore rules not applied, symlinks not followed, `.git` not
/// entered), at most `limit`; true when there were more.
pub(super) fn list_under(
    root: &Path,
    dir: &Path,
    limit: usize,
    out: &mut Vec<(String, std::fs::Metadata)>,
) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    let mut count = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if count >= limit {
                return true;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let Some(rel) = rel_of(root, &path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            }
            out.push((rel, meta));
            count += 1;
        }
    }
    false
}
