//! Reading ahead in the interactive engine: after a completed turn, the suggestion and its
//! speculation run in the background; submitting the suggestion unchanged accepts it.

use super::Engine;
use saki_followup::{
    accept, generate_suggestion, suggestion_allowed, AcceptError, NotApplied, Speculation,
    SpeculationStatus, Speculator, SUGGESTION_PROMPT,
};
use saki_llm_client::CancellationToken;
use saki_tools::ApprovalMode;
use saki_tui::{EngineEvent, Level, SpecState};
use tokio::task::JoinHandle;

/// The suggestion and speculation running in the background after a turn.
pub(super) struct Background {
    pub(super) cancel: CancellationToken,
    pub(super) handle: JoinHandle<Option<Speculation>>,
}

impl Engine {
    /// Accepts the ready speculation when `text` is its suggestion; true when it did.
    pub(super) async fn try_accept(&mut self, text: &str) -> bool {
        let matches = self
            .ready
            .as_ref()
            .is_some_and(|s| s.suggestion.trim() == text.trim());
        if !matches {
            return false;
        }
        let Some(speculation) = self.ready.take() else {
            return false;
        };
        if let Err(message) = self.ensure_session(text) {
            self.alert(Level::Warn, message);
        }
        let accepted = match accept(speculation, text) {
            Ok(accepted) => accepted,
            Err(AcceptError::Apply(not_applied)) => return self.not_applied(*not_applied),
            Err(e) => {
                self.alert(
                    Level::Info,
                    format!("the speculation was discarded ({e}); running it now"),
                );
                return false;
            }
        };
        let files = accepted
            .applied
            .applied()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        self.worker.commit_items(accepted.items.clone());
        // Durable before the next suggestion's request carries them.
        self.worker.flushed().await;
        let pipelined = accepted.pipelined.and_then(Result::ok);
        self.send(EngineEvent::Accepted {
            items: accepted.items,
            files,
            saved_ms: u64::try_from(accepted.time_saved.as_millis()).unwrap_or(u64::MAX),
            pipelined: pipelined.clone(),
        });
        self.send(EngineEvent::Speculation(SpecState::Idle));
        self.send_status();
        self.cache
            .save(&self.worker.build_request(), self.worker.history());
        if let Some(next) = pipelined {
            self.start_background(Some(next));
        }
        true
    }

    /// An accept whose files could not all be applied: the overlay is kept (its path
    /// told); when nothing was changed the prompt runs as a normal turn (false), when
    /// files could not be put back it does not run on the half-changed tree (true).
    fn not_applied(&mut self, not_applied: NotApplied) -> bool {
        let NotApplied {
            report,
            speculation,
        } = not_applied;
        let kept = speculation
            .keep()
            .map(|dir| format!("; its files are kept in {}", dir.display()))
            .unwrap_or_default();
        let reason = format!(
            "the speculation could not be applied: {}{kept}",
            report.describe()
        );
        self.send(EngineEvent::Speculation(SpecState::Idle));
        let left = report.left_changed();
        if left.is_empty() {
            self.alert(Level::Warn, format!("{reason}; running it now"));
            return false;
        }
        let left: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
        self.send(EngineEvent::TurnFinished {
            note: Some((
                Level::Error,
                format!(
                    "{reason}; these files hold the speculation's version and could not be \
                     restored: {}; the prompt was not run",
                    left.join(", ")
                ),
            )),
        });
        true
    }

    /// After a completed turn: predict the next prompt (or take the pipelined one), show
    /// it, and speculate it in an overlay.
    pub(super) fn start_background(&mut self, known: Option<String>) {
        if !self.suggestions {
            return;
        }
        let plan = self.mode.get() == ApprovalMode::Plan;
        if let Err(reason) = suggestion_allowed(self.worker.history(), true, plan) {
            tracing::debug!(%reason, "no suggestion");
            return;
        }
        let Some(params) = self.cache.get().cloned() else {
            return;
        };
        let model = self
            .resolved
            .fast_model
            .clone()
            .unwrap_or_else(|| self.worker.model().to_owned());
        let mut speculator = Speculator::new(
            self.worker.client().clone(),
            model.clone(),
            self.mode.get(),
            self.workspace.clone(),
        );
        speculator.tool_call_recovery = self.resolved.tool_call_recovery;
        speculator.batch_ids = self.worker.batch_ids();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let ui = self.ui.clone();
        let handle = tokio::spawn(async move {
            let text = match known {
                Some(text) => text,
                None => {
                    let client = &speculator.client;
                    match generate_suggestion(
                        client,
                        &params,
                        &model,
                        SUGGESTION_PROMPT,
                        token.clone(),
                    )
                    .await
                    {
                        Ok(Ok(text)) => {
                            let _ = ui.send(EngineEvent::Suggestion(text.clone()));
                            text
                        }
                        Ok(Err(reason)) => {
                            tracing::debug!(%reason, "suggestion suppressed");
                            return None;
                        }
                        Err(e) => {
                            tracing::info!(error = %e, "suggestion failed");
                            return None;
                        }
                    }
                }
            };
            let _ = ui.send(EngineEvent::Speculation(SpecState::Running));
            Some(speculator.run(&params, &text, token).await)
        });
        self.background = Some(Background { cancel, handle });
    }

    pub(super) fn on_speculation(&mut self, finished: Option<Speculation>) {
        let Some(speculation) = finished else {
            return;
        };
        let state = match speculation.status {
            SpeculationStatus::Completed => SpecState::Ready,
            SpeculationStatus::Boundary => SpecState::Boundary,
            _ => SpecState::Idle,
        };
        self.send(EngineEvent::Speculation(state));
        if state == SpecState::Ready {
            self.ready = Some(speculation);
        } else {
            if let Some(reason) = &speculation.reason {
                tracing::debug!(%reason, "speculation stopped");
            }
            speculation.abort();
        }
    }

    /// Aborts the background work and drops any finished speculation with its overlay.
    pub(in crate::interactive) fn discard_speculation(&mut self) {
        if let Some(background) = self.background.take() {
            background.cancel.cancel();
            // The task ends soon; its speculation (if any) cleans up when dropped below.
            tokio::spawn(async move {
                if let Ok(Some(speculation)) = background.handle.await {
                    speculation.abort();
                }
            });
        }
        if let Some(speculation) = self.ready.take() {
            speculation.abort();
        }
        if self.suggestions {
            self.send(EngineEvent::Speculation(SpecState::Idle));
        }
    }
}

/// Waits for the background task, or forever when there is none.
pub(super) async fn background_done(background: &mut Option<Background>) -> Option<Speculation> {
    match background {
        Some(b) => (&mut b.handle).await.ok().flatten(),
        None => std::future::pending().await,
    }
}
