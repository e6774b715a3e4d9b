//! The shadow's side of the tracker: read in the background when a session starts,
//! brought up to date before a batch and after it (from inotify's report, or a walk),
//! with the changes a batch made told from the person's.

use super::{Batch, Tracker, WALK_THREADS};
use crate::gc;
use crate::objects::Objects;
use crate::scan::{walk, Budget, Shadow};
use crate::state::{now_ns, FileState, StatKey};
use crate::watch::{Drained, Watcher};
use crate::UndoLimits;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What [`Tracker::warm_inputs`] hands to the background read.
pub(crate) struct Warm {
    root: PathBuf,
    dir: PathBuf,
    shadow_path: PathBuf,
    objects: Arc<Objects>,
    limits: UndoLimits,
}

/// Its result, for [`Tracker::install`].
pub(crate) struct Warmed {
    shadow: Shadow,
    dirs: Vec<String>,
    store_size: u64,
}

impl Warm {
    /// Loads the saved shadow and brings it up to date with a walk (the first time in a
    /// workspace, every covered file is read and saved).
    pub fn build(self) -> Warmed {
        let mut shadow = Shadow::load(&self.shadow_path);
        let walked = walk(&self.root, Some(&self.dir), WALK_THREADS);
        let dirs = walked.dirs();
        let budget = Budget {
            objects: &self.objects,
            max_file: self.limits.max_file_bytes,
            max_bytes: self.limits.max_bytes / 2,
        };
        shadow.refresh(&self.root, walked, &budget, now_ns());
        Warmed {
            shadow,
            dirs,
            store_size: gc::total(&self.objects),
        }
    }
}

impl Tracker {
    /// What reading the workspace into the shadow needs, so that it can run without the
    /// tracker's lock (a turn must not wait for it); `None` when there is nothing to do.
    pub fn warm_inputs(&mut self) -> Option<Warm> {
        if !self.on() || self.shadow.is_some() || self.warming {
            return None;
        }
        self.warming = true;
        Some(Warm {
            root: self.root.clone(),
            dir: self.dir.clone(),
            shadow_path: self.shadow_path.clone(),
            objects: self.objects.clone(),
            limits: self.limits(),
        })
    }

    /// The background read could not start.
    pub fn cancel_warm(&mut self) {
        self.warming = false;
    }

    /// Takes a shadow read in the background, unless a batch could not wait for it and
    /// read its own meanwhile.
    pub fn install(&mut self, warmed: Warmed) {
        self.warming = false;
        self.store_size.get_or_insert(warmed.store_size);
        if self.shadow.is_none() {
            self.shadow = Some(warmed.shadow);
            self.watch(&warmed.dirs);
        }
    }

    /// A batch is about to run: the shadow must hold the before-images now.
    pub fn ensure_shadow(&mut self) {
        if self.shadow.is_none() {
            if let Some(turn) = self.turn.as_mut() {
                turn.refreshed = true;
            }
            self.refresh(None);
        } else {
            self.refresh_for_turn();
        }
    }

    /// Scans and updates the shadow. With `since` (a batch's start), changes made since
    /// are recorded as the turn's; the others are the person's, before the turn or
    /// between its calls, and only update the shadow.
    pub(super) fn refresh(&mut self, since: Option<(i64, &Batch)>) {
        let limits = self.limits();
        let mut shadow = self
            .shadow
            .take()
            .unwrap_or_else(|| Shadow::load(&self.shadow_path));
        let started = now_ns();
        let budget = Budget {
            objects: &self.objects,
            max_file: limits.max_file_bytes,
            max_bytes: limits.max_bytes / 2,
        };
        // The kernel's report when it says everything; else the walk.
        let reported = match self.watcher.as_mut().filter(|_| self.watching) {
            Some(watcher) => match watcher.drain() {
                Drained::Paths(paths) => {
                    let skip = Some(self.dir.as_path());
                    match shadow.refresh_paths(&self.root, skip, &paths, &budget, started) {
                        Some((refresh, new_dirs)) if watcher.add(&self.root, &new_dirs) => {
                            Some(refresh)
                        }
                        _ => None,
                    }
                }
                Drained::Walk => None,
            },
            None => None,
        };
        let refresh = match reported {
            Some(refresh) => refresh,
            None => {
                let walked = walk(&self.root, Some(&self.dir), WALK_THREADS);
                let dirs = walked.dirs();
                let refresh = shadow.refresh(&self.root, walked, &budget, started);
                self.watch(&dirs);
                refresh
            }
        };
        self.shadow = Some(shadow);
        if refresh.unrecordable > 0 && !self.warned_unrecordable {
            self.warned_unrecordable = true;
            self.note(format!(
                "undo: {} path(s) whose names are not UTF-8 are not covered",
                refresh.unrecordable
            ));
        }
        let Some((since, batch)) = since else {
            return;
        };
        for change in refresh.changes {
            // A path a moved directory carried keeps its own ctime: the directory's tells.
            let by_batch = change.after.is_absent()
                || change.key.is_some_and(|k| k.ctime_ns >= since)
                || (change.before.is_none()
                    && parent_changed_since(&self.root, &change.path, since));
            if !by_batch {
                continue;
            }
            let before = match (change.before, batch.named.get(&change.path)) {
                (Some(before), _) => before,
                (None, Some((before, _))) => before.clone(),
                (None, None)
                    if refresh.ignore_rules_changed
                        && !created_since(&self.root.join(&change.path), since) =>
                {
                    FileState::Unsaved {
                        size: 0,
                        mtime_ns: 0,
                        why: "it was ignored by .gitignore before the command and not saved".into(),
                    }
                }
                (None, None) => FileState::Absent,
            };
            let uncertain = self.uncertain(batch, &change.path, &change.after);
            self.record(&change.path, Some(before), Some(change.after), uncertain);
        }
    }

    /// Lays the watches for the directories a walk covered (the first time, the watcher
    /// is made); without them every refresh walks.
    fn watch(&mut self, dirs: &[String]) {
        if self.watcher.is_none() && !self.no_watcher {
            self.watcher = crate::watch::reliable_here(&self.root)
                .then(Watcher::new)
                .flatten();
            self.no_watcher = self.watcher.is_none();
        }
        let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        self.watching = match self.watcher.as_mut() {
            Some(watcher) => watcher.watch(&self.root, &dirs),
            None => false,
        };
        if !self.watching {
            // Out of watches: walking every time is slower, never wrong.
            self.watcher = None;
            self.no_watcher = true;
        }
    }

    pub fn walk_always(&mut self) {
        self.watcher = None;
        self.watching = false;
        self.no_watcher = true;
    }

    /// The person's changes since the last scan, once per turn (before its first call).
    pub fn refresh_for_turn(&mut self) {
        if !self.on() || self.turn.as_ref().is_none_or(|t| t.refreshed) {
            return;
        }
        // The background read covers the person's changes; a batch that comes before
        // it is done reads the workspace itself (`ensure_shadow`).
        if self.shadow.is_none() && self.warming {
            return;
        }
        if let Some(turn) = self.turn.as_mut() {
            turn.refreshed = true;
        }
        self.refresh(None);
    }
}

/// Whether a directory above `rel` changed (entries added, removed, renamed) since
/// `since`.
fn parent_changed_since(root: &Path, rel: &str, since: i64) -> bool {
    let mut parent = Path::new(rel).parent();
    while let Some(dir) = parent.filter(|d| !d.as_os_str().is_empty()) {
        let changed = std::fs::symlink_metadata(root.join(dir))
            .is_ok_and(|m| StatKey::of(&m).ctime_ns >= since);
        if changed {
            return true;
        }
        parent = dir.parent();
    }
    false
}

/// Whether `abs` was created at or after `since` (birth time, where the file system
/// keeps one; not knowing counts as no).
fn created_since(abs: &Path, since: i64) -> bool {
    std::fs::symlink_metadata(abs)
        .and_then(|m| m.created())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .is_some_and(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX) >= since)
}
