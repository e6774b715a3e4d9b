//! Continuing an earlier session's log with its history.

use crate::recorder::{FailureReporter, Recorder};
use saki_llm_worker::Item;
use saki_pod::{close_dangling_calls, LoadedSession, SessionMeta, SessionStore, StoreError};

/// A session ready for a run.
pub struct Opened {
    pub recorder: Recorder,
    pub history: Vec<Item>,
    /// The session's system prompt (a resumed one keeps its original).
    pub system_prompt: String,
    /// Problems found while loading, to be shown as alerts.
    pub warnings: Vec<String>,
    pub meta: SessionMeta,
}

/// Which session `exec` continues.
#[derive(Debug, Clone)]
pub enum Resume {
    New,
    Id(String),
    Last,
}

/// Continues a loaded session: appends to its file, closes dangling tool calls (recorded,
/// so the next request is well-formed; each says what is known of its effect), and keeps the system prompt it started with, so
/// the prefix stays identical (`fallback` only for sessions written before it was stored).
pub fn continue_session(
    store: &SessionStore,
    loaded: LoadedSession,
    fallback: impl FnOnce() -> String,
    reporter: Option<FailureReporter>,
) -> Result<Opened, StoreError> {
    let warnings = loaded
        .warnings
        .iter()
        .map(|w| format!("session {}: {w}", loaded.meta.id))
        .collect();
    let mut recorder = Recorder::new(store.append_to(&loaded)?);
    if let Some(reporter) = reporter {
        recorder = recorder.with_reporter(reporter);
    }
    let mut items = loaded.items;
    // What a dangling call did is judged in the session's own workspace.
    let workspace = saki_tools::Workspace::new(&loaded.meta.workspace).ok();
    for item in close_dangling_calls(&mut items, workspace.as_ref()) {
        recorder.record(&item);
    }
    let system = loaded.meta.system_prompt.clone().unwrap_or_else(fallback);
    Ok(Opened {
        recorder,
        history: items,
        system_prompt: system,
        warnings,
        meta: loaded.meta,
    })
}
