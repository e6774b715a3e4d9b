//! A session's checkpoint journal: `<undo dir>/sessions/<session id>.jsonl` (0600), one
//! JSON record a line, appended as changes are seen (so a turn killed midway can still be
//! undone), fsync'd when a turn is sealed. Replaying it gives the checkpoints and what
//! was undone and redone.

use super::state::{valid_rel, FileState};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One line of the journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A turn's first change: the checkpoint starts.
    Checkpoint {
        seq: u64,
        turn: u64,
        prompt: String,
        time: u64,
    },
    /// Paths the turn changed. `before` is kept from the first record naming a path,
    /// `after` from the last.
    Files {
        seq: u64,
        files: Vec<FileRecord>,
    },
    /// A path the turn changed that cannot be restored, and why.
    Skipped {
        seq: u64,
        path: String,
        why: String,
    },
    Sealed {
        seq: u64,
    },
    /// These checkpoints' changes were taken back. `next_seq`: the first checkpoint
    /// number after it (a later one makes the undo final: nothing to redo).
    Undo {
        id: u64,
        seqs: Vec<u64>,
        time: u64,
        forced: bool,
        next_seq: u64,
    },
    Redo {
        id: u64,
        time: u64,
    },
    /// Dropped to keep the store under `undo.max_mb`: they can no longer be undone.
    Dropped {
        seqs: Vec<u64>,
        why: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileRecord {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<FileState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<FileState>,
    /// The command (shortened) that was running when the scan found this change at a
    /// path it does not name: the command or the person may have made it. Absent in
    /// journals written before this was recorded, which are read as certain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertain: Option<String>,
}

/// One path's change within a checkpoint. `after` is `None` until saki saw the result
/// (a turn killed while a tool ran).
#[derive(Debug, Clone, PartialEq)]
pub struct PathChange {
    pub before: FileState,
    pub after: Option<FileState>,
    /// Some record of the path was uncertain (see [`FileRecord::uncertain`]); the
    /// first such command. One is enough: the before-image an undo restores is older
    /// than that command, so it would overwrite whatever the person saved meanwhile.
    pub uncertain: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub seq: u64,
    pub turn: u64,
    pub prompt: String,
    pub time: u64,
    pub files: BTreeMap<String, PathChange>,
    pub skipped: Vec<(String, String)>,
    pub sealed: bool,
    /// The undo that took it back, while it stands.
    pub undone: Option<u64>,
    pub dropped: bool,
}

impl Checkpoint {
    /// Paths whose content really differs between before and after.
    pub fn changed(&self) -> impl Iterator<Item = (&String, &PathChange)> {
        self.files
            .iter()
            .filter(|(_, c)| c.after.as_ref() != Some(&c.before))
    }
}

#[derive(Debug, Clone)]
pub struct UndoEntry {
    pub id: u64,
    pub seqs: Vec<u64>,
    pub next_seq: u64,
    pub redone: bool,
}

#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Option<File>,
    pub checkpoints: Vec<Checkpoint>,
    pub undos: Vec<UndoEntry>,
    /// Problems found while replaying.
    pub warnings: Vec<String>,
}

pub fn now_secs() -> u64 {
    saki_tools::common::now_secs()
}

/// A session id names a journal and nothing else (the session store's rule).
pub fn journal_path(store: &Path, session: &str) -> Option<PathBuf> {
    let bad = session.is_empty()
        || session.starts_with('.')
        || session.contains(['/', '\\', '\0'])
        || session.contains("..");
    (!bad).then(|| store.join("sessions").join(format!("{session}.jsonl")))
}

impl Journal {
    /// Reads a journal (a missing one is empty); appending opens it on first use.
    pub fn load(path: PathBuf) -> Journal {
        let mut journal = Journal {
            path,
            file: None,
            checkpoints: Vec::new(),
            undos: Vec::new(),
            warnings: Vec::new(),
        };
        let text = match std::fs::read(&journal.path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => return journal,
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(record) => journal.apply(record),
                Err(e) => journal
                    .warnings
                    .push(format!("undo journal line {}: skipped ({e})", n + 1)),
            }
        }
        journal
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Checkpoint {
                seq,
                turn,
                prompt,
                time,
            } => self.checkpoints.push(Checkpoint {
                seq,
                turn,
                prompt,
                time,
                files: BTreeMap::new(),
                skipped: Vec::new(),
                sealed: false,
                undone: None,
                dropped: false,
            }),
            Record::Files { seq, files } => {
                if let Some(cp) = self.get_mut(seq) {
                    for f in files.into_iter().filter(|f| valid_rel(&f.path)) {
                        match cp.files.get_mut(&f.path) {
                            Some(change) => {
                                if f.after.is_some() {
                                    change.after = f.after;
                                }
                                if change.uncertain.is_none() {
                                    change.uncertain = f.uncertain;
                                }
                            }
                            None => {
                                if let Some(before) = f.before {
                                    cp.files.insert(
                                        f.path,
                                        PathChange {
                                            before,
                                            after: f.after,
                                            uncertain: f.uncertain,
                                        },
                                    );
                                }
                            }
                        }
                    }
                }
            }
            Record::Skipped { seq, path, why } => {
                if let Some(cp) = self.get_mut(seq) {
                    cp.skipped.push((path, why));
                }
            }
            Record::Sealed { seq } => {
                if let Some(cp) = self.get_mut(seq) {
                    cp.sealed = true;
                }
            }
            Record::Undo {
                id, seqs, next_seq, ..
            } => {
                for seq in &seqs {
                    if let Some(cp) = self.get_mut(*seq) {
                        cp.undone = Some(id);
                    }
                }
                self.undos.push(UndoEntry {
                    id,
                    seqs,
                    next_seq,
                    redone: false,
                });
            }
            Record::Redo { id, .. } => {
                let seqs = match self.undos.iter_mut().find(|u| u.id == id) {
                    Some(undo) => {
                        undo.redone = true;
                        undo.seqs.clone()
                    }
                    None => return,
                };
                for seq in seqs {
                    if let Some(cp) = self.get_mut(seq) {
                        cp.undone = None;
                    }
                }
            }
            Record::Dropped { seqs, .. } => {
                for seq in seqs {
                    if let Some(cp) = self.get_mut(seq) {
                        cp.dropped = true;
                    }
                }
            }
        }
    }

    pub fn get(&self, seq: u64) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.seq == seq)
    }

    fn get_mut(&mut self, seq: u64) -> Option<&mut Checkpoint> {
        self.checkpoints.iter_mut().find(|c| c.seq == seq)
    }

    pub fn next_seq(&self) -> u64 {
        self.checkpoints.iter().map(|c| c.seq).max().unwrap_or(0) + 1
    }

    pub fn next_undo_id(&self) -> u64 {
        self.undos.iter().map(|u| u.id).max().unwrap_or(0) + 1
    }

    /// Appends a record (one write, not fsync'd: [`Journal::sync`] does that) and applies
    /// it.
    pub fn append(&mut self, record: Record) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        if self.file.is_none() {
            if let Some(dir) = self.path.parent() {
                saki_tools::common::create_private_dir(dir)?;
            }
            self.file = Some(saki_tools::common::open_private_append(&self.path)?);
        }
        if let Some(file) = self.file.as_mut() {
            file.write_all(&line)?;
        }
        self.apply(record);
        Ok(())
    }

    pub fn sync(&self) -> std::io::Result<()> {
        match &self.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }

    /// Checkpoints that can be undone now, newest first.
    pub fn undoable(&self) -> impl Iterator<Item = &Checkpoint> {
        self.checkpoints
            .iter()
            .rev()
            .filter(|c| c.undone.is_none() && !c.dropped && c.changed().next().is_some())
    }

    /// The undo a redo would take back: the latest one not redone, unless a checkpoint
    /// was made after it.
    pub fn redoable(&self) -> Option<&UndoEntry> {
        let last = self.undos.iter().rev().find(|u| !u.redone)?;
        let later = self
            .checkpoints
            .iter()
            .any(|c| c.seq >= last.next_seq && !c.dropped && c.changed().next().is_some());
        (!later).then_some(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: &str) -> FileState {
        FileState::File {
            hash: hash.repeat(64),
            size: 1,
            mode: 0o644,
        }
    }

    #[test]
    fn replay_keeps_first_before_and_last_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), "s1").unwrap();
        let mut j = Journal::load(path.clone());
        j.append(Record::Checkpoint {
            seq: 1,
            turn: 1,
            prompt: "p".into(),
            time: 0,
        })
        .unwrap();
        for (before, after) in [("a", "b"), ("b", "c")] {
            j.append(Record::Files {
                seq: 1,
                files: vec![FileRecord {
                    path: "x.txt".into(),
                    before: Some(file(before)),
                    after: Some(file(after)),
                    uncertain: None,
                }],
            })
            .unwrap();
        }
        j.append(Record::Files {
            seq: 1,
            files: vec![FileRecord {
                path: "../evil".into(),
                before: Some(FileState::Absent),
                after: None,
                uncertain: None,
            }],
        })
        .unwrap();
        let again = Journal::load(path);
        let cp = again.get(1).unwrap();
        assert_eq!(cp.files.len(), 1);
        assert_eq!(cp.files["x.txt"].before, file("a"));
        assert_eq!(cp.files["x.txt"].after, Some(file("c")));
        assert_eq!(again.undoable().count(), 1);
    }

    #[test]
    fn uncertainty_sticks_and_a_record_without_it_is_certain() {
        let dir = tempfile::tempdir().unwrap();
        let path = journal_path(dir.path(), "s1").unwrap();
        let hash = "a".repeat(64);
        let lines = [
            r#"{"type":"checkpoint","seq":1,"turn":1,"prompt":"p","time":0}"#.to_owned(),
            format!(
                r#"{{"type":"files","seq":1,"files":[{{"path":"old.txt","before":{{"kind":"absent"}},"after":{{"kind":"file","hash":"{hash}","size":1,"mode":420}}}}]}}"#
            ),
        ];
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let mut j = Journal::load(path.clone());
        assert!(j.warnings.is_empty(), "{:?}", j.warnings);
        assert_eq!(j.get(1).unwrap().files["old.txt"].uncertain, None);
        for uncertain in [None, Some("cargo fmt"), None] {
            j.append(Record::Files {
                seq: 1,
                files: vec![FileRecord {
                    path: "x.txt".into(),
                    before: Some(file("a")),
                    after: Some(file("b")),
                    uncertain: uncertain.map(str::to_owned),
                }],
            })
            .unwrap();
        }
        let again = Journal::load(path.clone());
        let change = &again.get(1).unwrap().files["x.txt"];
        assert_eq!(change.uncertain.as_deref(), Some("cargo fmt"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("uncertain").count(), 1, "{text}");
    }

    #[test]
    fn session_ids_cannot_name_other_files() {
        let dir = Path::new("/d");
        assert!(journal_path(dir, "../x").is_none());
        assert!(journal_path(dir, "a/b").is_none());
        assert!(journal_path(dir, ".hidden").is_none());
        assert_eq!(
            journal_path(dir, "123-abc").unwrap(),
            Path::new("/d/sessions/123-abc.jsonl")
        );
    }
}
