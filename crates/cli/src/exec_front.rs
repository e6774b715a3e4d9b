//! `saki exec` as a front end of the engine: it renders the engine's events as plain text
//! or JSON Lines (docs/events.md) and, with `--follow-ups N`, plays the person who presses
//! Tab: up to N times it lets the engine predict the next prompt, speculate it, and
//! accepts it when the speculation completed; at a boundary (or when it stopped) the
//! suggestion runs as a normal turn under `--approval`.

use crate::exec::{failed_spent, finish_turn, report_alert};
use crate::exit::ExitCode;
use crate::last_message::LastMessage;
use crate::output::{emit, ItemScope, JsonItems, PlainPrinter};
use crate::output_schema::OutputSchema;
use saki_engine::{
    Action, EngineEvent, NoSuggestion, SpecOutcome, SpecState, SpeculationEnded, TurnEnd,
};
use saki_llm_client::{ClientError, UsageEvent};
use saki_llm_worker::{
    BackgroundUsage, Handler, Item, TextBlockKind, ThinkingBlockKind, TurnOutcome, TurnStatus,
};
use saki_pod::{Alert, AlertLevel};
use saki_tools::Approval;
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

/// Whether the run goes on after an event.
pub enum Next {
    Continue,
    Done(ExitCode),
}

pub struct ExecFront {
    pub json: bool,
    pub printer: PlainPrinter,
    pub items: JsonItems,
    text_scope: ItemScope,
    thinking_scope: ItemScope,
    /// Background tokens not reported yet (shared with the engine).
    pub background: BackgroundUsage,
    /// Follow-ups still to take, and the one running (for item ids).
    remaining: u32,
    step: u32,
    /// The suggestion being followed.
    suggestion: Option<String>,
    actions: UnboundedSender<Action>,
    /// `--output-schema`: the final answer is checked before the turn is reported.
    pub schema: Option<OutputSchema>,
    /// The run's last assistant message (`--output-last-message`).
    last: LastMessage,
    /// The final answer as JSON that validated (without a fence around it).
    checked: Option<String>,
}

impl ExecFront {
    pub fn new(
        json: bool,
        follow_ups: u32,
        background: BackgroundUsage,
        actions: UnboundedSender<Action>,
    ) -> Self {
        Self {
            json,
            printer: PlainPrinter::default(),
            items: JsonItems::default(),
            text_scope: ItemScope::default(),
            thinking_scope: ItemScope::default(),
            background,
            remaining: follow_ups,
            step: 0,
            suggestion: None,
            actions,
            schema: None,
            last: LastMessage::default(),
            checked: None,
        }
    }

    /// What `--output-last-message` writes: the answer that validated against
    /// `--output-schema`, else the last assistant message.
    pub fn final_answer(&self) -> String {
        self.checked
            .as_deref()
            .or(self.last.text())
            .unwrap_or_default()
            .to_owned()
    }

    /// With `--output-schema`, a turn that answered must have answered with JSON that
    /// validates; `Some` is the exit code when it did not (`turn.failed` is reported).
    fn check_answer(&mut self, result: &Result<TurnOutcome, ClientError>) -> Option<ExitCode> {
        let schema = self.schema.as_ref()?;
        let answered = matches!(
            result,
            Ok(TurnOutcome {
                status: TurnStatus::Completed { .. } | TurnStatus::Incomplete,
                ..
            })
        );
        if !answered {
            return None;
        }
        match schema.check(self.last.text().unwrap_or_default()) {
            Ok(json) => {
                self.checked = Some(json);
                None
            }
            Err(message) => {
                failed_spent(self.json, "output_schema", &message, Some(&self.background));
                Some(ExitCode::OutputSchema)
            }
        }
    }

    fn act(&self, action: Action) {
        let _ = self.actions.send(action);
    }

    /// A note on reading ahead: a JSON event, or a line on stderr.
    fn note(&self, event: serde_json::Value, line: String) {
        if self.json {
            emit(&event);
        } else {
            self.printer.finish_line();
            eprintln!("{}", saki_tools::sanitize::sanitize(&line));
        }
    }

    pub fn on_event(&mut self, event: EngineEvent) -> Next {
        match event {
            EngineEvent::Text(e) if self.json => {
                Handler::<TextBlockKind>::on_event(&mut self.items, &mut self.text_scope, &e)
            }
            EngineEvent::Text(e) => {
                Handler::<TextBlockKind>::on_event(&mut self.printer, &mut (), &e)
            }
            EngineEvent::Thinking(e) if self.json => Handler::<ThinkingBlockKind>::on_event(
                &mut self.items,
                &mut self.thinking_scope,
                &e,
            ),
            EngineEvent::Thinking(e) => {
                Handler::<ThinkingBlockKind>::on_event(&mut self.printer, &mut (), &e)
            }
            EngineEvent::Worker(e) => {
                self.last.observe(&e);
                if self.json {
                    self.items.worker_event(&e)
                } else {
                    self.printer.worker_event(&e)
                }
            }
            EngineEvent::Alert { level, message } => {
                let level = match level {
                    saki_engine::Level::Info => AlertLevel::Info,
                    saki_engine::Level::Warn => AlertLevel::Warn,
                    saki_engine::Level::Error => AlertLevel::Error,
                };
                self.printer.finish_line();
                report_alert(&Alert { level, message }, self.json);
            }
            // `exec` answers approvals itself (it cannot ask); one that reaches it is denied.
            EngineEvent::Approval(request) => {
                let _ = request.reply.send(Approval::Deny(
                    "saki exec cannot ask for approval; pass --approval".into(),
                ));
            }
            EngineEvent::TurnFinished { note, end } => {
                self.printer.finish_line();
                return self.finished(end, note.map(|(_, text)| text));
            }
            EngineEvent::Suggestion(text) => self.follow(text),
            EngineEvent::NoSuggestion(why) => {
                let (event, line) = match why {
                    NoSuggestion::Suppressed(reason) => (
                        json!({"type": "suggestion", "text": null, "suppressed": reason.as_str()}),
                        format!("[suggestion] none ({reason})"),
                    ),
                    NoSuggestion::Failed(e) => (
                        json!({"type": "suggestion", "text": null, "error": e}),
                        format!("[suggestion] failed: {e}"),
                    ),
                };
                self.note(event, line);
                return Next::Done(ExitCode::Success);
            }
            EngineEvent::Speculation(SpecState::Running) => {
                let text = self.suggestion.clone().unwrap_or_default();
                self.note(
                    json!({"type": "speculation.started", "suggestion": text}),
                    "[speculation] started".into(),
                );
            }
            EngineEvent::SpeculationEnded(ended) => self.speculation_ended(ended),
            EngineEvent::Plan { plan, restored } => {
                // A resumed session without a plan has nothing to say.
                if !(restored && plan.is_empty()) {
                    self.printer.finish_line();
                    crate::output::plan(&plan, restored, self.json);
                }
            }
            EngineEvent::Accepted {
                items,
                files,
                commands_run,
                saved_ms,
                pipelined,
            } => return self.accepted(&items, &files, commands_run, saved_ms, pipelined),
            EngineEvent::Question(request) => {
                crate::delegation_output::question(request, self.json, &self.printer)
            }
            EngineEvent::Subagent(event) => {
                crate::delegation_output::subagent(&event, self.json, &self.printer)
            }
            EngineEvent::Status(_)
            | EngineEvent::Tokens(_)
            | EngineEvent::TurnStarted
            | EngineEvent::Speculation(_)
            | EngineEvent::History(_)
            | EngineEvent::Undone { .. }
            | EngineEvent::Turns(_)
            | EngineEvent::Rewound { .. }
            | EngineEvent::Sessions(_)
            | EngineEvent::Stats(_)
            | EngineEvent::Synced(_)
            | EngineEvent::Queued(_)
            | EngineEvent::Unqueued(_) => {}
        }
        Next::Continue
    }

    /// A turn ended: report it; then stop, or wait for the next suggestion.
    /// `note`: the engine's words for how the turn ended, when it did not simply complete.
    fn finished(&mut self, end: TurnEnd, note: Option<String>) -> Next {
        match end {
            TurnEnd::Turn(result) => {
                let completed = matches!(
                    &result,
                    Ok(TurnOutcome {
                        status: TurnStatus::Completed { .. },
                        ..
                    })
                );
                if let Some(code) = self.check_answer(&result) {
                    return Next::Done(code);
                }
                let code = finish_turn(result, self.json, &self.background);
                if code != ExitCode::Success || !completed || self.remaining == 0 {
                    return Next::Done(code);
                }
                Next::Continue
            }
            TurnEnd::AcceptRefused { .. } => {
                failed_spent(
                    self.json,
                    "prompt_cancelled",
                    &note.unwrap_or_default(),
                    Some(&self.background),
                );
                Next::Done(ExitCode::PromptCancelled)
            }
            TurnEnd::NotApplied {
                reason,
                left_changed,
            } => {
                let text = self.suggestion.clone().unwrap_or_default();
                if !left_changed.is_empty() {
                    // Half changed: running the prompt on top would build on it.
                    failed_spent(
                        self.json,
                        "apply_failed",
                        &format!(
                            "{reason}; these files hold the speculation's version and could not be restored: {}; not running the prompt",
                            left_changed.join(", ")
                        ),
                        Some(&self.background),
                    );
                    return Next::Done(ExitCode::Internal);
                }
                self.note(
                    json!({"type": "speculation.aborted", "suggestion": text, "reason": reason}),
                    format!("[speculation] not applied (nothing was changed): {reason}; running it as a normal turn"),
                );
                // The speculation is gone: the same prompt now runs as a normal turn.
                self.act(Action::Submit { text });
                Next::Continue
            }
            TurnEnd::Compacted => Next::Continue,
        }
    }

    /// A suggestion to follow: shown (so the engine speculates it).
    fn follow(&mut self, text: String) {
        self.note(
            json!({"type": "suggestion", "text": text}),
            format!("[suggestion] {text}"),
        );
        self.suggestion = Some(text.clone());
        if self.remaining <= 1 {
            // The last follow-up: nothing is to be suggested after it.
            self.act(Action::SetReadAhead(false));
        }
        self.act(Action::SuggestionShown { text });
    }

    fn speculation_ended(&mut self, ended: SpeculationEnded) {
        let SpeculationEnded {
            suggestion,
            outcome,
            reason,
            boundary,
            items,
            files,
            ..
        } = ended;
        let reason = reason.unwrap_or_default();
        match outcome {
            SpecOutcome::Completed => self.note(
                json!({"type": "speculation.completed", "suggestion": suggestion,
                    "items": items, "files": files}),
                format!(
                    "[speculation] completed: {items} items, {} files in the overlay",
                    files.len()
                ),
            ),
            SpecOutcome::Boundary => self.note(
                json!({"type": "speculation.boundary", "suggestion": suggestion,
                    "reason": boundary.unwrap_or("limit"), "detail": reason}),
                format!("[speculation] boundary: {reason}; running it as a normal turn"),
            ),
            SpecOutcome::Aborted => self.note(
                json!({"type": "speculation.aborted", "suggestion": suggestion, "reason": reason}),
                format!("[speculation] aborted: {reason}"),
            ),
            // The engine runs the prompt as a normal turn itself.
            SpecOutcome::Discarded => {
                self.note(
                    json!({"type": "speculation.aborted", "suggestion": suggestion, "reason": reason}),
                    format!("[speculation] discarded: {reason}"),
                );
                return;
            }
        }
        // Tab: a completed speculation is accepted; one that stopped runs as a turn.
        self.remaining = self.remaining.saturating_sub(1);
        self.step += 1;
        self.act(Action::Submit { text: suggestion });
    }

    fn accepted(
        &mut self,
        items: &[Item],
        files: &[String],
        commands_run: usize,
        saved_ms: u64,
        pipelined: Option<String>,
    ) -> Next {
        self.show(items);
        let text = self.suggestion.clone().unwrap_or_default();
        self.note(
            json!({"type": "speculation.accepted", "suggestion": text,
                "files_applied": files, "commands_run": commands_run,
                "time_saved_ms": saved_ms}),
            format!(
                "[speculation] accepted: {} files applied{}, {:.1} s saved",
                files.len(),
                if files.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", files.join(", "))
                },
                saved_ms as f64 / 1000.0
            ),
        );
        // The follow-up's turn ends, with the background tokens that paid for it (no
        // request ran at the accept).
        if self.json {
            let spent = self.background.take();
            let mut event = json!({"type": "turn.completed", "status": "completed",
                "speculated": true, "stop_reason": null, "requests": 0,
                "usage": UsageEvent::default(), "background_usage": spent.to_json()});
            if let Some(cost) = crate::pricing::turn_cost(&UsageEvent::default(), &spent) {
                event["cost_usd"] = cost.into();
            }
            emit(&event);
        }
        if self.remaining == 0 {
            return Next::Done(ExitCode::Success);
        }
        if let Some(next) = pipelined {
            self.follow(next);
        }
        Next::Continue
    }

    /// The accepted speculation's answer, as a normal turn would have shown it (its tool
    /// calls were shown when committed). Item ids are unique in the run:
    /// `speculated_<follow-up>_<item>`.
    fn show(&self, items: &[Item]) {
        let step = self.step.saturating_sub(1);
        for (n, item) in items.iter().enumerate() {
            if let Item::AssistantText { text } = item {
                if self.json {
                    let id = format!("speculated_{step}_{n}");
                    emit(
                        &json!({"type": "item.completed", "item": {"id": id, "kind": "assistant_message", "text": text, "speculated": true}}),
                    );
                } else {
                    println!("{}", saki_tools::sanitize::sanitize(text));
                }
            }
        }
    }
}
