//! `saki exec --follow-ups N`: after the prompt, up to N times take the suggested next
//! prompt, speculate it, and accept it when the speculation completed (Tab, Tab, Tab as a
//! batch job); at a boundary the suggestion runs as a normal turn under `--approval`.

use crate::exec::{failed_spent, finish_turn};
use crate::exit::ExitCode;
use crate::output::{emit, PlainPrinter};
use saki_followup::{
    accept, suggestion_allowed, AcceptError, CacheSafeStore, NotApplied, ReadAheadStats,
    SpeculationStatus, Speculator, SuppressReason,
};
use saki_llm_client::CancellationToken;
use saki_llm_client::UsageEvent;
use saki_llm_worker::hook::{HookDecision, Hooks};
use saki_llm_worker::{BackgroundUsage, Item, Worker};
use saki_tools::ApprovalMode;
use serde_json::json;

pub struct FollowUps {
    pub count: u32,
    pub speculator: Speculator,
    /// The person's hooks: an accepted prompt passes UserPromptSubmit and Stop like a
    /// typed one (the speculator holds them too, for PreToolUse).
    pub hooks: Hooks,
    pub json: bool,
    pub printer: PlainPrinter,
    /// Background tokens (shared with the speculator and the compactor).
    pub background: BackgroundUsage,
}

impl FollowUps {
    fn note(&self, event: serde_json::Value, line: String) {
        if self.json {
            emit(&event);
        } else {
            self.printer.finish_line();
            eprintln!("{}", saki_tools::sanitize::sanitize(&line));
        }
    }

    fn suppressed(&self, reason: SuppressReason) {
        self.note(
            json!({"type": "suggestion", "text": null, "suppressed": reason.as_str()}),
            format!("[suggestion] none ({reason})"),
        );
    }

    /// Runs the follow-ups after a successful first turn; returns the exit code of the
    /// last turn that ran. At the end, what reading ahead did and cost: `--json` reports
    /// background tokens no `turn.completed` carried yet (`background_usage`), plain mode
    /// prints the read-ahead line on stderr.
    pub async fn run(self, worker: &mut Worker, cancel: CancellationToken) -> ExitCode {
        let mut stats = ReadAheadStats::default();
        let code = self.steps(worker, cancel, &mut stats).await;
        stats.background = self.background.session();
        let rest = self.background.take();
        if self.json {
            // After a failure, `turn.failed` carried it (and must stay the last line).
            if !rest.is_empty() && code == ExitCode::Success {
                emit(&json!({"type": "background_usage", "background_usage": rest.to_json()}));
            }
        } else {
            self.printer.finish_line();
            eprintln!("[{}]", stats.summary_line());
        }
        code
    }

    /// An accepted speculation is the follow-up's turn: it ends like one, with the
    /// background tokens that paid for it (no request ran at accept).
    fn speculated_turn_completed(&self) {
        if self.json {
            emit(
                &json!({"type": "turn.completed", "status": "completed", "speculated": true,
                "stop_reason": null, "requests": 0, "usage": UsageEvent::default(),
                "background_usage": self.background.take().to_json()}),
            );
        }
    }

    async fn steps(
        &self,
        worker: &mut Worker,
        cancel: CancellationToken,
        stats: &mut ReadAheadStats,
    ) -> ExitCode {
        let mut store = CacheSafeStore::default();
        store.save(&worker.build_request(), worker.history());
        let mut pipelined = None;
        let plan = self.speculator.mode == ApprovalMode::Plan;
        for step in 0..self.count {
            if let Err(reason) = suggestion_allowed(worker.history(), true, plan) {
                self.suppressed(reason);
                break;
            }
            let Some(params) = store.get().cloned() else {
                break;
            };
            let suggestion = match pipelined.take() {
                Some(s) => s,
                None => match self.speculator.suggest(&params, cancel.clone()).await {
                    Ok(s) => s,
                    Err(e) => {
                        self.note(
                            json!({"type": "suggestion", "text": null, "error": e.to_string()}),
                            format!("[suggestion] failed: {e}"),
                        );
                        break;
                    }
                },
            };
            let text = match suggestion {
                Ok(text) => text,
                Err(reason) => {
                    self.suppressed(reason);
                    break;
                }
            };
            self.note(
                json!({"type": "suggestion", "text": text}),
                format!("[suggestion] {text}"),
            );
            self.note(
                json!({"type": "speculation.started", "suggestion": text}),
                "[speculation] started".into(),
            );
            let speculation = self.speculator.run(&params, &text, cancel.clone()).await;
            let reason = speculation.reason.clone().unwrap_or_default();
            match speculation.status {
                SpeculationStatus::Completed => {
                    let files = speculation.written_files();
                    self.note(
                        json!({"type": "speculation.completed", "suggestion": text,
                            "items": speculation.items.len(), "files": files}),
                        format!(
                            "[speculation] completed: {} items, {} files in the overlay",
                            speculation.items.len(),
                            files.len()
                        ),
                    );
                    // Like a typed prompt: UserPromptSubmit may refuse it.
                    if let HookDecision::Block(reason) = self.hooks.prompt_submit(&text).await {
                        stats.discarded += 1;
                        speculation.abort();
                        failed_spent(
                            self.json,
                            "prompt_cancelled",
                            &format!("the prompt was cancelled by a hook: {reason}"),
                            Some(&self.background),
                        );
                        return ExitCode::PromptCancelled;
                    }
                    match accept(speculation, &text) {
                        Ok(accepted) => {
                            let applied: Vec<String> = accepted
                                .applied
                                .applied()
                                .iter()
                                .map(|p| p.display().to_string())
                                .collect();
                            self.show(step, &accepted.items);
                            let speculated = accepted.items.clone();
                            worker.commit_items(accepted.items);
                            let answer = speculated.iter().rev().find_map(|i| match i {
                                Item::AssistantText { text } => Some(text.as_str()),
                                _ => None,
                            });
                            self.hooks.stop(answer).await;
                            // Durable before the next suggestion's request carries them.
                            worker.flushed().await;
                            let saved = accepted.time_saved.as_millis() as u64;
                            stats.accepted += 1;
                            stats.saved_ms += saved;
                            self.note(
                                json!({"type": "speculation.accepted", "suggestion": text,
                                    "files_applied": applied, "time_saved_ms": saved}),
                                format!(
                                    "[speculation] accepted: {} files applied{}, {:.1} s saved",
                                    applied.len(),
                                    if applied.is_empty() {
                                        String::new()
                                    } else {
                                        format!(" ({})", applied.join(", "))
                                    },
                                    saved as f64 / 1000.0
                                ),
                            );
                            self.speculated_turn_completed();
                            // The next suggestion sees what the speculation did.
                            pipelined = match self
                                .speculator
                                .pipelined(&params, &speculated, cancel.clone())
                                .await
                            {
                                Ok(next) => Some(next),
                                Err(e) => {
                                    tracing::debug!(error = %e, "pipelined suggestion failed");
                                    None
                                }
                            };
                            store.save(&worker.build_request(), worker.history());
                            continue;
                        }
                        Err(AcceptError::Apply(not_applied)) => {
                            stats.discarded += 1;
                            let NotApplied {
                                report,
                                speculation,
                            } = *not_applied;
                            let kept = speculation
                                .keep()
                                .map(|dir| format!("; its files are kept in {}", dir.display()))
                                .unwrap_or_default();
                            let reason = format!(
                                "the speculation could not be applied: {}{kept}",
                                report.describe()
                            );
                            let left = report.left_changed();
                            if !left.is_empty() {
                                // Half changed: running the prompt on top would build on it.
                                let left: Vec<String> =
                                    left.iter().map(|p| p.display().to_string()).collect();
                                failed_spent(
                                    self.json,
                                    "apply_failed",
                                    &format!(
                                        "{reason}; these files hold the speculation's version and could not be restored: {}; not running the prompt",
                                        left.join(", ")
                                    ),
                                    Some(&self.background),
                                );
                                return ExitCode::Internal;
                            }
                            self.note(
                                json!({"type": "speculation.aborted", "suggestion": text, "reason": reason}),
                                format!("[speculation] not applied (nothing was changed): {reason}; running it as a normal turn"),
                            );
                        }
                        Err(e) => {
                            stats.discarded += 1;
                            self.note(
                                json!({"type": "speculation.aborted", "suggestion": text, "reason": e.to_string()}),
                                format!("[speculation] discarded: {e}"),
                            );
                        }
                    }
                }
                SpeculationStatus::Boundary => {
                    stats.discarded += 1;
                    self.note(
                        json!({"type": "speculation.boundary", "suggestion": text, "reason": reason}),
                        format!("[speculation] boundary: {reason}; running it as a normal turn"),
                    );
                    speculation.abort();
                }
                _ => {
                    stats.discarded += 1;
                    self.note(
                        json!({"type": "speculation.aborted", "suggestion": text, "reason": reason}),
                        format!("[speculation] aborted: {reason}"),
                    );
                    speculation.abort();
                    if cancel.is_cancelled() {
                        let spent = Some(&self.background);
                        failed_spent(self.json, "cancelled", "cancelled", spent);
                        return ExitCode::Interrupted;
                    }
                }
            }
            let outcome = crate::panics::guarded(worker.run_turn(text, cancel.clone())).await;
            self.printer.finish_line();
            let code = match outcome {
                Ok(outcome) => finish_turn(outcome, self.json, &self.background),
                Err(panic) => {
                    let message = crate::panics::failure(&panic);
                    failed_spent(self.json, "internal", &message, Some(&self.background));
                    return ExitCode::Internal;
                }
            };
            if code != ExitCode::Success {
                return code;
            }
            store.save(&worker.build_request(), worker.history());
        }
        ExitCode::Success
    }

    /// The accepted speculation's answer, as a normal turn would have shown it (its tool
    /// calls are shown by the Worker's observer when committed). Item ids are unique in the
    /// run: `speculated_<follow-up>_<item>`.
    fn show(&self, step: u32, items: &[Item]) {
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
