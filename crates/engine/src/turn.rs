//! The person's turns: a prompt (with its `@path` references), a compaction asked for by
//! hand, and a change of model.

use crate::protocol::{Attachment, EngineEvent, Level, TurnEnd};
use crate::{compactor, Engine, Interrupt};
use saki_llm_client::{CancellationToken, ClientError};
use saki_llm_worker::{CompactionTrigger, TurnOutcome, TurnStatus};
use saki_pod::{parse_prompt, FsView};
use saki_tools::Workspace;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::Action;

impl Engine {
    /// Runs `text` as a turn, or accepts the ready speculation when `text` is its
    /// suggestion. Returns true when the front end quit meanwhile.
    pub(crate) async fn submit(
        &mut self,
        text: String,
        attachments: Vec<Attachment>,
        actions: &mut UnboundedReceiver<Action>,
    ) -> bool {
        let expanded = crate::commands::expand(&self.commands, &text);
        if let Some(warning) = &expanded.warning {
            self.alert(Level::Warn, warning.clone());
        }
        // The suggestion sent while its speculation runs: that speculation is this turn.
        if attachments.is_empty() && !expanded.overrides() {
            if let Some(quit) = self.await_speculation(&expanded.text, actions).await {
                return quit;
            }
        }
        // A prompt with attachments is not the suggestion, whatever its text says.
        if attachments.is_empty() && !expanded.overrides() && self.try_accept(&expanded.text).await
        {
            return false;
        }
        self.discard_speculation();
        if let Err(message) = self.ensure_session(&text) {
            self.alert(Level::Warn, message);
        }
        self.undo_follow_session();
        // `@path` references: resolved now, stashed for the pod interceptor, which puts
        // them right after the user item (or drops them with a cancelled prompt).
        let view = FsView::new(self.workspace.clone())
            .with_vision(self.worker.model(), self.worker.vision());
        let (user_text, mut files, alerts) = view
            .prepare(
                &parse_prompt(&expanded.text),
                self.settings.tool_output_max_bytes,
            )
            .await;
        for alert in alerts {
            self.send(alert.into());
        }
        for attachment in attachments {
            let attached = match &attachment {
                Attachment::Text { path, text } => {
                    view.attach_text(path, text, self.settings.tool_output_max_bytes)
                }
                Attachment::Image { name, data } => view.attach_image(name, data),
            };
            match attached {
                Ok(item) => files.push(item),
                Err(e) => self.alert(Level::Warn, format!("an attachment was not attached: {e}")),
            }
        }
        self.pod.stash(files);
        self.send(EngineEvent::TurnStarted);
        self.send_status();
        // A command's model and mode hold for its own turn only.
        let mode_before = expanded.approval.map(|mode| {
            let before = self.mode.get();
            self.mode.set(mode);
            before
        });
        let model_before = expanded.model.clone().map(|model| {
            let before = self.worker.model().to_owned();
            self.worker.set_model(model);
            before
        });
        let cancel = CancellationToken::new();
        let turn = self.worker.run_turn(user_text, cancel.clone());
        let (outcome, interrupt) = Self::listening(
            actions,
            &mut self.pending,
            &self.mode,
            &self.ui,
            &cancel,
            turn,
        )
        .await;
        let outcome = self.with_subagent_usage(outcome);
        if let Some(mode) = mode_before {
            self.mode.set(mode);
        }
        if let Some(model) = model_before {
            self.worker.set_model(model);
        }
        let completed = matches!(
            &outcome,
            Ok(TurnOutcome {
                status: TurnStatus::Completed { .. },
                ..
            })
        );
        self.undo_turn_ended().await;
        self.send(EngineEvent::TurnFinished {
            note: turn_note(&outcome),
            end: TurnEnd::Turn(outcome),
        });
        self.send_status();
        if matches!(interrupt, Some(Interrupt::Quit)) {
            return true;
        }
        // The snapshot a suggestion forks from: a copy of the whole history, only worth
        // taking when reading ahead is on.
        if completed && self.suggestions {
            self.cache
                .save(&self.worker.build_request(), self.worker.history());
            self.start_background(None);
        }
        false
    }

    pub(crate) async fn compress(&mut self, actions: &mut UnboundedReceiver<Action>) -> bool {
        self.discard_speculation();
        self.send(EngineEvent::TurnStarted);
        let cancel = CancellationToken::new();
        let work = self.worker.compact(CompactionTrigger::Manual, &cancel);
        let (result, interrupt) = Self::listening(
            actions,
            &mut self.pending,
            &self.mode,
            &self.ui,
            &cancel,
            work,
        )
        .await;
        let note = match result {
            None => Some((
                Level::Info,
                "compaction is not available for this model".into(),
            )),
            Some(_) => None,
        };
        self.send(EngineEvent::TurnFinished {
            note,
            end: TurnEnd::Compacted,
        });
        self.send_status();
        matches!(interrupt, Some(Interrupt::Quit))
    }

    pub(crate) fn set_model(&mut self, model: String, fast: bool) {
        let Some(resolver) = self.resolver.clone() else {
            self.alert(Level::Warn, "this session cannot change its model");
            return;
        };
        let mut chosen = self.chosen.clone();
        if fast {
            chosen.1 = Some(model.clone());
        } else {
            chosen.0 = Some(model.clone());
        }
        match resolver.resolve(chosen.0.as_deref(), chosen.1.as_deref()) {
            Ok(settings) => {
                self.worker.switch_model(&settings.worker);
                self.worker.set_context_guard(Arc::new(compactor(
                    &settings,
                    &self.worker,
                    &self.hooks,
                    &self.workspace,
                    &self.spent,
                )));
                if let Some(subagents) = &self.subagents {
                    subagents.set_models(&settings.worker, &settings.fast_model);
                }
                self.chosen = chosen;
                self.settings = settings;
                self.discard_speculation();
                let which = if fast { "fast model" } else { "model" };
                self.alert(Level::Info, format!("{which}: {model}"));
                self.send_status();
            }
            Err(e) => self.alert(Level::Error, format!("cannot switch to {model}: {e}")),
        }
    }

    /// Asks every request for a final answer that is JSON matching `schema`, where the
    /// protocol has structured output (`saki exec --output-schema`).
    pub fn set_response_schema(&mut self, schema: Option<saki_llm_client::ResponseSchema>) {
        self.worker.set_response_schema(schema);
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }
}

/// How a turn ended, for people, when it did not simply complete.
pub fn turn_note(outcome: &Result<TurnOutcome, ClientError>) -> Option<(Level, String)> {
    match outcome {
        Ok(o) => outcome_note(o),
        Err(ClientError::Cancelled) => Some((Level::Info, "cancelled".into())),
        Err(e) => Some((Level::Error, e.to_string())),
    }
}

/// How a turn that ran ended, for people, when it did not simply complete.
pub fn outcome_note(outcome: &TurnOutcome) -> Option<(Level, String)> {
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
        TurnStatus::Stopped { reason } => Some((Level::Info, format!("stopped: {reason}"))),
        TurnStatus::Failed { error } => Some((
            Level::Error,
            match &error.code {
                Some(code) => format!("the provider reported an error ({code}): {}", error.message),
                None => format!("the provider reported an error: {}", error.message),
            },
        )),
    }
}
