//! Reading ahead in the interactive engine: after a completed turn, the suggestion and its
//! speculation run in the background; submitting the suggestion unchanged accepts it.
//!
//! A speculation is ready as soon as its own loop ends. The pipelined suggestion that
//! follows it is a request of its own: when it arrives before the accept, the accept
//! shows it at once; when the person accepts first, it is shown (and speculated) when it
//! arrives.

use crate::protocol::{
    EngineEvent, Level, NoSuggestion, SpecOutcome, SpecState, SpeculationEnded, TurnEnd,
};
use crate::Engine;
use saki_llm_client::CancellationToken;
use saki_llm_worker::hook::HookDecision;
use saki_llm_worker::Item;
use saki_read_ahead::{
    accept, suggestion_allowed, AcceptError, CacheSafeParams, NotApplied, ReadAheadStats,
    Speculation, SpeculationStatus, Speculator,
};
use saki_tools::ApprovalMode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// What reads ahead after a turn: at most one of each.
#[derive(Default)]
pub(crate) struct ReadAhead {
    /// The suggestion and its speculation.
    background: Option<Background>,
    /// A completed speculation waiting for its suggestion to be submitted.
    ready: Option<Speculation>,
    /// The next suggestion after the ready (or just accepted) speculation.
    pipeline: Option<Pipeline>,
    /// The pipelined suggestion (or why there is none), when it came before the accept.
    next: Option<Result<String, NoSuggestion>>,
    /// Speculations accepted and discarded, and the time the accepted ones saved.
    accepted: u32,
    discarded: u32,
    saved_ms: u64,
}

struct Background {
    cancel: CancellationToken,
    handle: JoinHandle<Option<Speculation>>,
    params: CacheSafeParams,
    /// Told the suggestion the UI put on screen: the speculation starts only then.
    shown: Option<oneshot::Sender<String>>,
    /// The speculation itself started (cancelling it then discards one).
    speculating: Arc<AtomicBool>,
    /// The suggestion it was told is on screen (what it speculates, once it started).
    shown_text: Option<String>,
}

struct Pipeline {
    cancel: CancellationToken,
    handle: JoinHandle<Result<String, NoSuggestion>>,
    /// Its speculation was accepted meanwhile: the suggestion is offered when it arrives.
    accepted: bool,
}

/// What finished in the background.
pub(crate) enum ReadAheadEvent {
    Speculated(Option<Box<Speculation>>, Box<CacheSafeParams>),
    Pipelined(Result<String, NoSuggestion>, bool),
}

impl ReadAhead {
    /// Waits for the background task or the pipelined suggestion, or forever when
    /// neither runs.
    pub(crate) async fn finished(&mut self) -> ReadAheadEvent {
        let ReadAhead {
            background,
            pipeline,
            ..
        } = self;
        let speculated = async {
            match background {
                Some(b) => (&mut b.handle).await.ok().flatten(),
                None => std::future::pending().await,
            }
        };
        let pipelined = async {
            match pipeline {
                Some(p) => (&mut p.handle)
                    .await
                    .unwrap_or_else(|e| Err(NoSuggestion::Failed(e.to_string()))),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            s = speculated => {
                let params = self.background.take().map(|b| b.params).unwrap_or_default();
                ReadAheadEvent::Speculated(s.map(Box::new), Box::new(params))
            }
            n = pipelined => {
                let accepted = self.pipeline.take().is_some_and(|p| p.accepted);
                ReadAheadEvent::Pipelined(n, accepted)
            }
        }
    }
}

impl Engine {
    /// The speculator for background work, with the current model, mode and workspace;
    /// its tokens count toward the turn `ahead` turns from now (1: the next one).
    fn speculator(&self, ahead: u64) -> Speculator {
        let mut speculator = Speculator::new(
            self.worker.client().clone(),
            self.settings.fast_model.clone(),
            self.mode.get(),
            self.workspace.clone(),
        );
        speculator.worker = self.worker.config().clone();
        speculator.batch_ids = self.worker.batch_ids();
        speculator.hooks = Some(self.hooks.clone());
        speculator.usage = self.turn_usage.toward(ahead);
        speculator.commands = self.commands.iter().map(|c| c.name.clone()).collect();
        speculator
    }

    /// What reading ahead did and cost so far.
    pub(crate) fn read_ahead_stats(&self) -> ReadAheadStats {
        ReadAheadStats {
            accepted: self.read_ahead.accepted,
            discarded: self.read_ahead.discarded,
            saved_ms: self.read_ahead.saved_ms,
            background: self.turn_usage.session_total(),
            main: *self
                .main_usage
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        }
    }

    /// Accepts the ready speculation when `text` is its suggestion; true when it did.
    pub(crate) async fn try_accept(&mut self, text: &str) -> bool {
        let matches = self
            .read_ahead
            .ready
            .as_ref()
            .is_some_and(|s| s.suggestion.trim() == text.trim());
        if !matches {
            return false;
        }
        let Some(speculation) = self.read_ahead.ready.take() else {
            return false;
        };
        // Like a typed prompt: UserPromptSubmit may refuse it, and then nothing of it is
        // applied or sent.
        if let HookDecision::Block(reason) = self.hooks.prompt_submit(text).await {
            self.read_ahead.discarded += 1;
            speculation.abort();
            self.send(EngineEvent::Speculation(SpecState::Idle));
            self.send(EngineEvent::TurnFinished {
                note: Some((
                    Level::Warn,
                    format!("the prompt was cancelled by a hook: {reason}"),
                )),
                end: TurnEnd::AcceptRefused { reason },
            });
            return true;
        }
        if let Err(message) = self.ensure_session(text) {
            self.alert(Level::Warn, message);
        }
        let undo_paths = self.undo_accept_begins(&speculation, text);
        let accepted = match accept(speculation, text) {
            Ok(accepted) => accepted,
            Err(AcceptError::Apply(not_applied)) => {
                self.read_ahead.discarded += 1;
                self.undo_accept_ends(&undo_paths, false).await;
                return self.not_applied(*not_applied);
            }
            Err(e) => {
                self.read_ahead.discarded += 1;
                self.undo_accept_ends(&undo_paths, false).await;
                self.send(EngineEvent::SpeculationEnded(SpeculationEnded {
                    suggestion: text.to_owned(),
                    outcome: SpecOutcome::Discarded,
                    reason: Some(e.to_string()),
                    boundary: None,
                    commands_run: 0,
                    items: 0,
                    files: Vec::new(),
                }));
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
        let answer = accepted.items.iter().rev().find_map(|i| match i {
            Item::AssistantText { text } => Some(text.clone()),
            _ => None,
        });
        self.worker.commit_items(accepted.items.clone());
        // Durable before the next suggestion's request carries them.
        self.worker.flushed().await;
        self.undo_accept_ends(&undo_paths, true).await;
        let (pipelined, no_next) = match self.read_ahead.next.take() {
            Some(Ok(text)) => (Some(text), None),
            Some(Err(why)) => (None, Some(why)),
            None => (None, None),
        };
        let saved_ms = u64::try_from(accepted.time_saved.as_millis()).unwrap_or(u64::MAX);
        self.read_ahead.accepted += 1;
        self.read_ahead.saved_ms = self.read_ahead.saved_ms.saturating_add(saved_ms);
        self.send(EngineEvent::Accepted {
            items: accepted.items,
            files,
            commands_run: accepted.commands_run,
            saved_ms,
            pipelined: pipelined.clone(),
        });
        self.send(EngineEvent::Speculation(SpecState::Idle));
        self.send_status();
        // The turn is over, as a typed one would be: Stop sees its answer.
        self.hooks.stop(answer.as_deref()).await;
        if self.suggestions {
            self.cache
                .save(&self.worker.build_request(), self.worker.history());
        }
        match (pipelined, &mut self.read_ahead.pipeline) {
            (Some(next), _) => self.start_background(Some(next)),
            // Still on its way: offered when it arrives.
            (None, Some(pipeline)) => pipeline.accepted = true,
            (None, None) if !self.suggestions => {}
            (None, None) => self.send(EngineEvent::NoSuggestion(no_next.unwrap_or_else(|| {
                NoSuggestion::Failed("no pipelined suggestion was asked for".into())
            }))),
        }
        true
    }

    /// An accept whose files could not all be applied. The prompt does not run: the
    /// person is told what stood in the way and where the speculation's files are kept,
    /// and decides. When nothing was changed, sending the prompt again runs it as a
    /// normal turn on the files as they are; when files could not be put back, they are
    /// named (the tree is half changed).
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
        let left_changed: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
        let note = if left.is_empty() {
            (
                Level::Warn,
                format!(
                    "{reason}; the prompt was not run: send it again (↑, Enter) to run it as a \
                     normal turn on the files as they are now"
                ),
            )
        } else {
            (
                Level::Error,
                format!(
                    "{reason}; these files hold the speculation's version and could not be \
                     restored: {}; the prompt was not run",
                    left_changed.join(", ")
                ),
            )
        };
        self.send(EngineEvent::TurnFinished {
            note: Some(note),
            end: TurnEnd::NotApplied {
                reason,
                left_changed,
            },
        });
        true
    }

    /// The UI shows `text`: the waiting suggestion, if it is that one, is speculated now.
    pub(crate) fn suggestion_shown(&mut self, text: String) {
        let Some(background) = self.read_ahead.background.as_mut() else {
            return;
        };
        if let Some(shown) = background.shown.take() {
            background.shown_text = Some(text.clone());
            let _ = shown.send(text);
        }
    }

    /// The person sent the suggestion whose speculation is still running: it goes on as
    /// this turn instead of starting over, and its end decides (ready: the submit accepts
    /// it; at a boundary: the prompt runs as usual). `None`: nothing ran, or the submit
    /// goes on; `Some(quit)`: the person cancelled (the turn ends cancelled) or quit.
    pub(crate) async fn await_speculation(
        &mut self,
        text: &str,
        actions: &mut tokio::sync::mpsc::UnboundedReceiver<crate::Action>,
    ) -> Option<bool> {
        // Shown is enough: its speculation may not have started yet, and will.
        let running = self
            .read_ahead
            .background
            .as_ref()
            .is_some_and(|b| b.shown_text.as_deref().map(str::trim) == Some(text.trim()));
        if !running {
            return None;
        }
        let Background {
            cancel,
            handle,
            params,
            ..
        } = self.read_ahead.background.take()?;
        let (finished, interrupt) = Self::listening(
            actions,
            &mut self.pending,
            &self.mode,
            &self.ui,
            &cancel,
            handle,
        )
        .await;
        self.on_speculation(finished.ok().flatten(), params);
        match interrupt {
            None => None,
            Some(crate::Interrupt::Quit) => Some(true),
            Some(crate::Interrupt::Cancel) => {
                self.send(EngineEvent::TurnFinished {
                    note: Some((Level::Info, "cancelled".into())),
                    end: TurnEnd::Turn(Err(saki_llm_client::ClientError::Cancelled)),
                });
                Some(false)
            }
        }
    }

    /// After a completed turn: predict the next prompt (or take the pipelined one), show
    /// it, and speculate it in an overlay once the person sees it (a suggestion that never
    /// shows, e.g. one that arrives while they type, is not speculated).
    pub(crate) fn start_background(&mut self, known: Option<String>) {
        if !self.suggestions {
            return;
        }
        let plan = self.mode.get() == ApprovalMode::Plan;
        if let Err(reason) = suggestion_allowed(self.worker.history(), true, plan) {
            tracing::debug!(%reason, "no suggestion");
            self.send(EngineEvent::NoSuggestion(NoSuggestion::Suppressed(reason)));
            return;
        }
        let Some(params) = self.cache.get().cloned() else {
            self.send(EngineEvent::NoSuggestion(NoSuggestion::Failed(
                "no completed turn to follow".into(),
            )));
            return;
        };
        // The suggestion and its speculation prepare the next turn.
        let speculator = self.speculator(1);
        let commands = self.commands.clone();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let ui = self.ui.clone();
        let snapshot = params.clone();
        let (shown, seen) = oneshot::channel::<String>();
        let speculating = Arc::new(AtomicBool::new(false));
        let started = speculating.clone();
        let handle = tokio::spawn(async move {
            let text = match known {
                Some(text) => text,
                None => match speculator.suggest(&params, token.clone()).await {
                    Ok(Ok(text)) => {
                        let _ = ui.send(EngineEvent::Suggestion(text.clone()));
                        text
                    }
                    Ok(Err(reason)) => {
                        tracing::debug!(%reason, "suggestion suppressed");
                        let _ =
                            ui.send(EngineEvent::NoSuggestion(NoSuggestion::Suppressed(reason)));
                        return None;
                    }
                    Err(e) => {
                        tracing::info!(error = %e, "suggestion failed");
                        let _ = ui.send(EngineEvent::NoSuggestion(NoSuggestion::Failed(
                            e.to_string(),
                        )));
                        return None;
                    }
                },
            };
            match seen.await {
                Ok(seen) if seen.trim() == text.trim() => {}
                _ => {
                    tracing::debug!("the suggestion was not shown; not speculated");
                    return None;
                }
            }
            // A custom command runs as its prompt; one with its own model or mode is not
            // run ahead (a speculation runs on the session's).
            let expanded = crate::commands::expand(&commands, &text);
            if expanded.overrides() {
                return None;
            }
            started.store(true, Ordering::Relaxed);
            let _ = ui.send(EngineEvent::Speculation(SpecState::Running));
            Some(speculator.run(&params, &expanded.text, token).await)
        });
        self.read_ahead.background = Some(Background {
            cancel,
            handle,
            params: snapshot,
            shown: Some(shown),
            speculating,
            shown_text: None,
        });
    }

    /// Something in the background finished.
    pub(crate) fn on_read_ahead(&mut self, event: ReadAheadEvent) {
        match event {
            ReadAheadEvent::Speculated(finished, params) => {
                self.on_speculation(finished.map(|s| *s), *params)
            }
            ReadAheadEvent::Pipelined(next, accepted) => match (next, accepted) {
                (next, false) => self.read_ahead.next = Some(next),
                (Ok(text), true) => {
                    self.send(EngineEvent::Suggestion(text.clone()));
                    self.start_background(Some(text));
                }
                (Err(why), true) => self.send(EngineEvent::NoSuggestion(why)),
            },
        }
    }

    fn on_speculation(&mut self, finished: Option<Speculation>, params: CacheSafeParams) {
        let Some(speculation) = finished else {
            return;
        };
        let (state, outcome) = match speculation.status {
            SpeculationStatus::Completed => (SpecState::Ready, SpecOutcome::Completed),
            SpeculationStatus::Boundary => (SpecState::Boundary, SpecOutcome::Boundary),
            _ => (SpecState::Idle, SpecOutcome::Aborted),
        };
        self.send(EngineEvent::SpeculationEnded(SpeculationEnded {
            suggestion: speculation.suggestion.clone(),
            outcome,
            reason: speculation.reason.clone(),
            boundary: speculation.boundary.map(|b| b.as_str()),
            commands_run: speculation.commands_run,
            items: speculation.items.len(),
            files: speculation
                .written_files()
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        }));
        self.send(EngineEvent::Speculation(state));
        if state != SpecState::Ready {
            self.read_ahead.discarded += 1;
            if let Some(reason) = &speculation.reason {
                tracing::debug!(%reason, "speculation stopped");
            }
            speculation.abort();
            return;
        }
        if !self.suggestions {
            // Reading ahead was turned off meanwhile: no next suggestion.
            self.read_ahead.ready = Some(speculation);
            return;
        }
        // Ready now; the next suggestion is asked for beside it, for the turn after the
        // accept.
        let speculator = self.speculator(2);
        let items = speculation.items.clone();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let handle = tokio::spawn(async move {
            match speculator.pipelined(&params, &items, token).await {
                Ok(Ok(text)) => Ok(text),
                Ok(Err(reason)) => {
                    tracing::debug!(%reason, "pipelined suggestion suppressed");
                    Err(NoSuggestion::Suppressed(reason))
                }
                Err(e) => {
                    tracing::debug!(error = %e, "pipelined suggestion failed");
                    Err(NoSuggestion::Failed(e.to_string()))
                }
            }
        });
        self.read_ahead.ready = Some(speculation);
        self.read_ahead.pipeline = Some(Pipeline {
            cancel,
            handle,
            accepted: false,
        });
    }

    /// Aborts the background work and drops any finished speculation with its overlay.
    pub(crate) fn discard_speculation(&mut self) {
        if let Some(background) = self.read_ahead.background.take() {
            if background.speculating.load(Ordering::Relaxed) {
                self.read_ahead.discarded += 1;
            }
            background.cancel.cancel();
            // The task ends soon; its speculation (if any) cleans up when dropped below.
            tokio::spawn(async move {
                if let Ok(Some(speculation)) = background.handle.await {
                    speculation.abort();
                }
            });
        }
        if let Some(pipeline) = self.read_ahead.pipeline.take() {
            pipeline.cancel.cancel();
        }
        self.read_ahead.next = None;
        if let Some(speculation) = self.read_ahead.ready.take() {
            self.read_ahead.discarded += 1;
            speculation.abort();
        }
        if self.suggestions {
            self.send(EngineEvent::Speculation(SpecState::Idle));
        }
    }
}
