//! The Worker loop: submit -> stream -> collect -> run the response's tool calls as one
//! batch (in parallel) -> repeat until a response has no tool calls.
//!
//! History first: every item is committed (and announced through the observer) before
//! the next request is built from history, so a resumed session sees what the model saw.
//! Whatever happens — denial, failure, cancellation — every tool call gets a result.

#[path = "batch.rs"]
mod batch;
#[path = "context.rs"]
mod context;
#[path = "retry.rs"]
mod retry;
#[path = "usage.rs"]
mod usage;

use crate::answer::{fold_for_answer, fold_for_call};
use crate::batch_ids::BatchIds;
use crate::compaction::{Compaction, CompactionTrigger, ContextGuard};
use crate::durability::Durability;
use crate::interceptor::{Interceptor, LoopStopAction, OwnCall, PromptAction, TurnEndAction};
use crate::item::{to_messages_with, Item, ToolResultStatus};
use crate::loop_guard::LoopGuard;
use crate::responder::{AssistantResponse, Responder};
use crate::timeline::Timeline;
use crate::tool::{ToolExecutionContext, ToolServer};
use crate::tool_set::SharedTools;
use batch::BatchEnd;
use saki_llm_client::ToolChoice;
use saki_llm_client::{
    CancellationToken, Client, ClientError, ContentPart, ErrorEvent, Request, ResponseStatus,
    StopReason, ThinkingConfig, UsageEvent,
};
use std::sync::Arc;
use usage::Usage;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub model: String,
    pub system_prompt: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub thinking: Option<ThinkingConfig>,
    /// Model requests allowed in one turn.
    pub max_turns: usize,
    /// Recover tool calls the model writes as text (see [`crate::recovery`]).
    pub tool_call_recovery: bool,
    /// The first response of each turn must be a tool call (see [`crate::first_call`]);
    /// only with `tool_call_recovery`.
    pub first_tool_call_required: bool,
    /// The model reads images: image items are sent as images, else as a note saying
    /// they are not shown (see [`crate::image`]).
    pub vision: bool,
    /// Every request asks for text that is JSON matching this schema, where the protocol
    /// has structured output (`saki exec --output-schema`); tool calls stay possible.
    pub response_schema: Option<saki_llm_client::ResponseSchema>,
    /// Refuse file changes the turn's prompt did not ask for (the engine installs
    /// `saki_tools::intent::ChangeGuard`); set for small local models.
    pub guard_unasked_changes: bool,
    /// With `guard_unasked_changes`: a small model's `edit` or `write_file` of a small
    /// file is made from the file's whole new text, asked for apart (the engine installs
    /// `saki_tools::rewrite::RewriteEdits`).
    pub rewrite_edits: bool,
}

impl WorkerConfig {
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system_prompt: None,
            max_output_tokens: None,
            temperature: None,
            thinking: None,
            max_turns: 50,
            tool_call_recovery: false,
            first_tool_call_required: false,
            vision: false,
            response_schema: None,
            guard_unasked_changes: false,
            rewrite_edits: false,
        }
    }
}

/// Progress reported while a turn runs (the streamed deltas go through the Timeline).
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerEvent {
    /// A model request is about to be sent (1-based within the turn).
    RequestStarted { request: usize },
    /// An item was appended to history.
    Committed(Item),
    /// Several items produced at once (an accepted speculation) were appended; they may
    /// be persisted with one write.
    CommittedMany(Vec<Item>),
    /// An approved tool call starts executing.
    ToolStarted {
        name: String,
        ctx: ToolExecutionContext,
    },
    /// Usage reported for one request.
    Usage(UsageEvent),
    /// A compaction ran (or was attempted); when `edit` is set, history changed.
    Compacted(Compaction),
    /// Tool calls with these ids were written as text and recovered; their `Committed`
    /// events follow.
    CallsRecovered(Vec<String>),
    /// The turn repeats itself; the next request asks for a text answer.
    LoopDetected { reason: String },
    /// The response failed in a way that is worth one more try (a local server's parser
    /// rejected the output, or nothing came back); the request is sent again.
    Retrying { reason: String },
}

pub type Observer = Arc<dyn Fn(&WorkerEvent) + Send + Sync>;

#[derive(Debug, Clone, PartialEq)]
pub enum TurnStatus {
    /// The model answered without further tool calls.
    Completed {
        stop_reason: Option<StopReason>,
    },
    /// The last stream ended without a finish signal; its text is kept.
    Incomplete,
    /// The turn used `max_turns` requests and stopped with tool results pending.
    MaxTurns,
    /// An interceptor or hook refused the prompt; nothing was sent.
    PromptCancelled {
        reason: String,
    },
    Cancelled,
    /// The provider failed mid-stream.
    Failed {
        error: ErrorEvent,
    },
    /// An interceptor ended the turn before a call ([`crate::ToolAction::Stop`]).
    Stopped {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    /// Usage summed over the turn's requests.
    pub usage: UsageEvent,
    pub requests: usize,
}

pub struct Worker {
    client: Client,
    /// Read once per request (see [`SharedTools`]).
    tools: SharedTools,
    interceptors: Vec<Arc<dyn Interceptor>>,
    history: Vec<Item>,
    responder: Responder,
    config: WorkerConfig,
    observer: Option<Observer>,
    batch_ids: BatchIds,
    guard: Option<Arc<dyn ContextGuard>>,
    /// `(items, prompt tokens)` of the last request the provider reported usage for.
    last_report: Option<(usize, u64)>,
    durability: Option<Arc<dyn Durability>>,
    /// Tool definitions offered instead of the tool set's own (a fork keeps the main
    /// request's bytes; calls to tools it cannot run are its interceptors' to stop).
    offered: Option<Vec<saki_llm_client::ToolDefinition>>,
}

impl Worker {
    pub fn new(client: Client, tools: Arc<ToolServer>, config: WorkerConfig) -> Self {
        Self {
            client,
            tools: SharedTools::from_arc(tools),
            interceptors: Vec::new(),
            history: Vec::new(),
            responder: Responder::new(),
            config,
            observer: None,
            batch_ids: BatchIds::new(),
            guard: None,
            last_report: None,
            durability: None,
            offered: None,
        }
    }

    /// Offers exactly `definitions` in every request, whatever tools the Worker runs: a
    /// forked query sends the main request's tool list byte for byte, so the provider's
    /// prompt cache holds, while its own tools run the calls.
    pub fn offer_tools(&mut self, definitions: Vec<saki_llm_client::ToolDefinition>) {
        self.offered = Some(definitions);
    }

    /// The settings requests are built from.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// Numbers batches from `ids`, a counter shared with other Workers of the session, so
    /// no two batches share an id.
    pub fn set_batch_ids(&mut self, ids: BatchIds) {
        self.batch_ids = ids;
    }

    /// Offers the tools of `tools` from the next request on; whoever holds a clone may
    /// add or remove tools while the session runs (MCP servers connecting late).
    pub fn set_shared_tools(&mut self, tools: SharedTools) {
        self.tools = tools;
    }

    /// The handle to the tool set this Worker offers.
    pub fn shared_tools(&self) -> SharedTools {
        self.tools.clone()
    }

    /// How to wait for committed items to be durable; awaited before every request and
    /// at the end of a turn.
    pub fn set_durability(&mut self, durability: Arc<dyn Durability>) {
        self.durability = Some(durability);
    }

    /// Resolves once every item committed so far is durable (at once without a
    /// [`Durability`]). For items committed outside a turn ([`Worker::commit_items`]).
    pub async fn flushed(&self) {
        if let Some(durability) = &self.durability {
            durability.flushed().await;
        }
    }

    /// Installs the compaction policy consulted before every request and after every turn.
    pub fn set_context_guard(&mut self, guard: Arc<dyn ContextGuard>) {
        self.guard = Some(guard);
    }

    pub fn add_interceptor(&mut self, interceptor: Arc<dyn Interceptor>) {
        self.interceptors.push(interceptor);
    }

    pub fn set_observer(&mut self, observer: Observer) {
        self.observer = Some(observer);
    }

    /// The Timeline every response streams through, for live rendering handlers.
    pub fn timeline_mut(&mut self) -> &mut Timeline {
        self.responder.timeline_mut()
    }

    pub fn history(&self) -> &[Item] {
        &self.history
    }

    /// The model the next request uses (`/model`).
    pub fn set_model(&mut self, model: String) {
        self.config.model = model;
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// Asks every request for JSON matching `schema` (see [`WorkerConfig::response_schema`]).
    pub fn set_response_schema(&mut self, schema: Option<saki_llm_client::ResponseSchema>) {
        self.config.response_schema = schema;
    }

    /// Switches to another model (`/model`) with everything that belongs to it: its output
    /// bound, temperature, thinking, text-call recovery, first-call rule and vision. The
    /// session's system prompt, response schema and turn limit stay.
    pub fn switch_model(&mut self, to: &WorkerConfig) {
        let kept = (
            self.config.system_prompt.take(),
            self.config.response_schema.take(),
            self.config.max_turns,
        );
        self.config = to.clone();
        (
            self.config.system_prompt,
            self.config.response_schema,
            self.config.max_turns,
        ) = kept;
    }

    pub fn vision(&self) -> bool {
        self.config.vision
    }

    /// Sets the system prompt (a resumed session brings its own).
    pub fn set_system_prompt(&mut self, system_prompt: Option<String>) {
        self.config.system_prompt = system_prompt;
    }

    /// Commits items produced elsewhere (an accepted speculation) as if this Worker had
    /// produced them: each is announced, so it is persisted like any turn.
    pub fn commit_items(&mut self, items: Vec<Item>) {
        self.batch_ids.observe(&items);
        self.emit(WorkerEvent::CommittedMany(items.clone()));
        self.history.extend(items);
    }

    /// The session's batch-id counter, for work that makes tool calls outside this Worker
    /// (speculation): ids drawn from it never repeat the Worker's.
    pub fn batch_ids(&self) -> BatchIds {
        self.batch_ids.clone()
    }

    /// The client this Worker sends requests with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Replaces history (e.g. a resumed session).
    pub fn set_history(&mut self, history: Vec<Item>) {
        self.batch_ids.observe(&history);
        self.history = history;
        self.last_report = None;
    }

    /// The request the next model call would send.
    pub fn build_request(&self) -> Request {
        Request {
            model: self.config.model.clone(),
            system: self.config.system_prompt.clone(),
            messages: to_messages_with(&self.history, self.config.vision),
            tools: self
                .offered
                .clone()
                .unwrap_or_else(|| self.tools.definitions()),
            max_output_tokens: self.config.max_output_tokens,
            temperature: self.config.temperature,
            thinking: self.config.thinking,
            response_schema: self.config.response_schema.clone(),
            tool_choice: Default::default(),
        }
    }

    fn emit(&self, event: WorkerEvent) {
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }

    fn commit(&mut self, item: Item) {
        self.emit(WorkerEvent::Committed(item.clone()));
        self.history.push(item);
    }

    /// Runs one turn for the person's text. `Err` only for failures before the model
    /// answered at all (after retries); the user item is in history either way. Every
    /// item of the turn, and the context guard's upkeep after it, is durable when it
    /// returns.
    pub async fn run_turn(
        &mut self,
        text: impl Into<String>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, ClientError> {
        let outcome = self.turn(text.into(), cancel.clone()).await;
        // Upkeep once the turn has ended (also a failed or cancelled one: its items are
        // in history), so the next request, and a fork of this history, start from it.
        if matches!(&outcome, Ok(o) if !matches!(o.status, TurnStatus::PromptCancelled { .. })) {
            self.after_turn(&cancel).await;
        }
        self.flushed().await;
        outcome
    }

    async fn turn(
        &mut self,
        text: String,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, ClientError> {
        let user = Item::user(text);
        let asked = match &user {
            Item::User { text } => text.chars().take(300).collect::<String>(),
            _ => String::new(),
        };
        let mut extras = Vec::new();
        for interceptor in &self.interceptors {
            match interceptor.on_prompt_submit(&user).await {
                PromptAction::Continue => {}
                PromptAction::ContinueWith(items) => extras.extend(items),
                PromptAction::Cancel(reason) => {
                    return Ok(TurnOutcome {
                        status: TurnStatus::PromptCancelled { reason },
                        usage: UsageEvent::default(),
                        requests: 0,
                    });
                }
            }
        }
        self.commit(user);
        for item in extras {
            self.commit(item);
        }
        let mut usage = Usage::default();
        let mut requests = 0;
        let mut guard = LoopGuard::new();
        if self.config.tool_call_recovery {
            let tools = self.tools.snapshot();
            guard.stop_tours(tools.names().into_iter().map(String::from).collect());
        }
        let mut loop_reported = false;
        // One answer per turn that only calls a tool that does not exist is answered as
        // that failed call; a model that invents another after it is done.
        let mut unknown_call_answered = false;
        let mut require_real_call = false;
        loop {
            // Cancelled while the last batch ran: no request goes out.
            if cancel.is_cancelled() {
                return Ok(usage.outcome(TurnStatus::Cancelled, requests));
            }
            if requests >= self.config.max_turns {
                return Ok(usage.outcome(TurnStatus::MaxTurns, requests));
            }
            requests += 1;
            self.compact(CompactionTrigger::Auto, &cancel).await;
            self.emit(WorkerEvent::RequestStarted { request: requests });
            let mut request = self.build_request();
            // After a call to a tool that does not exist, the model meant to call one:
            // its next answer is held to a call to one that does (once per turn).
            let require = (requests == 1 && self.config.first_tool_call_required)
                || std::mem::take(&mut require_real_call);
            if require && self.config.tool_call_recovery {
                crate::first_call::require_call(&mut request);
            }
            let mut asked_for_call = false;
            if let Some(reason) = guard.stop_reason().map(str::to_owned) {
                // One call an interceptor asks for before the answer (a change the
                // request asked for and the turn has not made), or the words the answer
                // is asked for in (a change made), at the first stop only.
                let action = if !loop_reported && self.config.tool_call_recovery {
                    self.loop_stop_action().await
                } else {
                    LoopStopAction::Answer
                };
                let (last_call, answer_instruction) = match action {
                    LoopStopAction::Call { tools, instruction } => {
                        (Some((tools, instruction)), None)
                    }
                    LoopStopAction::AnswerWith(instruction) => (None, Some(instruction)),
                    LoopStopAction::Answer => (None, None),
                };
                if !loop_reported {
                    loop_reported = true;
                    self.emit(WorkerEvent::LoopDetected {
                        reason: reason.clone(),
                    });
                    // Said in history, where the model reads it (and a resumed session
                    // sees it): small models ignore a tool choice they cannot see.
                    // The request itself is repeated: a small model loses sight of it.
                    let instruction = last_call
                        .as_ref()
                        .map(|(_, instruction)| instruction)
                        .or(answer_instruction.as_ref());
                    self.commit(Item::system(match instruction {
                        Some(instruction) => {
                            format!("[{reason}. {instruction} The request: {asked}]")
                        }
                        None => format!(
                            "[{reason}. Do not call tools again in this turn. Answer this \
                             request in plain text, using what the tool results above show: \
                             {asked}]"
                        ),
                    }));
                }
                request = self.build_request();
                asked_for_call = last_call.is_some_and(|(tools, instruction)| {
                    fold_for_call(&mut request, &self.history, &tools, &instruction)
                });
                match (asked_for_call, self.config.tool_call_recovery) {
                    (true, _) => {}
                    (false, true) => {
                        fold_for_answer(&mut request, &self.history, answer_instruction.as_deref())
                    }
                    (false, false) => request.tool_choice = ToolChoice::None,
                }
                // The answer is a short summary; a model that writes calls as text anyway
                // would otherwise go on until its output limit.
                request.max_output_tokens =
                    Some(request.max_output_tokens.map_or(1024, |m| m.min(1024)));
            }
            let sent_items = self.history.len();
            // History first, durably: what this request carries is on disk before it goes.
            self.flushed().await;
            self.responder.set_unknown_calls(!unknown_call_answered);
            let response = self.respond(&request, &cancel).await?;
            let invented = response.content.iter().any(|part| {
                matches!(part, ContentPart::ToolUse { id, name, .. }
                    if response.recovered.contains(id)
                        && !request.tools.iter().any(|t| &t.name == name))
            });
            require_real_call = invented && !unknown_call_answered;
            unknown_call_answered |= invented;
            if !response.recovered.is_empty() {
                self.emit(WorkerEvent::CallsRecovered(response.recovered.clone()));
            }
            if let Some(prompt) = response.usage.prompt_tokens(self.client.config().wire_api) {
                self.last_report = Some((sent_items, prompt));
            }
            usage.add(&response.usage);
            if !response.usage.is_empty() {
                self.emit(WorkerEvent::Usage(response.usage));
            }
            let calls = self.commit_response(&response);
            match response.status {
                ResponseStatus::Cancelled => {
                    self.synthetic_results(
                        &calls,
                        ToolResultStatus::Cancelled,
                        "cancelled by the user before it ran",
                    );
                    return Ok(usage.outcome(TurnStatus::Cancelled, requests));
                }
                ResponseStatus::Failed | ResponseStatus::Started => {
                    self.synthetic_results(
                        &calls,
                        ToolResultStatus::Skipped,
                        "not run: the response failed",
                    );
                    let error = response.error.clone().unwrap_or(ErrorEvent {
                        code: None,
                        message: "the response failed".into(),
                    });
                    return Ok(usage.outcome(TurnStatus::Failed { error }, requests));
                }
                ResponseStatus::Completed | ResponseStatus::Incomplete => {}
            }
            if calls.is_empty() {
                // Told once that a tool does not exist, a small model that "answers" with
                // another invented call is done but cannot say so: its answer is asked
                // for in text, as after a loop, rather than shown as a JSON object.
                if self.config.tool_call_recovery
                    && unknown_call_answered
                    && guard.stop_reason().is_none()
                    && !request.tools.is_empty()
                {
                    if let Some(name) = only_unknown_call(&response, &request) {
                        guard.stop_with(format!(
                            "the answer was only a call to `{name}`, a tool that does not \
                             exist, after the turn was told which tools do"
                        ));
                        continue;
                    }
                }
                let (asked_again, more) = self.turn_end().await;
                // An answer that is none, with nothing else to do about it: asked for
                // once more, as after a loop.
                if let (Some(reason), None) = (asked_again, &more) {
                    if guard.stop_reason().is_none() && self.config.tool_call_recovery {
                        guard.stop_with(reason);
                        continue;
                    }
                }
                match more {
                    Some((items, call)) => {
                        for item in items {
                            self.commit(item);
                        }
                        if let Some(call) = call {
                            let end = self.run_own_call(call, &cancel, &mut guard).await;
                            if let Some(status) = end.turn_status() {
                                return Ok(usage.outcome(status, requests));
                            }
                        }
                        continue;
                    }
                    None => {
                        let status = match response.status {
                            ResponseStatus::Incomplete => TurnStatus::Incomplete,
                            _ => TurnStatus::Completed {
                                stop_reason: response.stop_reason,
                            },
                        };
                        return Ok(usage.outcome(status, requests));
                    }
                }
            }
            // The calls are on disk before any runs: a kill mid-call then leaves a call
            // whose effect resume can judge, never an effect with no record.
            self.flushed().await;
            let end = self.run_batch(calls, &cancel, &mut guard).await;
            if let Some(status) = end.turn_status() {
                return Ok(usage.outcome(status, requests));
            }
            // The call a stopped turn was asked for is made: its result is the turn's
            // last word. Asked to sum it up, a small model describes how the change could
            // be made, as if it were not.
            let made = |item: &Item| {
                matches!(
                    item,
                    Item::ToolResult {
                        status: ToolResultStatus::Success,
                        ..
                    }
                )
            };
            if asked_for_call && self.history[sent_items..].iter().any(made) {
                // Unless a call is still owed at the turn's end (another file a request
                // over several files names): made, it is answered as any such call.
                if let (_, Some((_, Some(call)))) = self.turn_end().await {
                    let end = self.run_own_call(call, &cancel, &mut guard).await;
                    if let Some(status) = end.turn_status() {
                        return Ok(usage.outcome(status, requests));
                    }
                    continue;
                }
                let status = TurnStatus::Completed {
                    stop_reason: response.stop_reason,
                };
                return Ok(usage.outcome(status, requests));
            }
        }
    }

    /// What the interceptors say once a response has no calls: why the answer is to be
    /// asked for again, if it is (the first reason given; it counts only when nothing
    /// else is to be done); and items to commit with at most one call to make.
    async fn turn_end(&self) -> (Option<String>, Option<(Vec<Item>, Option<OwnCall>)>) {
        let mut more = Vec::new();
        let mut call = None;
        let mut asked_again = None;
        for interceptor in &self.interceptors {
            match interceptor.on_turn_end(&self.history).await {
                TurnEndAction::Finish => {}
                TurnEndAction::AskAgain(reason) => {
                    asked_again.get_or_insert(reason);
                }
                TurnEndAction::ContinueWithMessages(items) => more.extend(items),
                TurnEndAction::Call(own) if call.is_none() => call = Some(own),
                TurnEndAction::Call(own) => {
                    tracing::debug!(name = %own.name, "a second call at turn end is not made");
                }
            }
        }
        let more = (!more.is_empty() || call.is_some()).then_some((more, call));
        (asked_again, more)
    }

    /// What the first interceptor that asks for more than the usual answer wants of a
    /// stopped turn's last request.
    async fn loop_stop_action(&self) -> LoopStopAction {
        for interceptor in &self.interceptors {
            match interceptor.on_loop_stop(&self.history).await {
                LoopStopAction::Answer => {}
                other => return other,
            }
        }
        LoopStopAction::Answer
    }

    /// Makes `call` as a batch of its own, recorded like a call of the model's, then says
    /// why saki made it.
    async fn run_own_call(
        &mut self,
        call: OwnCall,
        cancel: &CancellationToken,
        guard: &mut LoopGuard,
    ) -> BatchEnd {
        let batch_id = self.batch_ids.next();
        let ctx = ToolExecutionContext {
            call_id: format!("{}{batch_id}", crate::interceptor::OWN_CALL_PREFIX),
            batch_id,
            call_index: 0,
        };
        self.commit(Item::ToolCall {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            signature: None,
            ctx: ctx.clone(),
        });
        self.flushed().await;
        let pending = PendingCall {
            name: call.name,
            arguments: call.arguments,
            ctx,
        };
        let end = self.run_batch(vec![pending], cancel, guard).await;
        if matches!(end, BatchEnd::Ran) {
            self.commit(Item::system(call.note));
        }
        end
    }

    /// Commits the response's content in block order; returns its tool calls with their
    /// batch context.
    fn commit_response(&mut self, response: &AssistantResponse) -> Vec<PendingCall> {
        let has_calls = response
            .content
            .iter()
            .any(|p| matches!(p, ContentPart::ToolUse { .. }));
        let batch_id = if has_calls {
            self.batch_ids.next()
        } else {
            String::new()
        };
        let mut calls = Vec::new();
        for part in &response.content {
            let item = match part {
                ContentPart::Text { text } if text.is_empty() => continue,
                ContentPart::Text { text } => Item::AssistantText { text: text.clone() },
                ContentPart::Thinking { text, signature } => Item::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                },
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
                    calls.push(PendingCall {
                        name: name.clone(),
                        arguments: arguments.clone(),
                        ctx: ctx.clone(),
                    });
                    Item::ToolCall {
                        name: name.clone(),
                        arguments: arguments.clone(),
                        signature: signature.clone(),
                        ctx,
                    }
                }
                ContentPart::ToolResult { .. } | ContentPart::Image { .. } => continue,
            };
            self.commit(item);
        }
        calls
    }

    fn synthetic_results(
        &mut self,
        calls: &[PendingCall],
        status: ToolResultStatus,
        message: &str,
    ) {
        for call in calls {
            self.commit(Item::ToolResult {
                name: call.name.clone(),
                content: message.to_owned(),
                status,
                ctx: call.ctx.clone(),
            });
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct PendingCall {
    pub(crate) name: String,
    pub(crate) arguments: String,
    pub(crate) ctx: ToolExecutionContext,
}

/// The invented tool's name when `response`'s whole text is one call to a tool that
/// `request` did not offer (see [`crate::recovery::unknown_call`]).
fn only_unknown_call(response: &AssistantResponse, request: &Request) -> Option<String> {
    let offered: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
    crate::recovery::unknown_call(&response.text(), &offered).map(|(name, _)| name)
}
