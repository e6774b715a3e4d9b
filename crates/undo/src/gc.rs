//! The size bound, `undo.max_mb`: the object store's size is the bytes of its objects.
//! Past the bound the oldest checkpoints (of any session) are dropped, then the shadows of
//! other workspaces (least recently used first), and the objects nothing refers to any
//! more are deleted. Objects nothing referred to before this pass are deleted only when
//! older than an hour: another saki may have just written one it has not recorded yet.

use super::journal::{now_secs, Journal, Record};
use super::objects::Objects;
use super::scan::Shadow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const ORPHAN_GRACE: Duration = Duration::from_secs(3600);
/// Most the store grows, after a pass that could not get it under the bound, before the
/// next pass (else a tenth of its size).
const STUCK_GROWTH_MAX: u64 = 32 << 20;

/// A checkpoint that may be dropped: (time, its journal (`None`: the current session's),
/// seq, turn, the objects it refers to).
type Candidate = (u64, Option<usize>, u64, u64, Vec<String>);

/// What the current process holds that a pass must keep.
pub struct Live<'a> {
    pub shadow: Option<&'a Shadow>,
    pub shadow_path: &'a Path,
    pub journal: Option<&'a mut Journal>,
    /// The checkpoint just sealed: never dropped, however large.
    pub keep_seq: Option<u64>,
}

/// The result of a pass: the store's size after it, and notes for people.
#[derive(Debug, Default)]
pub struct Pass {
    pub total: u64,
    pub notes: Vec<String>,
}

/// A pass that left the store over `max` bytes: what the current session must keep (the
/// live shadow, the checkpoint just sealed) and objects too young to delete were over it
/// on their own. Every pass lists every object and loads every other journal and shadow,
/// so the next one waits until the store has grown noticeably or the bound changed; until
/// then the store may stay over it by that much, and the checkpoints of the turns between
/// are dropped by that next pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stuck {
    /// The store's size after the pass.
    pub total: u64,
    pub max: u64,
}

impl Stuck {
    /// What a pass left, when it left the store over `max`.
    pub fn after(pass: &Pass, max: u64) -> Option<Self> {
        (pass.total > max).then_some(Self {
            total: pass.total,
            max,
        })
    }

    /// Whether a pass is worth running again at `total` bytes under a bound of `max`: the
    /// bound changed, or the store grew by a tenth (at most [`STUCK_GROWTH_MAX`]).
    pub fn retry(&self, total: u64, max: u64) -> bool {
        let growth = (self.total / 10).clamp(1, STUCK_GROWTH_MAX);
        max != self.max || total >= self.total.saturating_add(growth)
    }
}

/// The store's size now (every object's bytes).
pub fn total(objects: &Objects) -> u64 {
    objects.list().iter().map(|(_, size, _)| size).sum()
}

/// Brings the store under `max` bytes when it is over.
pub fn enforce(dir: &Path, objects: &Objects, max: u64, mut live: Live<'_>) -> Pass {
    let listed = objects.list();
    let sizes: HashMap<String, (u64, SystemTime)> = listed
        .into_iter()
        .map(|(h, size, at)| (h, (size, at)))
        .collect();
    let total: u64 = sizes.values().map(|(s, _)| s).sum();
    if total <= max {
        return Pass {
            total,
            notes: Vec::new(),
        };
    }
    let own_journal = live.journal.as_ref().map(|j| j.path().to_path_buf());
    let mut others: Vec<Journal> = list_files(&dir.join("sessions"), "jsonl")
        .into_iter()
        .filter(|(p, _)| Some(p) != own_journal.as_ref())
        .map(|(p, _)| Journal::load(p))
        .collect();
    let mut shadows: Vec<(PathBuf, SystemTime, Shadow)> = list_files(&dir.join("shadows"), "json")
        .into_iter()
        .filter(|(p, _)| p != live.shadow_path)
        .map(|(p, at)| {
            let shadow = Shadow::load(&p);
            (p, at, shadow)
        })
        .collect();
    let mut refs: HashMap<String, u32> = HashMap::new();
    let add = |hash: &str, refs: &mut HashMap<String, u32>| {
        *refs.entry(hash.to_owned()).or_default() += 1;
    };
    if let Some(shadow) = live.shadow {
        shadow.hashes().for_each(|(h, _)| add(h, &mut refs));
    }
    for (_, _, shadow) in &shadows {
        shadow.hashes().for_each(|(h, _)| add(h, &mut refs));
    }
    // Every standing checkpoint: (time, journal index (None: own), seq, its hashes).
    let mut candidates: Vec<Candidate> = Vec::new();
    let journals = live
        .journal
        .as_deref()
        .into_iter()
        .map(|j| (None, j))
        .chain(others.iter().enumerate().map(|(i, j)| (Some(i), j)));
    for (index, journal) in journals {
        for cp in journal.checkpoints.iter().filter(|c| !c.dropped) {
            let hashes: Vec<String> = cp
                .files
                .values()
                .flat_map(|c| [Some(&c.before), c.after.as_ref()])
                .flatten()
                .filter_map(|s| s.hash().map(str::to_owned))
                .collect();
            hashes.iter().for_each(|h| add(h, &mut refs));
            let kept = index.is_none() && Some(cp.seq) == live.keep_seq;
            if !kept {
                candidates.push((cp.time, index, cp.seq, cp.turn, hashes));
            }
        }
    }
    let size_of = |h: &str| sizes.get(h).map_or(0, |(s, _)| *s);
    let mut referenced: u64 = refs.keys().map(|h| size_of(h)).sum();
    let mut freed: HashSet<String> = HashSet::new();
    let mut release = |hashes: &[String], refs: &mut HashMap<String, u32>, referenced: &mut u64| {
        for hash in hashes {
            if let Some(count) = refs.get_mut(hash) {
                *count -= 1;
                if *count == 0 {
                    refs.remove(hash);
                    *referenced = referenced.saturating_sub(size_of(hash));
                    freed.insert(hash.clone());
                }
            }
        }
    };
    candidates.sort_by_key(|c| (c.0, c.2));
    let mut dropped: HashMap<Option<usize>, Vec<(u64, u64)>> = HashMap::new();
    for (_, index, seq, turn, hashes) in &candidates {
        if referenced <= max {
            break;
        }
        release(hashes, &mut refs, &mut referenced);
        dropped.entry(*index).or_default().push((*seq, *turn));
    }
    shadows.sort_by_key(|(_, at, _)| *at);
    let mut shadows_dropped = 0;
    for (path, _, shadow) in &shadows {
        if referenced <= max {
            break;
        }
        let hashes: Vec<String> = shadow.hashes().map(|(h, _)| h.to_owned()).collect();
        release(&hashes, &mut refs, &mut referenced);
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove an undo shadow");
        }
        shadows_dropped += 1;
    }
    let mut notes = Vec::new();
    let why = format!(
        "the undo store was over undo.max_mb ({})",
        super::state::bytes(max)
    );
    for (index, seqs) in &dropped {
        let record = Record::Dropped {
            seqs: seqs.iter().map(|(s, _)| *s).collect(),
            why: why.clone(),
        };
        let journal = match index {
            None => live.journal.as_deref_mut(),
            Some(i) => others.get_mut(*i),
        };
        if let Some(journal) = journal {
            if let Err(e) = journal.append(record).and_then(|()| journal.sync()) {
                tracing::warn!(error = %e, "cannot record dropped checkpoints");
            }
        }
        let turns: Vec<String> = seqs.iter().map(|(_, t)| t.to_string()).collect();
        let whose = match index {
            None => "this session".to_owned(),
            Some(_) => "an earlier session".to_owned(),
        };
        notes.push(format!(
            "undo: dropped the oldest checkpoints (turns {} of {whose}) to stay under undo.max_mb; they can no longer be undone",
            turns.join(", ")
        ));
    }
    if shadows_dropped > 0 {
        notes.push(format!(
            "undo: forgot the saved contents of {shadows_dropped} other workspace(s) to stay under undo.max_mb"
        ));
    }
    let now = SystemTime::now();
    let mut removed = 0;
    for (hash, (size, at)) in &sizes {
        let was_orphan = !refs.contains_key(hash) && !freed.contains(hash);
        let old = now.duration_since(*at).unwrap_or_default() > ORPHAN_GRACE;
        if freed.contains(hash) || (was_orphan && old) {
            objects.remove(hash);
            removed += size;
        }
    }
    tracing::debug!(removed, at = now_secs(), "undo store swept");
    Pass {
        total: total.saturating_sub(removed),
        notes,
    }
}

fn list_files(dir: &Path, ext: &str) -> Vec<(PathBuf, SystemTime)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .filter_map(|p| {
            let at = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((p, at))
        })
        .collect()
}
