//! Checkpoints in a session: the turn's checkpoint sealed when it ends, accepted
//! speculations covered, and `/undo`, `/redo`, `/rewind`. Each undo is recorded in the
//! session log and told to the model with a system item (history first: a resumed
//! session, and the model, know the files went back).

use crate::bridge;
use crate::protocol::{EngineEvent, Level, TurnEntry};
use crate::Engine;
use saki_llm_worker::Item;
use saki_read_ahead::{CacheSafeStore, Speculation};
use saki_undo::ops::{log_note, model_note, short};
use saki_undo::{Checkpoints, Outcome, UndoLimits};
use std::sync::Arc;

/// The checkpoints of an engine's sessions: in `<data dir>/undo`, beside the sessions;
/// off without a session store.
pub(crate) fn checkpoints(
    workspace: &Arc<saki_tools::Workspace>,
    store: Option<&saki_pod::SessionStore>,
) -> Checkpoints {
    // `<data dir>/sessions` has `<data dir>/undo` beside it; a store kept elsewhere (tests)
    // keeps its checkpoints inside it, never in a directory it does not own.
    let dir = store.map(|s| match s.dir().parent() {
        Some(data) if s.dir().ends_with("sessions") => saki_undo::store_dir(data),
        _ => s.dir().join("undo"),
    });
    let limits = dir.as_ref().map(|_| UndoLimits::default());
    Checkpoints::new(workspace.clone(), dir.unwrap_or_default(), limits)
}

impl Engine {
    /// `undo.max_mb` and `undo.max_file_mb` from config; `None` turns undo off.
    pub fn set_undo_limits(&mut self, limits: Option<UndoLimits>) {
        if self.store.is_some() {
            self.checkpoints.set_limits(limits);
        }
    }

    /// The checkpoints follow the session log (a new one starts counting at 0; a
    /// resumed one was set when it was loaded).
    pub(crate) fn undo_follow_session(&self) {
        let id = self.session_id();
        if id != self.checkpoints.session() {
            self.checkpoints.set_session(id.as_deref(), 0);
        }
    }

    /// Seals the turn's checkpoint; what people should know (files not saved,
    /// checkpoints dropped) comes as alerts.
    pub(crate) async fn undo_turn_ended(&self) {
        if let Some(report) = self.checkpoints.end_turn().await {
            for note in report.notes {
                self.alert(Level::Warn, note);
            }
        }
    }

    /// An accepted speculation is about to write its files: their before-images.
    pub(crate) fn undo_accept_begins(
        &self,
        speculation: &Speculation,
        prompt: &str,
    ) -> Vec<String> {
        self.undo_follow_session();
        let paths: Vec<String> = speculation
            .written_files()
            .iter()
            .filter_map(|p| p.to_str().map(str::to_owned))
            .collect();
        self.checkpoints.begin_turn(prompt);
        self.checkpoints.before_paths(&paths);
        paths
    }

    /// The accept ended; `committed`: its prompt is history now (else its turn number
    /// is given back, though files it could not restore stay in the checkpoint).
    pub(crate) async fn undo_accept_ends(&self, paths: &[String], committed: bool) {
        self.checkpoints.after_paths(paths);
        if !committed {
            self.checkpoints.abandon_turn();
        }
        self.undo_turn_ended().await;
    }

    pub(crate) async fn undo(&mut self, turns: usize, force: bool) {
        // After `/new` and before its first prompt there is no session to undo in.
        self.undo_follow_session();
        self.discard_speculation();
        let result = self.checkpoints.undo(turns, force).await;
        self.after_undo(result);
    }

    pub(crate) async fn redo(&mut self, force: bool) {
        self.undo_follow_session();
        self.discard_speculation();
        let result = self.checkpoints.redo(force).await;
        self.after_undo(result);
    }

    fn after_undo(&mut self, result: Result<Outcome, saki_undo::UndoError>) {
        match result {
            Ok(outcome) => {
                self.tell_model(&outcome);
                self.send(EngineEvent::Undone {
                    level: if outcome.left.is_empty() {
                        Level::Info
                    } else {
                        Level::Warn
                    },
                    message: outcome.describe(),
                });
            }
            Err(e) => self.send(EngineEvent::Undone {
                level: Level::Warn,
                message: e.to_string(),
            }),
        }
    }

    /// The model sees what happened to the files (a system item), and the session log
    /// records it.
    fn tell_model(&mut self, outcome: &Outcome) {
        let Some(text) = model_note(outcome) else {
            return;
        };
        self.worker.commit_items(vec![Item::system(text)]);
        if let Some(recorder) = bridge::recorder(&self.slot) {
            recorder.record_undo(log_note(outcome));
        }
    }

    /// The conversation's prompts, newest first, numbered as the checkpoints number them
    /// (counted back from the last).
    fn turn_indices(&self) -> Vec<(usize, u64)> {
        let mut turn = self.checkpoints.turns();
        let mut out = Vec::new();
        for (i, item) in self.worker.history().iter().enumerate().rev() {
            if matches!(item, Item::User { .. }) && turn > 0 {
                out.push((i, turn));
                turn -= 1;
            }
        }
        out
    }

    pub(crate) fn list_turns(&self) {
        self.undo_follow_session();
        let summaries = self.checkpoints.summaries();
        let entries: Vec<TurnEntry> = self
            .turn_indices()
            .into_iter()
            .filter_map(|(i, turn)| match self.worker.history().get(i) {
                Some(Item::User { text }) => Some(TurnEntry {
                    turn,
                    prompt: text.clone(),
                    files: summaries
                        .iter()
                        .filter(|s| s.turn == turn && s.state == "applied")
                        .map(|s| s.files.len())
                        .sum(),
                }),
                _ => None,
            })
            .collect();
        if entries.is_empty() {
            self.alert(Level::Info, "no turn to rewind to yet");
        } else {
            self.send(EngineEvent::Turns(entries));
        }
    }

    /// Back to just before turn `turn`: files first (a conflict leaves everything as it
    /// was), then the conversation, recorded in the session log.
    pub(crate) async fn rewind(&mut self, turn: u64, force: bool) {
        self.undo_follow_session();
        self.discard_speculation();
        let Some((index, _)) = self.turn_indices().into_iter().find(|(_, t)| *t == turn) else {
            self.send(EngineEvent::Undone {
                level: Level::Warn,
                message: format!(
                    "turn {turn} is not in the conversation any more (compacted or rewound); /undo still takes back files"
                ),
            });
            return;
        };
        let prompt = match self.worker.history().get(index) {
            Some(Item::User { text }) => text.clone(),
            _ => String::new(),
        };
        let files = match self.checkpoints.undo_from(turn, force).await {
            Ok(outcome) => outcome,
            Err(e) => {
                self.send(EngineEvent::Undone {
                    level: Level::Warn,
                    message: format!("not rewound: {e}"),
                });
                return;
            }
        };
        let kept: Vec<Item> = self.worker.history()[..index].to_vec();
        self.worker.set_history(kept.clone());
        if let Some(recorder) = bridge::recorder(&self.slot) {
            recorder.record_rewind(index, turn);
        }
        self.checkpoints.set_turns(turn.saturating_sub(1));
        self.cache = CacheSafeStore::default();
        self.send(EngineEvent::History(kept));
        let mut message = format!("rewound to before turn {turn} (\"{}\")", short(&prompt, 60));
        if let Some(outcome) = files {
            message.push_str(&format!("; {}", outcome.describe()));
        }
        self.send(EngineEvent::Undone {
            level: Level::Info,
            message,
        });
        self.send(EngineEvent::Rewound { prompt });
        self.send_status();
    }
}
