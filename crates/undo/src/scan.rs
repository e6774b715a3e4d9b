//! How shell commands' changes are seen: a stat walk of the workspace (respecting
//! `.gitignore`, never entering `.git`) compared with the *shadow*, saki's record of
//! every walked path's last known stat and content (kept in the object store). A path
//! whose stat is unchanged is not read again; one whose stat changed is read, and when
//! its content differs the shadow's version is its before-image. See the README
//! ("Undo") for why this design and what it costs.

use super::objects::Objects;
use super::state::{capture_with, rel_of, FileState, StatKey};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One walk: every recordable path with its lstat.
#[derive(Debug, Default)]
pub struct Walked {
    pub entries: Vec<(String, StatKey)>,
    /// Paths skipped because they cannot be recorded (not UTF-8).
    pub unrecordable: usize,
}

impl Walked {
    /// The directories it found, and the root (`""`): what a watcher watches.
    pub fn dirs(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(_, key)| key.kind == crate::state::KIND_DIR)
            .map(|(path, _)| path.clone())
            .chain([String::new()])
            .collect()
    }
}

/// Walks `root` on `threads` threads: `.gitignore` (and git's exclude files) respected
/// also outside a repository, hidden files included, symlinks not followed, `.git` and
/// `skip` (the undo store, when it lies inside) never entered.
pub fn walk(root: &Path, skip: Option<&Path>, threads: usize) -> Walked {
    walk_within(root, skip, threads, None)
}

/// [`walk`] restricted to `targets` (absolute paths inside `root`) and what lies under
/// them: the directories leading to them are read, with the same ignore rules, so a
/// target the full walk would not list is not listed here either.
pub fn walk_under(root: &Path, skip: Option<&Path>, targets: Vec<PathBuf>) -> Walked {
    let mut walked = walk_within(root, skip, 1, Some(targets.clone()));
    walked.entries.retain(|(rel, _)| {
        let abs = root.join(rel);
        targets.iter().any(|t| abs.starts_with(t))
    });
    walked
}

fn walk_within(
    root: &Path,
    skip: Option<&Path>,
    threads: usize,
    targets: Option<Vec<PathBuf>>,
) -> Walked {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .threads(threads);
    let skip = skip.map(Path::to_path_buf);
    builder.filter_entry(move |e| {
        let on_the_way = || {
            targets.as_ref().is_none_or(|targets| {
                let p = e.path();
                targets.iter().any(|t| t.starts_with(p) || p.starts_with(t))
            })
        };
        e.file_name() != ".git" && skip.as_deref().is_none_or(|s| e.path() != s) && on_the_way()
    });
    let out = Mutex::new(Walked::default());
    let visit = |entry: Result<ignore::DirEntry, ignore::Error>, local: &mut Walked| {
        let Ok(entry) = entry else {
            return;
        };
        if entry.depth() == 0 || is_saki_temp(entry.file_name()) {
            return;
        }
        let Ok(meta) = entry.metadata() else {
            return;
        };
        match rel_of(root, entry.path()) {
            Some(rel) => local.entries.push((rel, StatKey::of(&meta))),
            None => local.unrecordable += 1,
        }
    };
    if threads <= 1 {
        let mut local = Walked::default();
        for entry in builder.build() {
            visit(entry, &mut local);
        }
        return local;
    }
    let visit = &visit;
    builder.build_parallel().run(|| {
        let mut local = Local {
            out: &out,
            walked: Walked::default(),
        };
        Box::new(move |entry| {
            visit(entry, &mut local.walked);
            ignore::WalkState::Continue
        })
    });
    out.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One walker thread's findings, merged into the whole when the thread's visitor is
/// dropped at the end of the walk.
struct Local<'a> {
    out: &'a Mutex<Walked>,
    walked: Walked,
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        out.entries.append(&mut self.walked.entries);
        out.unrecordable += self.walked.unrecordable;
    }
}

/// saki's own temporary files (`.saki-<pid>-*.tmp`) come and go with every write.
fn is_saki_temp(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| n.starts_with(".saki-") && n.ends_with(".tmp"))
}

/// One shadow entry: the stat it was read at and what it held.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub key: StatKey,
    pub state: FileState,
    /// Changed within a timestamp tick of being read: read again next time.
    #[serde(default)]
    pub racy: bool,
    #[serde(skip)]
    seen: u32,
}

/// A path whose content differs from what the shadow held.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: String,
    /// `None`: the shadow did not know the path (it appeared in the walk).
    pub before: Option<FileState>,
    pub after: FileState,
    pub key: Option<StatKey>,
}

/// What a refresh found.
#[derive(Debug, Default)]
pub struct Refresh {
    pub changes: Vec<Change>,
    /// A `.gitignore` changed, so paths may have entered or left the walk without
    /// changing themselves.
    pub ignore_rules_changed: bool,
    pub unrecordable: usize,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Shadow {
    entries: HashMap<String, Entry>,
    #[serde(skip)]
    bytes: u64,
    #[serde(skip)]
    generation: u32,
    #[serde(skip)]
    pub dirty: bool,
}

/// How a refresh reads and saves files.
pub struct Budget<'a> {
    pub objects: &'a Objects,
    pub max_file: u64,
    /// Most bytes of file content the shadow keeps.
    pub max_bytes: u64,
}

impl Shadow {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.get(path)
    }

    /// Every object the shadow needs.
    pub fn hashes(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries
            .values()
            .filter_map(|e| e.state.hash().map(|h| (h, e.state.size())))
    }

    /// Records what `path` holds now (after a tool wrote it, or a restore).
    pub fn set(&mut self, path: &str, key: Option<StatKey>, state: FileState, started_ns: i64) {
        match (key, &state) {
            (Some(key), _) if !state.is_absent() => {
                self.insert(path.to_owned(), key, state, started_ns);
            }
            _ => {
                if let Some(old) = self.entries.remove(path) {
                    self.bytes = self.bytes.saturating_sub(old.state.size());
                    self.dirty = true;
                }
            }
        }
    }

    fn insert(&mut self, path: String, key: StatKey, state: FileState, started_ns: i64) {
        self.bytes += state.hash().map_or(0, |_| state.size());
        let entry = Entry {
            key,
            state,
            racy: key.is_racy(started_ns),
            seen: self.generation,
        };
        if let Some(old) = self.entries.insert(path, entry) {
            self.bytes = self
                .bytes
                .saturating_sub(old.state.hash().map_or(0, |_| old.state.size()));
        }
        self.dirty = true;
    }

    /// Compares a walk with the shadow, reads what changed, and brings the shadow up to
    /// date. Paths that left the walk are looked at one by one: gone, or only ignored now.
    pub fn refresh(
        &mut self,
        root: &Path,
        walked: Walked,
        budget: &Budget<'_>,
        started_ns: i64,
    ) -> Refresh {
        self.generation = self.generation.wrapping_add(1);
        let generation = self.generation;
        let mut refresh = Refresh {
            unrecordable: walked.unrecordable,
            ..Refresh::default()
        };
        // Shadow entries the walk met again: when all were, none can have left it.
        let (mut met, mut new) = (0, 0);
        for (path, key) in walked.entries {
            if let Some(entry) = self.entries.get_mut(&path) {
                entry.seen = generation;
                met += 1;
                if entry.key == key && !entry.racy {
                    continue;
                }
            }
            let before = self.entries.get(&path).map(|e| e.state.clone());
            let Some((after, Some(key))) = self.read(root, &path, budget) else {
                continue;
            };
            let changed = before.as_ref() != Some(&after);
            new += usize::from(before.is_none());
            self.insert(path.clone(), key, after.clone(), started_ns);
            if changed {
                refresh.ignore_rules_changed |= path.ends_with(".gitignore");
                refresh.changes.push(Change {
                    path,
                    before,
                    after,
                    key: Some(key),
                });
            }
        }
        let left: Vec<String> = if met + new == self.entries.len() {
            Vec::new()
        } else {
            self.entries
                .iter()
                .filter(|(_, e)| e.seen != generation)
                .map(|(p, _)| p.clone())
                .collect()
        };
        for path in left {
            let Some(old) = self.entries.remove(&path) else {
                continue;
            };
            self.bytes = self
                .bytes
                .saturating_sub(old.state.hash().map_or(0, |_| old.state.size()));
            self.dirty = true;
            let (after, key) = self
                .read(root, &path, budget)
                .unwrap_or((FileState::Absent, None));
            if after != old.state {
                refresh.ignore_rules_changed |= path.ends_with(".gitignore");
                refresh.changes.push(Change {
                    path,
                    before: Some(old.state),
                    after,
                    key,
                });
            }
        }
        refresh
    }

    /// [`Shadow::refresh`] for the paths a watcher reported (nothing else changed), with
    /// the directories that must be watched now. A reported directory stands for what
    /// the shadow knew under it (moved or deleted with it); a path the shadow does not
    /// know is looked up with the walk's own ignore rules (with what lies under it).
    /// `None`: too many new paths, walk instead.
    pub fn refresh_paths(
        &mut self,
        root: &Path,
        skip: Option<&Path>,
        reported: &std::collections::BTreeSet<String>,
        budget: &Budget<'_>,
        started_ns: i64,
    ) -> Option<(Refresh, Vec<String>)> {
        const MOST_NEW: usize = 64;
        let mut paths = reported.clone();
        // Only a directory the shadow knew stands for entries under it.
        let dirs = reported.iter().filter(
            |p| matches!(self.entries.get(*p), Some(e) if matches!(e.state, FileState::Dir { .. })),
        );
        for dir in dirs {
            let prefix = format!("{dir}/");
            paths.extend(
                self.entries
                    .keys()
                    .filter(|k| k.starts_with(&prefix))
                    .cloned(),
            );
        }
        let unknown: Vec<PathBuf> = paths
            .iter()
            .filter(|p| !self.entries.contains_key(*p))
            .map(|p| root.join(p))
            .filter(|abs| std::fs::symlink_metadata(abs).is_ok())
            .collect();
        if unknown.len() > MOST_NEW {
            return None;
        }
        let mut new_dirs = Vec::new();
        let mut found: HashMap<String, StatKey> = HashMap::new();
        if !unknown.is_empty() {
            for (rel, key) in walk_under(root, skip, unknown).entries {
                if key.kind == super::state::KIND_DIR {
                    new_dirs.push(rel.clone());
                }
                paths.insert(rel.clone());
                found.insert(rel, key);
            }
        }
        let mut refresh = Refresh::default();
        for path in &paths {
            let known = self
                .entries
                .get(path)
                .map(|e| (e.state.clone(), e.key, e.racy));
            if known.is_none() && !found.contains_key(path) {
                // Unknown and not walked: gone again, or ignored.
                continue;
            }
            let abs = root.join(path);
            let Ok(meta) = std::fs::symlink_metadata(&abs) else {
                if let Some((before, _, _)) = known {
                    self.set(path, None, FileState::Absent, started_ns);
                    refresh.changes.push(Change {
                        path: path.clone(),
                        before: Some(before),
                        after: FileState::Absent,
                        key: None,
                    });
                }
                continue;
            };
            let key = StatKey::of(&meta);
            if known
                .as_ref()
                .is_some_and(|(_, k, racy)| *k == key && !racy)
            {
                continue;
            }
            let room = self.bytes + meta.len() <= budget.max_bytes;
            let after = capture_with(&abs, &meta, budget.objects, budget.max_file, room);
            let before = known.map(|(state, _, _)| state);
            self.insert(path.clone(), key, after.clone(), started_ns);
            if before.as_ref() != Some(&after) {
                refresh.changes.push(Change {
                    path: path.clone(),
                    before,
                    after,
                    key: Some(key),
                });
            }
        }
        Some((refresh, new_dirs))
    }

    /// What `path` holds now, with its stat (none when it is gone); `None` when it
    /// cannot be looked at (it is looked at again at the next refresh).
    fn read(
        &self,
        root: &Path,
        path: &str,
        budget: &Budget<'_>,
    ) -> Option<(FileState, Option<StatKey>)> {
        let abs = root.join(path);
        let meta = match std::fs::symlink_metadata(&abs) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Some((FileState::Absent, None))
            }
            Err(_) => return None,
        };
        let room = self.bytes + meta.len() <= budget.max_bytes;
        let state = capture_with(&abs, &meta, budget.objects, budget.max_file, room);
        Some((state, Some(StatKey::of(&meta))))
    }

    /// The shadow saved for a workspace; empty when there is none or it cannot be read
    /// (it is only a cache: everything is read again).
    pub fn load(path: &Path) -> Shadow {
        let Ok(bytes) = std::fs::read(path) else {
            return Shadow::default();
        };
        match serde_json::from_slice::<Shadow>(&bytes) {
            Ok(mut shadow) => {
                shadow.entries.retain(|p, _| super::state::valid_rel(p));
                shadow.bytes = shadow
                    .entries
                    .values()
                    .map(|e| e.state.hash().map_or(0, |_| e.state.size()))
                    .sum();
                shadow
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "unreadable undo shadow; reading the workspace again");
                Shadow::default()
            }
        }
    }

    pub fn save(&mut self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            saki_tools::common::create_private_dir(dir)?;
        }
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        saki_tools::atomic::write_atomic_mode(path, &bytes, 0o600)?;
        self.dirty = false;
        Ok(())
    }
}

/// Where a workspace's shadow is kept: named by a hash of its root, so no path from the
/// workspace ever names a file in the store.
pub fn shadow_path(store: &Path, root: &Path) -> PathBuf {
    let key = saki_tools::common::sha256_hex(root.as_os_str().as_encoded_bytes());
    store.join("shadows").join(format!("{}.json", &key[..32]))
}
