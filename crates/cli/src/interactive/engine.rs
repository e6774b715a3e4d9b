//! The engine behind the interactive UI: it owns the Worker and carries out the
//! person's actions, one at a time, reporting everything as `EngineEvent`s. While a
//! turn runs it still listens, so Esc cancels it and Shift+Tab changes the mode.
//! After a completed turn it predicts the next prompt and speculates it in the
//! background; submitting that prediction unchanged accepts the speculation.

use super::bridge::{self, RecorderSlot, UiSender};
use super::Setup;
use crate::config::Resolved;
use crate::exec::ProviderArgs;
use crate::setup;
use saki_followup::{CacheSafeStore, ReadAheadStats};
use saki_llm_client::CancellationToken;
use saki_llm_worker::BackgroundUsage;
use saki_llm_worker::{CompactionTrigger, TurnOutcome, TurnStatus, Worker};
use saki_pod::{parse_prompt, FsView, PodInterceptor, SessionStore};
use saki_tools::sandbox::{SandboxMode, SandboxStatus};
use saki_tools::{SessionGrants, SharedMode, Workspace};
use saki_tui::{Action, EngineEvent, Level, Status};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

#[path = "ahead.rs"]
mod ahead;
use ahead::Ahead;

pub struct Engine {
    pub(super) worker: Worker,
    pub(super) ui: UiSender,
    pub(super) workspace: Arc<Workspace>,
    pub(super) args: ProviderArgs,
    pub(super) resolved: Resolved,
    pub(super) hooks: saki_llm_worker::hook::Hooks,
    pub(super) pod: Arc<PodInterceptor>,
    pub(super) mode: SharedMode,
    pub(super) grants: Arc<SessionGrants>,
    pub(super) slot: RecorderSlot,
    pub(super) store: Option<SessionStore>,
    pub(super) tokens: Arc<AtomicU64>,
    pub(super) suggestions: bool,
    pub(super) sandbox: SandboxStatus,
    pub(super) cache: CacheSafeStore,
    /// Background tokens, shared with the compactor and every speculator.
    pub(super) spent: BackgroundUsage,
    pub(super) main_usage: bridge::MainUsage,
    /// Suggestion, speculation and pipelined suggestion (`ahead.rs`).
    ahead: Ahead,
    /// The local server's prompt cache being filled with the base prompt (see
    /// `prewarm`); dropped, and so cancelled, at the first submit.
    prewarm: Option<super::prewarm::Prewarm>,
}

/// What the action loop does while something long runs.
enum Interrupt {
    Cancel,
    Quit,
}

impl Engine {
    pub(super) fn new(setup: Setup) -> Self {
        let Setup {
            worker,
            ui,
            workspace,
            args,
            resolved,
            hooks,
            pod,
            mode,
            grants,
            slot,
            store,
            tokens,
            suggestions,
            sandbox,
            spent,
            main_usage,
        } = setup;
        Self {
            worker,
            ui,
            workspace,
            args,
            resolved,
            hooks,
            pod,
            mode,
            grants,
            slot,
            store,
            tokens,
            suggestions,
            sandbox,
            cache: CacheSafeStore::default(),
            spent,
            main_usage,
            ahead: Ahead::default(),
            prewarm: None,
        }
    }

    pub(super) fn send(&self, event: EngineEvent) {
        let _ = self.ui.send(event);
    }

    pub(super) fn alert(&self, level: Level, message: impl Into<String>) {
        self.send(EngineEvent::Alert {
            level,
            message: message.into(),
        });
    }

    pub fn status(&self) -> Status {
        Status {
            provider: self.resolved.provider.clone(),
            model: self.worker.model().to_owned(),
            // The model reading ahead, when it is not the session's.
            fast_model: Some(self.resolved.read_ahead_model.clone())
                .filter(|m| *m != self.resolved.model),
            context_window: self.resolved.limits.context_window,
            tokens_used: self.tokens.load(Ordering::Relaxed),
            approval: Some(self.mode.get()),
            session_id: bridge::recorder(&self.slot).map(|r| r.id()),
            sandbox: Some(self.sandbox.label()),
            sandboxed: self.sandbox.enforced || self.sandbox.mode == SandboxMode::Off,
        }
    }

    pub(super) fn send_status(&self) {
        self.send(EngineEvent::Status(self.status()));
    }

    /// Carries out actions until the person quits or the UI goes away; returns what
    /// reading ahead did and cost, for the line saki prints at exit.
    pub async fn run(mut self, mut actions: UnboundedReceiver<Action>) -> ReadAheadStats {
        // Only servers known to keep a prompt cache (llama.cpp, Ollama), on this machine.
        if self.resolved.prewarm
            && self.resolved.server.is_some()
            && super::prewarm::is_local(&self.resolved.base_url)
        {
            self.prewarm = Some(super::prewarm::start(&self.worker));
        }
        loop {
            let action = tokio::select! {
                action = actions.recv() => action,
                finished = self.ahead.finished() => {
                    self.on_ahead(finished);
                    continue;
                }
            };
            let Some(action) = action else { break };
            let quit = match action {
                Action::Submit { text } => {
                    self.prewarm = None;
                    self.submit(text, &mut actions).await
                }
                Action::Compress => self.compress(&mut actions).await,
                Action::SetModel { model, fast } => {
                    self.set_model(model, fast);
                    false
                }
                Action::SetApproval(mode) => {
                    // A speculation ran under the old mode's gate: its edits may not be
                    // allowed under the new one.
                    if mode != self.mode.get() {
                        self.discard_speculation();
                    }
                    self.mode.set(mode);
                    self.send_status();
                    false
                }
                Action::NewSession => {
                    self.new_session().await;
                    false
                }
                Action::ListSessions => {
                    self.list_sessions();
                    false
                }
                Action::Resume { id } => {
                    self.resume(&id).await;
                    false
                }
                Action::Dismiss => {
                    self.discard_speculation();
                    false
                }
                Action::SuggestionShown { text } => {
                    self.suggestion_shown(text);
                    false
                }
                Action::Stats => {
                    self.send(EngineEvent::Stats(self.read_ahead_stats()));
                    false
                }
                Action::Cancel => false,
                Action::Quit => true,
            };
            if quit {
                break;
            }
        }
        self.discard_speculation();
        self.read_ahead_stats()
    }

    /// Runs `work` while still answering actions: Cancel cancels `cancel`, Quit cancels
    /// and reports it, mode changes apply at once, anything else waits its turn.
    async fn listening<T>(
        actions: &mut UnboundedReceiver<Action>,
        mode: &SharedMode,
        ui: &UiSender,
        cancel: &CancellationToken,
        work: impl Future<Output = T>,
    ) -> (T, Option<Interrupt>) {
        tokio::pin!(work);
        let mut interrupt = None;
        loop {
            tokio::select! {
                out = &mut work => return (out, interrupt),
                action = actions.recv() => match action {
                    Some(Action::Cancel) => {
                        cancel.cancel();
                        interrupt.get_or_insert(Interrupt::Cancel);
                    }
                    Some(Action::Quit) | None => {
                        cancel.cancel();
                        interrupt = Some(Interrupt::Quit);
                    }
                    Some(Action::SetApproval(m)) => mode.set(m),
                    Some(Action::Dismiss | Action::SuggestionShown { .. }) => {}
                    Some(other) => {
                        tracing::debug!(?other, "action ignored while busy");
                        let _ = ui.send(EngineEvent::Alert {
                            level: Level::Info,
                            message: "busy: that waits until the turn is over (Esc cancels it)".into(),
                        });
                    }
                },
            }
        }
    }

    /// Returns true when the person quit meanwhile.
    async fn submit(&mut self, text: String, actions: &mut UnboundedReceiver<Action>) -> bool {
        if self.try_accept(&text).await {
            return false;
        }
        self.discard_speculation();
        if let Err(message) = self.ensure_session(&text) {
            self.alert(Level::Warn, message);
        }
        let (user_text, files, alerts) = FsView::new(self.workspace.clone())
            .prepare(&parse_prompt(&text), self.resolved.tool_output_max_bytes);
        for alert in alerts {
            self.alert(level_of(alert.level), alert.message);
        }
        self.pod.stash(files);
        self.send(EngineEvent::TurnStarted);
        self.send_status();
        let cancel = CancellationToken::new();
        let turn = self.worker.run_turn(user_text, cancel.clone());
        let (outcome, interrupt) =
            Self::listening(actions, &self.mode, &self.ui, &cancel, turn).await;
        let completed = matches!(
            &outcome,
            Ok(TurnOutcome {
                status: TurnStatus::Completed { .. },
                ..
            })
        );
        self.send(EngineEvent::TurnFinished {
            note: turn_note(&outcome),
        });
        self.send_status();
        if matches!(interrupt, Some(Interrupt::Quit)) {
            return true;
        }
        if completed {
            self.cache
                .save(&self.worker.build_request(), self.worker.history());
            self.start_background(None);
        }
        false
    }

    async fn compress(&mut self, actions: &mut UnboundedReceiver<Action>) -> bool {
        self.discard_speculation();
        self.send(EngineEvent::TurnStarted);
        let cancel = CancellationToken::new();
        let work = self.worker.compact(CompactionTrigger::Manual, &cancel);
        let (result, interrupt) =
            Self::listening(actions, &self.mode, &self.ui, &cancel, work).await;
        let note = match result {
            None => Some((
                Level::Info,
                "compaction is not available for this model".into(),
            )),
            Some(_) => None,
        };
        self.send(EngineEvent::TurnFinished { note });
        self.send_status();
        matches!(interrupt, Some(Interrupt::Quit))
    }

    fn set_model(&mut self, model: String, fast: bool) {
        let mut args = self.args.clone();
        // The provider stays: a model name never moves the session to another server.
        args.provider = Some(self.resolved.provider.clone());
        if fast {
            args.fast_model = Some(model.clone());
        } else {
            args.model = Some(model.clone());
        }
        match setup::resolve(self.workspace.root(), &args, None) {
            Ok((resolved, _)) => {
                self.worker.set_model(resolved.model.clone());
                self.worker.set_context_guard(Arc::new(
                    setup::compactor(
                        &resolved,
                        self.worker.client().clone(),
                        &self.hooks,
                        self.workspace.clone(),
                    )
                    .with_background_usage(self.spent.clone()),
                ));
                self.args = args;
                self.resolved = resolved;
                self.discard_speculation();
                let which = if fast { "fast model" } else { "model" };
                self.alert(Level::Info, format!("{which}: {model}"));
                self.send_status();
            }
            Err(e) => self.alert(Level::Error, format!("cannot switch to {model}: {e}")),
        }
    }
}

fn level_of(level: saki_pod::AlertLevel) -> Level {
    match level {
        saki_pod::AlertLevel::Info => Level::Info,
        saki_pod::AlertLevel::Warn => Level::Warn,
        saki_pod::AlertLevel::Error => Level::Error,
    }
}

/// How a turn ended, when it did not simply complete.
fn turn_note(
    outcome: &Result<TurnOutcome, saki_llm_client::ClientError>,
) -> Option<(Level, String)> {
    let outcome = match outcome {
        Ok(o) => o,
        Err(saki_llm_client::ClientError::Cancelled) => {
            return Some((Level::Info, "cancelled".into()))
        }
        Err(e) => return Some((Level::Error, e.to_string())),
    };
    match &outcome.status {
        TurnStatus::Completed { .. } => None,
        TurnStatus::Incomplete => Some((
            Level::Warn,
            "the provider ended the stream without a finish reason; the answer may be incomplete"
                .into(),
        )),
        TurnStatus::MaxTurns => Some((
            Level::Warn,
            format!(
                "stopped after {} model requests (--max-turns); the task may be unfinished",
                outcome.requests
            ),
        )),
        TurnStatus::PromptCancelled { reason } => Some((
            Level::Warn,
            format!("the prompt was cancelled by a hook: {reason}"),
        )),
        TurnStatus::Cancelled => Some((Level::Info, "cancelled".into())),
        TurnStatus::Failed { error } => Some((
            Level::Error,
            match &error.code {
                Some(code) => format!("the provider reported an error ({code}): {}", error.message),
                None => format!("the provider reported an error: {}", error.message),
            },
        )),
    }
}
