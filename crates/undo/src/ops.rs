//! Undo, redo and the list of checkpoints, over one session's journal: used by the
//! engine (`/undo`, `/rewind`) and by `saki undo` alike.

use super::journal::{now_secs, Checkpoint, Journal, Record};
use super::objects::Objects;
use super::restore::{self, Conflict, Direction, Restored};
use super::UndoError;
use std::path::Path;

/// What an undo or redo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub redo: bool,
    /// The turns taken back (or forward), oldest first, with their prompts.
    pub turns: Vec<(u64, String)>,
    pub restored: Vec<String>,
    /// Paths left as they are, and why.
    pub left: Vec<(String, String)>,
    /// Conflicts that `force` overrode.
    pub overridden: Vec<Conflict>,
}

impl Outcome {
    /// One paragraph for people.
    pub fn describe(&self) -> String {
        let verb = if self.redo { "redid" } else { "reverted" };
        let turns: Vec<String> = self
            .turns
            .iter()
            .map(|(t, p)| format!("turn {t} ({})", short(p, 40)))
            .collect();
        let mut text = format!("{verb} {}", turns.join(", "));
        if self.restored.is_empty() {
            text.push_str(": no file needed changing");
        } else {
            text.push_str(&format!(": {}", list(&self.restored)));
        }
        for c in &self.overridden {
            text.push_str(&format!("\n  overwritten (--force): {}: {}", c.path, c.why));
        }
        for (path, why) in &self.left {
            text.push_str(&format!("\n  left as it is: {path}: {why}"));
        }
        text
    }
}

/// What the model is told (a system item), so it does not assume its edits still
/// stand; `None` when no file was written.
pub fn model_note(outcome: &Outcome) -> Option<String> {
    if outcome.restored.is_empty() {
        return None;
    }
    let turns: Vec<String> = outcome
        .turns
        .iter()
        .map(|(t, p)| format!("turn {t} (\"{}\")", short(p, 60)))
        .collect();
    Some(if outcome.redo {
        format!(
            "[redo] The person put back the file changes of {}: {} hold what that work left.",
            turns.join(", "),
            list(&outcome.restored)
        )
    } else {
        format!(
            "[undo] The person reverted the file changes of {}: {} are back as they were before it.",
            turns.join(", "),
            list(&outcome.restored)
        )
    })
}

/// The session log's record of an undo or redo.
pub fn log_note(outcome: &Outcome) -> crate::UndoNote {
    crate::UndoNote {
        redo: outcome.redo,
        turns: outcome.turns.iter().map(|(t, _)| *t).collect(),
        files: outcome.restored.clone(),
        forced: !outcome.overridden.is_empty(),
    }
}

/// `a.rs, b.rs and 3 more`.
pub fn list(paths: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

/// The first line of `text`, at most `max` characters.
pub fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Takes back the file changes of the last `turns` checkpoints that still stand.
pub fn undo(
    root: &Path,
    objects: &Objects,
    journal: &mut Journal,
    turns: usize,
    force: bool,
) -> Result<Outcome, UndoError> {
    let mut picks: Vec<u64> = journal
        .undoable()
        .take(turns.max(1))
        .map(|c| c.seq)
        .collect();
    if picks.is_empty() {
        return Err(UndoError::NothingToUndo);
    }
    if picks.len() < turns {
        return Err(UndoError::NotEnough {
            asked: turns,
            available: picks.len(),
        });
    }
    picks.reverse();
    revert(root, objects, journal, &picks, force, Direction::Undo)
}

/// Takes back every checkpoint of turn `turn` and later (for `/rewind`).
pub fn undo_from(
    root: &Path,
    objects: &Objects,
    journal: &mut Journal,
    turn: u64,
    force: bool,
) -> Result<Option<Outcome>, UndoError> {
    let later = |c: &&Checkpoint| c.turn >= turn && c.undone.is_none();
    if let Some(dropped) = journal
        .checkpoints
        .iter()
        .filter(later)
        .find(|c| c.dropped && c.changed().next().is_some())
    {
        if !force {
            return Err(UndoError::Dropped { turn: dropped.turn });
        }
    }
    let picks: Vec<u64> = journal
        .checkpoints
        .iter()
        .filter(later)
        .filter(|c| !c.dropped && c.changed().next().is_some())
        .map(|c| c.seq)
        .collect();
    if picks.is_empty() {
        return Ok(None);
    }
    revert(root, objects, journal, &picks, force, Direction::Undo).map(Some)
}

/// Puts back what the last undo took back.
pub fn redo(
    root: &Path,
    objects: &Objects,
    journal: &mut Journal,
    force: bool,
) -> Result<Outcome, UndoError> {
    let Some(undo) = journal.redoable() else {
        return Err(UndoError::NothingToRedo);
    };
    let (id, seqs) = (undo.id, undo.seqs.clone());
    let mut outcome = apply_plan(root, objects, journal, &seqs, force, Direction::Redo)?;
    outcome.redo = true;
    journal
        .append(Record::Redo {
            id,
            time: now_secs(),
        })
        .and_then(|()| journal.sync())
        .map_err(|e| UndoError::io(journal.path(), e))?;
    Ok(outcome)
}

fn revert(
    root: &Path,
    objects: &Objects,
    journal: &mut Journal,
    seqs: &[u64],
    force: bool,
    direction: Direction,
) -> Result<Outcome, UndoError> {
    let outcome = apply_plan(root, objects, journal, seqs, force, direction)?;
    let record = Record::Undo {
        id: journal.next_undo_id(),
        seqs: seqs.to_vec(),
        time: now_secs(),
        forced: force && !outcome.overridden.is_empty(),
        next_seq: journal.next_seq(),
    };
    journal
        .append(record)
        .and_then(|()| journal.sync())
        .map_err(|e| UndoError::io(journal.path(), e))?;
    Ok(outcome)
}

/// Checks, then writes. The journal is written after the files: an undo cut off midway
/// is simply run again (paths already put back are no conflict). When paths needed
/// writing and none could be (each left as it is, also under `force`), the result is
/// [`UndoError::NothingRestored`], so the caller records nothing: the turns still stand.
fn apply_plan(
    root: &Path,
    objects: &Objects,
    journal: &Journal,
    seqs: &[u64],
    force: bool,
    direction: Direction,
) -> Result<Outcome, UndoError> {
    let checkpoints: Vec<&Checkpoint> = seqs.iter().filter_map(|s| journal.get(*s)).collect();
    let targets = restore::plan(&checkpoints, direction);
    let (conflicts, _) = restore::check(root, &targets, objects);
    if !conflicts.is_empty() && !force {
        return Err(UndoError::Conflicts(conflicts));
    }
    let Restored {
        mut restored,
        mut left,
    } = restore::apply(root, &targets, objects);
    restored.sort();
    left.sort();
    if restored.is_empty() && !left.is_empty() {
        return Err(UndoError::NothingRestored {
            redo: direction == Direction::Redo,
            left,
        });
    }
    Ok(Outcome {
        redo: false,
        turns: checkpoints
            .iter()
            .map(|c| (c.turn, c.prompt.clone()))
            .collect(),
        restored,
        left,
        overridden: conflicts,
    })
}

/// One checkpoint, for `saki undo --list` and the `/rewind` picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub seq: u64,
    pub turn: u64,
    pub prompt: String,
    pub time: u64,
    pub files: Vec<String>,
    /// Paths that cannot be restored, and why.
    pub skipped: Vec<(String, String)>,
    /// Paths restored only with `--force`, and the command that ran when they changed.
    pub uncertain: Vec<(String, String)>,
    pub state: &'static str,
}

/// Every checkpoint that changed something, oldest first.
pub fn summaries(journal: &Journal) -> Vec<Summary> {
    journal
        .checkpoints
        .iter()
        .filter(|c| c.changed().next().is_some())
        .map(|c| Summary {
            seq: c.seq,
            turn: c.turn,
            prompt: c.prompt.clone(),
            time: c.time,
            files: c.changed().map(|(p, _)| p.clone()).collect(),
            skipped: c.skipped.clone(),
            uncertain: c
                .changed()
                .filter_map(|(p, change)| Some((p.clone(), change.uncertain.clone()?)))
                .collect(),
            state: if c.dropped {
                "dropped"
            } else if c.undone.is_some() {
                "undone"
            } else if !c.sealed {
                "interrupted"
            } else {
                "applied"
            },
        })
        .collect()
}
