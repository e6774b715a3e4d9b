//! Speculation: the suggested prompt runs as a forked query while the person reads, with
//! every tool call passing the [`ToolGate`] and every write landing in an [`OverlayFs`].
//! A completed speculation is accepted (overlay applied, items appended) or discarded.

use crate::fork::{generate_suggestion_with, CacheSafeParams, ForkError, SuggestionPrompt};
use crate::gate::{seen_workspace, speculation_tool_server, BoundaryKind, ToolGate};
use crate::gated::{gated_server, GateInterceptor, Stopper};
use crate::overlay::{ApplyReport, OverlayFs};
use crate::pairing::{ensure_tool_result_pairing, PairingError};
use crate::suggestion::SuppressReason;
use crate::turn_usage::UsageSink;
use saki_llm_client::{CancellationToken, Client, UsageEvent};
use saki_llm_worker::hook::Hooks;
use saki_llm_worker::{
    recovery, BackgroundKind, BatchIds, Item, Observer, TurnStatus, Worker, WorkerConfig,
    WorkerEvent,
};
use saki_tools::rewrite::{RewriteEdits, RewriteModel};
use saki_tools::{ApprovalMode, Workspace};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Model round trips one speculation may make.
pub const MAX_SPECULATION_TURNS: usize = 20;
/// Items one speculation may produce.
pub const MAX_SPECULATION_MESSAGES: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeculationStatus {
    Idle,
    Running,
    /// The model answered without further tool calls; ready to accept.
    Completed,
    /// A tool call it may not make ahead of the person; the work so far is kept.
    Boundary,
    /// Cancelled or failed; nothing of it may be used.
    Aborted,
}

impl SpeculationStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            SpeculationStatus::Idle => "idle",
            SpeculationStatus::Running => "running",
            SpeculationStatus::Completed => "completed",
            SpeculationStatus::Boundary => "boundary",
            SpeculationStatus::Aborted => "aborted",
        }
    }
}

/// A finished speculation, holding its overlay until it is accepted or dropped.
#[derive(Debug)]
pub struct Speculation {
    pub suggestion: String,
    pub status: SpeculationStatus,
    /// Why it stopped at a boundary or was aborted.
    pub reason: Option<String>,
    /// At a boundary: of which kind.
    pub boundary: Option<BoundaryKind>,
    /// Shell commands it ran in an overlay of the workspace.
    pub commands_run: usize,
    /// The speculated history: the suggestion as a user item, then the model's items.
    pub items: Vec<Item>,
    pub elapsed: Duration,
    overlay: Option<OverlayFs>,
}

impl Speculation {
    /// Paths (workspace-relative) the speculation wrote.
    pub fn written_files(&self) -> Vec<std::path::PathBuf> {
        self.overlay
            .as_ref()
            .map(OverlayFs::written_files)
            .unwrap_or_default()
    }

    /// The overlay directory, while the speculation holds one.
    pub fn overlay_dir(&self) -> Option<&std::path::Path> {
        self.overlay.as_ref().map(OverlayFs::dir)
    }

    /// The last assistant text, for pipelining and display.
    pub fn answer(&self) -> String {
        self.items
            .iter()
            .rev()
            .find_map(|i| match i {
                Item::AssistantText { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Keeps the overlay on disk (renamed so no cleanup removes it) and returns where,
    /// when the speculation has one: after an accept that could not apply it, the
    /// person may still want what it wrote.
    pub fn keep(mut self) -> Option<std::path::PathBuf> {
        self.overlay.take().map(OverlayFs::keep)
    }

    /// Deletes the overlay; nothing of the speculation remains.
    pub fn abort(mut self) {
        if let Some(overlay) = self.overlay.take() {
            if let Err(e) = overlay.abort() {
                tracing::warn!(error = %e, "could not delete a speculation overlay");
            }
        }
    }
}

/// What an accepted speculation brought.
#[derive(Debug)]
pub struct Accepted {
    /// Items to append to history (the user item first).
    pub items: Vec<Item>,
    pub applied: ApplyReport,
    /// How long the speculation ran: the wait the person skipped.
    pub time_saved: Duration,
    /// Shell commands it ran (their files are among `applied`).
    pub commands_run: usize,
    /// The applied overlay being deleted, off the accept's path.
    removal: Option<std::thread::JoinHandle<()>>,
}

impl Accepted {
    /// Waits until the applied overlay is deleted (tests; nothing else needs to).
    pub fn wait_for_cleanup(&mut self) {
        if let Some(removal) = self.removal.take() {
            let _ = removal.join();
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("the speculation is {0}, not completed")]
    NotCompleted(&'static str),
    #[error("the submitted text is not the suggestion")]
    TextChanged,
    #[error("the speculated history is malformed: {0}")]
    Pairing(#[from] PairingError),
    #[error("the speculation could not be applied: {}", .0.report.describe())]
    Apply(Box<NotApplied>),
}

/// An accept whose files could not all be applied: what happened to each, and the
/// speculation with its overlay, for the caller to keep or drop.
#[derive(Debug)]
pub struct NotApplied {
    pub report: ApplyReport,
    pub speculation: Speculation,
}

/// Accepts `speculation` for the text the person submitted. Only a completed
/// speculation whose suggestion equals `submitted` is accepted; its files land first, all
/// or none, and its items are returned only when every file did. On any `Err` but
/// `Apply` nothing was written and the speculation is discarded here; the caller submits
/// the text normally. On `Apply` the speculation comes back with its overlay: when
/// [`ApplyReport::wrote_nothing`] the tree is as it was and the text can run normally;
/// otherwise files could not be put back and the tree is half changed.
pub fn accept(mut speculation: Speculation, submitted: &str) -> Result<Accepted, AcceptError> {
    let refuse = |s: Speculation, e: AcceptError| {
        s.abort();
        Err(e)
    };
    if speculation.status != SpeculationStatus::Completed {
        let status = speculation.status.as_str();
        return refuse(speculation, AcceptError::NotCompleted(status));
    }
    if speculation.suggestion.trim() != submitted.trim() {
        return refuse(speculation, AcceptError::TextChanged);
    }
    if let Err(e) = ensure_tool_result_pairing(&speculation.items) {
        return refuse(speculation, e.into());
    }
    let Some(overlay) = speculation.overlay.take() else {
        return Err(AcceptError::NotCompleted("without an overlay"));
    };
    let applied = overlay.apply();
    if !applied.is_complete() {
        speculation.overlay = Some(overlay);
        return Err(AcceptError::Apply(Box::new(NotApplied {
            report: applied,
            speculation,
        })));
    }
    // The applied overlay is deleted off the accept's path: removing its files waits on
    // the file system's journal, which a busy disk makes slower than the apply itself
    // (about 50 of 80 ms with builds running). A kill before it is done leaves a stale
    // overlay, which the next start removes (`cleanup_stale`).
    let removal = std::thread::spawn(move || {
        if let Err(e) = overlay.abort() {
            tracing::warn!(error = %e, "could not delete an applied overlay");
        }
    });
    Ok(Accepted {
        items: std::mem::take(&mut speculation.items),
        applied,
        time_saved: speculation.elapsed,
        commands_run: speculation.commands_run,
        removal: Some(removal),
    })
}

/// Runs speculations for one workspace and approval mode.
pub struct Speculator {
    pub client: Client,
    /// The (fast) model background work uses.
    pub model: String,
    pub mode: ApprovalMode,
    pub workspace: Arc<Workspace>,
    /// Where overlays are created (default: [`crate::overlay::default_base`]).
    pub overlay_base: std::path::PathBuf,
    /// The main loop's settings (recovery of text calls, the first call, sampling,
    /// vision, the output limit): a speculation is a turn of the same loop, on the fast
    /// model. Its model, system prompt, thinking and turn limit are the fork's own.
    pub worker: WorkerConfig,
    /// The session's batch-id counter ([`saki_llm_worker::Worker::batch_ids`]), so a
    /// speculation's batches never share an id with the main loop's or another
    /// speculation's (a fresh counter by default).
    pub batch_ids: BatchIds,
    /// The person's hooks: `PreToolUse` sees every call the gate lets run (with
    /// `"speculation": true`), and a block is a boundary.
    pub hooks: Option<Hooks>,
    /// Where the tokens of suggestions, speculations and pipelined suggestions are
    /// counted (held for the turn they prepare, see [`crate::turn_usage`]; a fresh usage of
    /// its own by default).
    pub usage: UsageSink,
    /// The person's custom slash commands (names without `/`): a suggestion may be one.
    pub commands: Vec<String>,
}

impl Speculator {
    pub fn new(
        client: Client,
        model: impl Into<String>,
        mode: ApprovalMode,
        workspace: Arc<Workspace>,
    ) -> Self {
        Self {
            client,
            model: model.into(),
            mode,
            workspace,
            overlay_base: crate::overlay::default_base(),
            worker: WorkerConfig::new(String::new()),
            batch_ids: BatchIds::new(),
            hooks: None,
            usage: UsageSink::default(),
            commands: Vec::new(),
        }
    }

    /// Runs `suggestion` on top of `params` until the model answers, a boundary, the
    /// limits, or `cancel`. It returns as soon as its own loop ends: the speculation is
    /// ready then, and the pipelined suggestion ([`Speculator::pipelined`]) is a request of
    /// its own that arrives when it arrives.
    pub async fn run(
        &self,
        params: &CacheSafeParams,
        suggestion: &str,
        cancel: CancellationToken,
    ) -> Speculation {
        let started = Instant::now();
        let mut speculation = Speculation {
            suggestion: suggestion.to_owned(),
            status: SpeculationStatus::Running,
            reason: None,
            boundary: None,
            commands_run: 0,
            items: vec![Item::user(suggestion)],
            elapsed: Duration::ZERO,
            overlay: None,
        };
        let overlay = match OverlayFs::new_in(self.workspace.clone(), &self.overlay_base) {
            Ok(o) => Arc::new(o),
            Err(e) => {
                speculation.status = SpeculationStatus::Aborted;
                speculation.reason = Some(format!("no overlay: {e}"));
                return speculation;
            }
        };
        let ended = self.speculate(params, suggestion, &overlay, &cancel).await;
        speculation.status = ended.status;
        speculation.reason = ended.reason;
        speculation.boundary = ended.boundary;
        speculation.commands_run = ended.commands_run;
        if !ended.items.is_empty() {
            speculation.items = ended.items;
        }
        speculation.overlay = Arc::try_unwrap(overlay).ok();
        speculation.elapsed = started.elapsed();
        speculation
    }

    /// The person's next prompt after the snapshot: the first suggestion of a turn.
    pub async fn suggest(
        &self,
        params: &CacheSafeParams,
        cancel: CancellationToken,
    ) -> Result<Result<String, SuppressReason>, ForkError> {
        let usage = Some((&self.usage, BackgroundKind::Suggestion));
        let prompt = crate::suggestion::suggestion_prompt(&self.commands);
        let prompt = SuggestionPrompt(&prompt);
        generate_suggestion_with(
            &self.client,
            params,
            &self.model,
            &[],
            prompt,
            cancel,
            usage,
        )
        .await
    }

    /// The next suggestion after a completed speculation of `params` (its items: the
    /// suggestion, then what the model did), for the Tab-Tab-Tab walk. It sees the
    /// speculated messages themselves: its request is the speculation's history followed
    /// by the suggestion prompt, byte for byte the request a suggestion after the accept
    /// would send. It may run while the speculation waits to be accepted, and after.
    pub async fn pipelined(
        &self,
        params: &CacheSafeParams,
        items: &[Item],
        cancel: CancellationToken,
    ) -> Result<Result<String, SuppressReason>, ForkError> {
        let usage = Some((&self.usage, BackgroundKind::PipelinedSuggestion));
        let prompt = crate::suggestion::suggestion_prompt(&self.commands);
        let prompt = SuggestionPrompt(&prompt);
        generate_suggestion_with(
            &self.client,
            params,
            &self.model,
            items,
            prompt,
            cancel,
            usage,
        )
        .await
    }

    /// Runs the suggestion as one turn of the Worker's loop on the fork: the main
    /// request's system prompt, tools and history, then the suggestion; the overlay's
    /// tools behind the gate. Returns the status, why, and the speculated items (the
    /// suggestion as a user item first).
    async fn speculate(
        &self,
        params: &CacheSafeParams,
        suggestion: &str,
        overlay: &Arc<OverlayFs>,
        cancel: &CancellationToken,
    ) -> Ended {
        let stopper = Stopper::new(cancel);
        let gate = Arc::new(ToolGate::new(self.mode, overlay.clone()));
        let tools = speculation_tool_server(self.workspace.clone(), overlay.clone());
        let tools = gated_server(&tools, &params.tools, &gate, &stopper);
        let mut config = self.worker.clone();
        config.model = self.model.clone();
        config.system_prompt = params.system.clone();
        config.thinking = params.thinking.filter(|_| self.model == params.model);
        config.max_turns = MAX_SPECULATION_TURNS;
        config.response_schema = None;
        let mut worker = Worker::new(self.client.clone(), Arc::new(tools), config);
        worker.offer_tools(params.tools.clone());
        worker.set_history(params.history.clone());
        worker.set_batch_ids(self.batch_ids.clone());
        // The main loop's repairs for a small model, before the gate as they are before
        // approval: the gate judges the call as it will run.
        for guard in self.small_model_guards(overlay, worker.config()) {
            worker.add_interceptor(guard);
        }
        worker.add_interceptor(Arc::new(GateInterceptor {
            gate,
            hooks: self.hooks.clone(),
            stopper: stopper.clone(),
        }));
        let pending = Arc::new(AtomicBool::new(false));
        worker.set_observer(self.observer(&stopper, &pending));
        let outcome = worker.run_turn(suggestion, stopper.token()).await;
        let items = worker.history()[params.history.len()..].to_vec();
        self.usage_done(&pending);
        let (status, reason) = match outcome {
            // Stopped from inside while a request was on its way.
            Err(_) if stopper.reason().is_some() => (SpeculationStatus::Boundary, stopper.reason()),
            Err(e) => (SpeculationStatus::Aborted, Some(e.to_string())),
            Ok(outcome) => match outcome.status {
                TurnStatus::Completed { .. } | TurnStatus::Incomplete => {
                    match not_an_answer(&items) {
                        Some(why) => (SpeculationStatus::Boundary, Some(why)),
                        None => (SpeculationStatus::Completed, None),
                    }
                }
                TurnStatus::Stopped { reason } => (SpeculationStatus::Boundary, Some(reason)),
                TurnStatus::MaxTurns => (
                    SpeculationStatus::Boundary,
                    Some(format!("more than {MAX_SPECULATION_TURNS} model turns")),
                ),
                TurnStatus::Cancelled => match stopper.reason() {
                    Some(reason) => (SpeculationStatus::Boundary, Some(reason)),
                    None => (SpeculationStatus::Aborted, Some("cancelled".into())),
                },
                TurnStatus::Failed { error } => (SpeculationStatus::Aborted, Some(error.message)),
                TurnStatus::PromptCancelled { reason } => {
                    (SpeculationStatus::Aborted, Some(reason))
                }
            },
        };
        let boundary = (status == SpeculationStatus::Boundary)
            .then(|| stopper.kind().unwrap_or(BoundaryKind::Limit));
        Ended {
            status,
            reason,
            items,
            boundary,
            commands_run: stopper.commands_run(),
        }
    }

    /// The interceptors the main loop runs a small local model behind
    /// ([`saki_tools::guards`]), seeing the overlay's files; none for other models.
    /// Rewrite requests go to the speculation's model and count as speculation.
    fn small_model_guards(
        &self,
        overlay: &Arc<OverlayFs>,
        config: &WorkerConfig,
    ) -> Vec<Arc<dyn saki_llm_worker::interceptor::Interceptor>> {
        if !config.guard_unasked_changes {
            return Vec::new();
        }
        let seen = seen_workspace(
            &self.workspace,
            Arc::new(crate::view::OverlayView::new(overlay.clone())),
        );
        let rewrite = config.rewrite_edits.then(|| {
            let model = RewriteModel::new(
                self.client.clone(),
                self.model.clone(),
                config.temperature,
                config.max_output_tokens,
            );
            let usage = self.usage.clone();
            RewriteEdits::new(seen.clone(), model).with_usage_recorder(Arc::new(
                move |event, wire| usage.record(BackgroundKind::Speculation, event, wire),
            ))
        });
        saki_tools::guards::small_model_guards(&seen, rewrite)
    }

    /// Counts the speculation's requests and tokens as background work, and stops it
    /// past [`MAX_SPECULATION_MESSAGES`].
    fn observer(&self, stopper: &Stopper, pending: &Arc<AtomicBool>) -> Observer {
        let usage = self.usage.clone();
        let wire = self.client.config().wire_api;
        let stopper = stopper.clone();
        let pending = pending.clone();
        let committed = Arc::new(AtomicUsize::new(0));
        Arc::new(move |event: &WorkerEvent| match event {
            // A request whose response brought no usage report still counts.
            WorkerEvent::RequestStarted { .. } if pending.swap(true, Ordering::SeqCst) => {
                usage.record(BackgroundKind::Speculation, &UsageEvent::default(), wire);
            }
            WorkerEvent::Usage(report) => {
                pending.store(false, Ordering::SeqCst);
                usage.record(BackgroundKind::Speculation, report, wire);
            }
            WorkerEvent::Committed(_)
                if committed.fetch_add(1, Ordering::SeqCst) + 1 > MAX_SPECULATION_MESSAGES =>
            {
                stopper.stop(
                    BoundaryKind::Limit,
                    format!("more than {MAX_SPECULATION_MESSAGES} messages"),
                );
            }
            _ => {}
        })
    }

    /// The last request of the turn, if its response brought no usage report.
    fn usage_done(&self, pending: &AtomicBool) {
        if pending.swap(false, Ordering::SeqCst) {
            let wire = self.client.config().wire_api;
            self.usage
                .record(BackgroundKind::Speculation, &UsageEvent::default(), wire);
        }
    }
}

/// How a speculation's turn ended.
struct Ended {
    status: SpeculationStatus,
    reason: Option<String>,
    items: Vec<Item>,
    boundary: Option<BoundaryKind>,
    commands_run: usize,
}

/// Why the end of a completed turn is not an answer a person could be shown as the
/// result: no text at all, or text that is only a tool call (to a tool that exists or
/// not) written out instead of made.
fn not_an_answer(items: &[Item]) -> Option<String> {
    let last = items.iter().rev().find_map(|i| match i {
        Item::AssistantText { text } => Some(text.as_str()),
        Item::ToolResult { .. } | Item::ToolCall { .. } | Item::User { .. } => Some(""),
        _ => None,
    });
    let text = last.unwrap_or("").trim();
    if text.is_empty() {
        return Some("the speculation ended without an answer".into());
    }
    if let Some((name, _)) = recovery::unknown_call(text, &[]) {
        return Some(format!(
            "the speculation's answer is a call to `{name}` written as text, not an answer"
        ));
    }
    broken_call(text).then(|| {
        "the speculation's answer is a call written as text that does not parse, not an answer"
            .into()
    })
}

/// Whether `text` opens like a call written as text, an object whose first key is
/// `"name"` (in a code fence or not), that is not valid JSON: asked to run the tests, a
/// 0.5B model answered `{"name":"run the tests","arguments":{"path":"README.md",
/// "old_string":"…"]}`.
fn broken_call(text: &str) -> bool {
    let mut body = text.trim();
    if let Some(fenced) = body.strip_prefix("```") {
        body = fenced.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        body = body.trim_end().strip_suffix("```").unwrap_or(body);
    }
    let body = body.trim();
    body.strip_prefix('{')
        .is_some_and(|rest| rest.trim_start().starts_with("\"name\""))
        && serde_json::from_str::<serde_json::Value>(body).is_err()
}
