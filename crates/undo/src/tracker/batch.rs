//! Batches that may change files beyond what they name (shell commands that are not
//! proven read-only, tools saki does not know): the paths a command names that the scan
//! does not cover are saved before it runs; afterwards one scan finds what changed.

use super::{Batch, Tracker, CLOCK_SLACK_NS, NAMED_ENTRIES};
use crate::named::named_paths;
use crate::state::{capture, capture_with, now_ns, rel_of, FileState, StatKey};
use std::collections::BTreeMap;
use std::path::Path;

impl Tracker {
    /// A batch with a shell command (or an unknown tool) is about to run: the person's
    /// changes so far are taken into the shadow, and the paths the command names that
    /// the scan does not cover are saved.
    pub fn batch_starts(&mut self, id: &str, command: Option<&str>) {
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
                    });
                }
            }
        }
        for rel in command
            .map(|c| named_paths(c, &self.root))
            .unwrap_or_default()
        {
            self.save_named(&rel);
        }
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
                self.record(rel, Some(before.clone()), Some(after));
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
            self.record(&rel, Some(FileState::Absent), Some(after));
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
