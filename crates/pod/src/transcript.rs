//! A session's log read back for people (`saki export`): every item as it was committed,
//! compactions not applied (they change only what the model sees) but marked, rewinds
//! applied (the conversation went back), accepted speculations marked, and the usage of
//! each main request.

use crate::store::{Line, LoadedSession, StoreError};
use saki_llm_client::UsageEvent;
use saki_llm_worker::Item;
use serde::Serialize;

/// One record of a session, in the order it was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    Item {
        item: Item,
        /// Part of an accepted speculation (ran ahead, then accepted).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        speculated: bool,
    },
    /// The model's context was compacted here.
    Compaction {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Files were put back (`/undo`, `/redo`).
    Undo { summary: String },
    /// One main request's tokens.
    Usage { usage: UsageEvent },
}

/// The whole readable log of a session.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub entries: Vec<Entry>,
    /// Lines that could not be read (a torn tail, a damaged line).
    pub skipped: usize,
}

impl Transcript {
    /// Reads the log of a session [`crate::SessionStore::load`] found.
    pub fn read(session: &LoadedSession) -> Result<Self, StoreError> {
        let bytes = std::fs::read(&session.path).map_err(|source| StoreError::Io {
            path: session.path.clone(),
            source,
        })?;
        Ok(Self::parse(&String::from_utf8_lossy(&bytes)))
    }

    fn parse(text: &str) -> Self {
        let mut entries = Vec::new();
        let mut skipped = 0;
        // Items of the conversation so far: a rewind keeps the first `keep` of them.
        let mut items = 0usize;
        let mut speculated = 0usize;
        for line in text.lines().skip(1) {
            let Ok(line) = serde_json::from_str::<Line>(line) else {
                skipped += 1;
                continue;
            };
            match line {
                Line::Item { item } => {
                    items += 1;
                    entries.push(Entry::Item {
                        item,
                        speculated: speculated > 0,
                    });
                    speculated = speculated.saturating_sub(1);
                }
                Line::Speculated { count } => speculated = count,
                Line::Usage { usage } => entries.push(Entry::Usage { usage }),
                Line::Compaction { report, .. } => entries.push(Entry::Compaction {
                    tokens_before: report.tokens_before,
                    tokens_after: report.tokens_after,
                }),
                Line::Undo(note) => entries.push(Entry::Undo {
                    summary: format!(
                        "{} turn(s) {:?}: {}",
                        if note.redo { "redid" } else { "undid" },
                        note.turns,
                        note.files.join(", ")
                    ),
                }),
                Line::Rewind { keep, .. } if keep <= items => {
                    cut_to(&mut entries, keep);
                    items = keep;
                }
                Line::Rewind { .. } | Line::Session(_) => skipped += 1,
                // Records the transcript does not show: a subagent's own loop (an `agent`
                // call), whose answer is the call's result.
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }
        Self { entries, skipped }
    }
}

/// Drops everything after the `keep`-th item.
fn cut_to(entries: &mut Vec<Entry>, keep: usize) {
    let mut seen = 0;
    let end = entries
        .iter()
        .position(|e| {
            if matches!(e, Entry::Item { .. }) {
                seen += 1;
            }
            seen > keep
        })
        .unwrap_or(entries.len());
    entries.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speculated_items_are_marked_and_rewinds_cut() {
        let log = [
            r#"{"type":"session","id":"x","workspace":"/w","provider":"p","model":"m","created":1,"title":"t"}"#,
            r#"{"type":"item","item":{"type":"user","text":"one"}}"#,
            r#"{"type":"usage","usage":{"input_tokens":10,"output_tokens":2,"total_tokens":null,"cache_read_input_tokens":null,"cache_creation_input_tokens":null}}"#,
            r#"{"type":"speculated","count":2}"#,
            r#"{"type":"item","item":{"type":"user","text":"two"}}"#,
            r#"{"type":"item","item":{"type":"assistant_text","text":"ok"}}"#,
            r#"{"type":"item","item":{"type":"user","text":"three"}}"#,
            r#"{"type":"item","item":{"type":"user","text":"four"}}"#,
            r#"{"type":"rewind","keep":4,"turn":3}"#,
            "not json",
        ]
        .join("\n");
        let t = Transcript::parse(&log);
        assert_eq!(t.skipped, 1);
        let flags: Vec<(String, bool)> = t
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Item {
                    item: Item::User { text } | Item::AssistantText { text },
                    speculated,
                } => Some((text.clone(), *speculated)),
                _ => None,
            })
            .collect();
        assert_eq!(
            flags,
            [
                ("one".to_owned(), false),
                ("two".to_owned(), true),
                ("ok".to_owned(), true),
                ("three".to_owned(), false)
            ]
        );
        assert!(matches!(t.entries[1], Entry::Usage { .. }));
    }
}
