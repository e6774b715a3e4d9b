//! A session's log: created at the first prompt, replaced by `/new`, continued by
//! `/resume` (or `--resume`).

use crate::bridge;
use crate::protocol::{EngineEvent, Level, SessionEntry};
use crate::recorder::{FailureReporter, Recorder};
use crate::session;
use crate::Engine;
use saki_pod::{LoadedSession, SessionStore};
use saki_read_ahead::CacheSafeStore;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Engine {
    /// Turns session-log write failures into alerts (the UI owns the terminal).
    fn reporter(&self) -> FailureReporter {
        let ui = self.ui.clone();
        Arc::new(move |message| {
            let _ = ui.send(EngineEvent::Alert {
                level: Level::Warn,
                message,
            });
        })
    }

    /// Creates the session log at the first prompt (a front end may call it earlier, to
    /// fail before any work when sessions cannot be saved); `prompt` is its title.
    pub fn ensure_session(&mut self, prompt: &str) -> Result<(), String> {
        if bridge::recorder(&self.slot).is_some() {
            return Ok(());
        }
        let store = self
            .store
            .as_ref()
            .ok_or("sessions cannot be saved: set XDG_DATA_HOME or HOME")?;
        let system = self.worker.build_request().system.unwrap_or_default();
        let id = self.preset_id.take().unwrap_or_else(SessionStore::new_id);
        let writer = store
            .create_as(
                &id,
                &self.workspace.root().display().to_string(),
                &self.settings.provider,
                self.worker.model(),
                prompt,
                Some(&system),
            )
            .map_err(|e| format!("this session will not be saved: {e}"))?;
        let recorder = Recorder::new(writer).with_reporter(self.reporter());
        bridge::set_recorder(&self.slot, Some(recorder));
        self.key_cache_to_session();
        Ok(())
    }

    /// Names the session before its log exists: the first prompt creates the log under
    /// `id` (one [`SessionStore::new_id`] made), so a front end can hand the id out at
    /// once and resume by it later. [`Self::session_id`] reports it from now on.
    pub fn preset_session_id(&mut self, id: String) {
        if bridge::recorder(&self.slot).is_none() {
            self.preset_id = Some(id);
        }
    }

    /// The provider's prompt cache key follows the current session (OpenAI's
    /// `prompt_cache_key`: the session id; none before the first prompt creates it).
    fn key_cache_to_session(&self) {
        let key = bridge::recorder(&self.slot)
            .filter(|_| self.settings.prompt_cache_key_by_session)
            .map(|r| r.id());
        self.worker.client().set_prompt_cache_key(key);
    }

    pub(crate) async fn new_session(&mut self) {
        self.discard_speculation();
        bridge::set_recorder(&self.slot, None);
        self.preset_id = None;
        self.key_cache_to_session();
        self.grants.clear();
        self.worker.set_history(Vec::new());
        let build = self.prompt_builder.clone();
        let prompt = tokio::task::spawn_blocking(move || build())
            .await
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "building the system prompt failed");
                String::new()
            });
        self.worker.set_system_prompt(Some(prompt));
        self.tokens.store(0, Ordering::Relaxed);
        self.cache = CacheSafeStore::default();
        self.send_history(Vec::new());
        self.alert(Level::Info, "new session");
        self.send_status();
    }

    pub(crate) fn list_sessions(&self) {
        let Some(store) = &self.store else {
            self.alert(Level::Warn, "no session store: set XDG_DATA_HOME or HOME");
            return;
        };
        match store.list() {
            Ok(metas) => {
                let here = self.workspace.root().display().to_string();
                let (mine, others): (Vec<_>, Vec<_>) =
                    metas.into_iter().partition(|m| m.workspace == here);
                let entries = mine
                    .into_iter()
                    .chain(others)
                    .take(30)
                    .map(|m| SessionEntry {
                        age: ago(m.created),
                        id: m.id,
                        title: m.title,
                        model: m.model,
                    })
                    .collect();
                self.send(EngineEvent::Sessions(entries));
            }
            Err(e) => self.alert(Level::Error, format!("cannot list sessions: {e}")),
        }
    }

    /// Continues an earlier session by id (`/resume`).
    pub(crate) async fn resume(&mut self, id: &str) {
        let Some(store) = &self.store else {
            self.alert(Level::Warn, "no session store: set XDG_DATA_HOME or HOME");
            return;
        };
        // This process holds the current session's lock: resuming it is a no-op, not a
        // second writer.
        if bridge::recorder(&self.slot).is_some_and(|r| r.id() == id) {
            self.alert(Level::Info, format!("session {id} is the current session"));
            return;
        }
        let loaded = store.load(id).map_err(|e| e.to_string());
        if let Err(e) = match loaded {
            Ok(loaded) => self.continue_loaded(loaded).await,
            Err(e) => Err(e),
        } {
            self.alert(Level::Error, format!("cannot resume: {e}"));
        }
    }

    /// Continues a loaded session: its history replaces the transcript. `Err` says why
    /// it could not be continued.
    pub async fn continue_loaded(&mut self, loaded: LoadedSession) -> Result<(), String> {
        let Some(store) = self.store.clone() else {
            return Err("no session store: set XDG_DATA_HOME or HOME".into());
        };
        let build = self.prompt_builder.clone();
        let reporter = Some(self.reporter());
        let recorded = (loaded.meta.provider.clone(), loaded.meta.model.clone());
        let turns = loaded.turns;
        let log = loaded.path.clone();
        // Opening the log (and, for an old session without a stored prompt, git): off the
        // runtime's threads.
        let opened = tokio::task::spawn_blocking(move || {
            session::continue_session(&store, loaded, || build(), reporter)
                .map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        match opened {
            Ok(opened) => {
                self.discard_speculation();
                self.grants.clear();
                self.tokens.store(0, Ordering::Relaxed);
                self.worker.set_history(opened.history.clone());
                self.worker.set_system_prompt(Some(opened.system_prompt));
                bridge::set_recorder(&self.slot, Some(opened.recorder));
                self.checkpoints.set_session(Some(&opened.meta.id), turns);
                self.key_cache_to_session();
                self.cache = CacheSafeStore::default();
                self.send_history(opened.history);
                self.replay_subagents(&log);
                for warning in opened.warnings {
                    self.alert(Level::Warn, warning);
                }
                let mut note =
                    format!("resumed session {} ({})", opened.meta.id, opened.meta.title);
                if recorded
                    != (
                        self.settings.provider.clone(),
                        self.worker.model().to_owned(),
                    )
                {
                    note.push_str(&format!(
                        "; it was recorded with {}/{}, it continues with {}/{}",
                        recorded.0,
                        recorded.1,
                        self.settings.provider,
                        self.worker.model()
                    ));
                }
                self.alert(Level::Info, note);
                self.send_status();
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// How long ago `created` (seconds since the epoch) was: `5m ago`.
pub fn ago(created: u64) -> String {
    let secs = saki_pod::store::now_secs().saturating_sub(created);
    match secs {
        0..=59 => format!("{secs}s ago"),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}
