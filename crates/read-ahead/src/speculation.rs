//! Speculation: the suggested prompt runs as a forked query while the person reads, with
//! every tool call passing the [`ToolGate`] and every write landing in an [`OverlayFs`].
//! A completed speculation is accepted (overlay applied, items appended) or discarded.

use crate::fork::{generate_suggestion_with, CacheSafeParams, ForkError, SuggestionPrompt};
use crate::gate::{speculation_tool_server, GateDecision, ToolGate};
use crate::overlay::{ApplyReport, OverlayFs};
use crate::pairing::{ensure_tool_result_pairing, PairingError};
use crate::suggestion::SuppressReason;
use crate::turn_usage::UsageSink;
use saki_llm_client::{CancellationToken, Client, ContentPart, ResponseStatus};
use saki_llm_worker::hook::{HookDecision, Hooks};
use saki_llm_worker::loop_guard::call_key;
use saki_llm_worker::{
    ArgumentError, BackgroundKind, BatchIds, Item, LoopGuard, Responder, ToolCallInfo,
    ToolExecutionContext, ToolResultStatus, ToolServer,
};
use saki_tools::{ApprovalMode, Workspace};
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
    if let Err(e) = overlay.abort() {
        tracing::warn!(error = %e, "could not delete an applied overlay");
    }
    Ok(Accepted {
        items: std::mem::take(&mut speculation.items),
        applied,
        time_saved: speculation.elapsed,
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
    /// Run tool calls the model writes as text, as the main loop does (default off).
    pub tool_call_recovery: bool,
    /// The first response must be a tool call, as in the main loop
    /// ([`saki_llm_worker::first_call`]; only with `tool_call_recovery`).
    pub first_tool_call_required: bool,
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

enum Step {
    Continue,
    Stop(SpeculationStatus, Option<String>),
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
            tool_call_recovery: false,
            first_tool_call_required: false,
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
        let gate = ToolGate::new(self.mode, overlay.clone());
        let tools = speculation_tool_server(self.workspace.clone(), overlay.clone());
        let (status, reason) = self
            .speculate(params, &mut speculation.items, &gate, &tools, &cancel)
            .await;
        speculation.status = status;
        speculation.reason = reason;
        // The gate and tools hold the overlay only while the loop runs.
        drop((gate, tools));
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

    /// Why a `PreToolUse` hook blocks this call, if it does. The hook sees the input as
    /// the model meant it (workspace paths), not the overlay's rewrite.
    async fn hook_blocks(
        &self,
        name: &str,
        input: &str,
        ctx: &ToolExecutionContext,
    ) -> Option<String> {
        let hooks = self.hooks.as_ref().filter(|h| !h.is_empty())?;
        let call = ToolCallInfo {
            name: name.to_owned(),
            arguments: input.to_owned(),
            input: serde_json::from_str(input).unwrap_or(serde_json::Value::Null),
            ctx: ctx.clone(),
        };
        match hooks.pre_speculated_call(&call).await {
            HookDecision::Continue => None,
            HookDecision::Block(reason) => {
                Some(format!("a PreToolUse hook blocked `{name}`: {reason}"))
            }
        }
    }

    async fn speculate(
        &self,
        params: &CacheSafeParams,
        items: &mut Vec<Item>,
        gate: &ToolGate,
        tools: &ToolServer,
        cancel: &CancellationToken,
    ) -> (SpeculationStatus, Option<String>) {
        let mut responder = Responder::new();
        responder.set_recovery(self.tool_call_recovery);
        let mut guard = LoopGuard::new();
        for turn in 0..MAX_SPECULATION_TURNS {
            let mut request = params.fork_request(&self.model, items);
            if turn == 0 && self.first_tool_call_required && self.tool_call_recovery {
                saki_llm_worker::first_call::require_call(&mut request);
            }
            let response = match responder
                .respond(&self.client, &request, cancel.clone())
                .await
            {
                Ok(r) => r,
                Err(e) => return (SpeculationStatus::Aborted, Some(e.to_string())),
            };
            let wire = self.client.config().wire_api;
            self.usage
                .record(BackgroundKind::Speculation, &response.usage, wire);
            match response.status {
                ResponseStatus::Completed | ResponseStatus::Incomplete => {}
                ResponseStatus::Cancelled => {
                    return (SpeculationStatus::Aborted, Some("cancelled".into()))
                }
                _ => {
                    let message = response
                        .error
                        .map_or_else(|| "the response failed".into(), |e| e.message);
                    return (SpeculationStatus::Aborted, Some(message));
                }
            }
            let step = self
                .respond_step(&response.content, items, (gate, tools), &mut guard)
                .await;
            if let Step::Stop(status, reason) = step {
                return (status, reason);
            }
            if items.len() > MAX_SPECULATION_MESSAGES {
                let reason = format!("more than {MAX_SPECULATION_MESSAGES} messages");
                return (SpeculationStatus::Boundary, Some(reason));
            }
        }
        let reason = format!("more than {MAX_SPECULATION_TURNS} model turns");
        (SpeculationStatus::Boundary, Some(reason))
    }

    /// Appends one response and runs its calls in order through the gate. At a boundary
    /// the calls already run stay (paired by index), the rest leave the model message.
    /// Arguments are checked against the schema and repeats answered by the loop guard as
    /// in the main loop; a speculation that loops stops at a boundary, where the
    /// suggestion runs as a normal turn with the main loop's own guard.
    async fn respond_step(
        &self,
        content: &[ContentPart],
        items: &mut Vec<Item>,
        (gate, tools): (&ToolGate, &ToolServer),
        guard: &mut LoopGuard,
    ) -> Step {
        let mut message = Vec::new();
        let mut calls = Vec::new();
        let has_calls = content
            .iter()
            .any(|p| matches!(p, ContentPart::ToolUse { .. }));
        let batch_id = if has_calls {
            self.batch_ids.next()
        } else {
            String::new()
        };
        for part in content {
            match part {
                ContentPart::Text { text } if !text.is_empty() => {
                    message.push(Item::AssistantText { text: text.clone() })
                }
                ContentPart::Thinking { text, signature } => message.push(Item::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                }),
                ContentPart::ToolUse {
                    id,
                    name,
                    arguments,
                    signature,
                } => {
                    let ctx = ToolExecutionContext {
                        call_id: id.clone(),
                        batch_id: batch_id.clone(),
                        call_index: calls.len(),
                    };
                    calls.push(message.len());
                    message.push(Item::ToolCall {
                        name: name.clone(),
                        arguments: arguments.clone(),
                        signature: signature.clone(),
                        ctx,
                    });
                }
                _ => {}
            }
        }
        if calls.is_empty() {
            items.extend(message);
            return Step::Stop(SpeculationStatus::Completed, None);
        }
        let mut results = Vec::new();
        let mut boundary = None;
        for (index, &at) in calls.iter().enumerate() {
            let Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } = &message[at]
            else {
                continue;
            };
            let checked = match tools.check_arguments(name, arguments) {
                Ok(checked) => Some(checked),
                // The gate judges these itself: it cannot tell where arguments it cannot
                // read lead, and an unknown tool is not known to be safe to run ahead.
                Err(
                    ArgumentError::InvalidJson { .. }
                    | ArgumentError::UnknownTool { .. }
                    | ArgumentError::NotAnObject { .. },
                ) => None,
                Err(e @ ArgumentError::Schema { .. }) => {
                    let content = e.to_string();
                    let key = call_key(name, arguments);
                    guard.record(key, ToolResultStatus::Error, &content, false);
                    results.push(result_item(name, content, ToolResultStatus::Error, ctx));
                    continue;
                }
            };
            let input = checked
                .as_ref()
                .map_or_else(|| arguments.clone(), |c| c.input.to_string());
            let key = call_key(name, &input);
            let read_only = tools.get(name).is_some_and(|t| t.read_only());
            if let Some((content, status)) = guard.repeat_of(&key) {
                guard.record(key, status, &content, read_only);
                results.push(result_item(name, content, status, ctx));
                continue;
            }
            match gate.check(name, &input) {
                GateDecision::Boundary { reason } => {
                    boundary = Some((index, reason));
                    break;
                }
                GateDecision::Allow { input: gated } => {
                    if let Some(reason) = self.hook_blocks(name, &input, ctx).await {
                        boundary = Some((index, reason));
                        break;
                    }
                    let input = gated;
                    gate.mark_unasked(name, &ctx.call_id);
                    let (content, status) = match tools.get(name) {
                        Some(tool) => match tool.execute(&input, ctx.clone()).await {
                            // Whether the main model reads images is the main loop's
                            // to say; the call runs again there.
                            Ok(output) if !output.images.is_empty() => {
                                boundary = Some((index, format!("`{name}` returned an image")));
                                break;
                            }
                            Ok(output) => (output.content, ToolResultStatus::Success),
                            Err(e) => (e.to_string(), ToolResultStatus::Error),
                        },
                        None => (format!("unknown tool `{name}`"), ToolResultStatus::Error),
                    };
                    let content = match &checked {
                        Some(checked) => checked.annotate(content),
                        None => content,
                    };
                    guard.record(key, status, &content, read_only);
                    results.push(result_item(name, content, status, ctx));
                }
            }
        }
        if let Some((index, reason)) = boundary {
            // Drop the calls that did not run (by position, not by name).
            let unexecuted: Vec<usize> = calls[index..].to_vec();
            let mut position = 0;
            message.retain(|_| {
                let keep = !unexecuted.contains(&position);
                position += 1;
                keep
            });
            items.extend(message);
            items.extend(results);
            return Step::Stop(SpeculationStatus::Boundary, Some(reason));
        }
        items.extend(message);
        items.extend(results);
        match guard.stop_reason() {
            Some(reason) => Step::Stop(
                SpeculationStatus::Boundary,
                Some(format!("the speculation repeats itself: {reason}")),
            ),
            None => Step::Continue,
        }
    }
}

fn result_item(
    name: &str,
    content: String,
    status: ToolResultStatus,
    ctx: &ToolExecutionContext,
) -> Item {
    Item::ToolResult {
        name: name.to_owned(),
        content,
        status,
        ctx: ctx.clone(),
    }
}
