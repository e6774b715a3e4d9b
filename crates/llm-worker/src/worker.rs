//! The Worker loop: submit -> stream -> collect -> run the response's tool calls as one
//! batch (in parallel) -> repeat until a response has no tool calls.
//!
//! History first: every item is committed (and announced through the observer) before
//! the next request is built from history, so a resumed session sees what the model saw.
//! Whatever happens — denial, failure, cancellation — every tool call gets a result.

use crate::compaction::{Compaction, CompactionTrigger, ContextGuard, ContextView};
use crate::interceptor::{
    Interceptor, PromptAction, ToolAction, ToolCallInfo, ToolResultInfo, TurnEndAction,
};
use crate::item::{to_messages, Item, ToolResultStatus};
use crate::responder::{AssistantResponse, Responder};
use crate::timeline::Timeline;
use crate::tool::{ToolExecutionContext, ToolServer};
use futures::stream::{FuturesUnordered, StreamExt};
use saki_llm_client::{
    CancellationToken, Client, ClientError, ContentPart, ErrorEvent, Request, ResponseStatus,
    StopReason, ThinkingConfig, UsageEvent,
};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub model: String,
    pub system_prompt: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub thinking: Option<ThinkingConfig>,
    /// Model requests allowed in one turn.
    pub max_turns: usize,
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
    tools: Arc<ToolServer>,
    interceptors: Vec<Arc<dyn Interceptor>>,
    history: Vec<Item>,
    responder: Responder,
    config: WorkerConfig,
    observer: Option<Observer>,
    batches: u64,
    guard: Option<Arc<dyn ContextGuard>>,
    /// `(items, prompt tokens)` of the last request the provider reported usage for.
    last_report: Option<(usize, u64)>,
}

impl Worker {
    pub fn new(client: Client, tools: Arc<ToolServer>, config: WorkerConfig) -> Self {
        Self {
            client,
            tools,
            interceptors: Vec::new(),
            history: Vec::new(),
            responder: Responder::new(),
            config,
            observer: None,
            batches: 0,
            guard: None,
            last_report: None,
        }
    }

    /// Installs the compaction policy consulted before every request.
    pub fn set_context_guard(&mut self, guard: Arc<dyn ContextGuard>) {
        self.guard = Some(guard);
    }

    /// Runs the context guard now. Auto: only compacts when history is over the
    /// threshold; manual: the person asked. An applied compaction is committed (observers
    /// see `Compacted` with its edit) before this returns.
    pub async fn compact(
        &mut self,
        trigger: CompactionTrigger,
        cancel: &CancellationToken,
    ) -> Option<Compaction> {
        let guard = self.guard.clone()?;
        let tools = self.tools.definitions();
        let view = ContextView {
            history: &self.history,
            system_prompt: self.config.system_prompt.as_deref(),
            tools: &tools,
            last_report: self.last_report,
            cancel,
        };
        let mut compaction = guard.check(view, trigger).await?;
        if let Some(edit) = &compaction.edit {
            if let Err(e) = edit.apply(&mut self.history) {
                tracing::warn!(error = %e, "compaction edit refused");
                compaction.edit = None;
            } else {
                // The report no longer describes the new history's prefix.
                self.last_report = None;
            }
        }
        self.emit(WorkerEvent::Compacted(compaction.clone()));
        Some(compaction)
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

    /// Sets the system prompt (a resumed session brings its own).
    pub fn set_system_prompt(&mut self, system_prompt: Option<String>) {
        self.config.system_prompt = system_prompt;
    }

    /// Commits items produced elsewhere (an accepted speculation) as if this Worker had
    /// produced them: each is announced, so it is persisted like any turn.
    pub fn commit_items(&mut self, items: Vec<Item>) {
        self.emit(WorkerEvent::CommittedMany(items.clone()));
        self.history.extend(items);
    }

    /// The client this Worker sends requests with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Replaces history (e.g. a resumed session).
    pub fn set_history(&mut self, history: Vec<Item>) {
        self.history = history;
        self.last_report = None;
    }

    /// The request the next model call would send.
    pub fn build_request(&self) -> Request {
        Request {
            model: self.config.model.clone(),
            system: self.config.system_prompt.clone(),
            messages: to_messages(&self.history),
            tools: self.tools.definitions(),
            max_output_tokens: self.config.max_output_tokens,
            temperature: self.config.temperature,
            thinking: self.config.thinking,
            response_schema: None,
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
    /// answered at all (after retries); the user item is in history either way.
    pub async fn run_turn(
        &mut self,
        text: impl Into<String>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, ClientError> {
        let user = Item::user(text);
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
        loop {
            if requests >= self.config.max_turns {
                return Ok(usage.outcome(TurnStatus::MaxTurns, requests));
            }
            requests += 1;
            self.compact(CompactionTrigger::Auto, &cancel).await;
            self.emit(WorkerEvent::RequestStarted { request: requests });
            let request = self.build_request();
            let sent_items = self.history.len();
            let response = self
                .responder
                .respond(&self.client, &request, cancel.clone())
                .await?;
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
                match self.turn_end().await {
                    Some(items) => {
                        for item in items {
                            self.commit(item);
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
            if self.run_batch(calls, &cancel).await {
                return Ok(usage.outcome(TurnStatus::Cancelled, requests));
            }
        }
    }

    async fn turn_end(&self) -> Option<Vec<Item>> {
        let mut more = Vec::new();
        for interceptor in &self.interceptors {
            if let TurnEndAction::ContinueWithMessages(items) =
                interceptor.on_turn_end(&self.history).await
            {
                more.extend(items);
            }
        }
        (!more.is_empty()).then_some(more)
    }

    /// Commits the response's content in block order; returns its tool calls with their
    /// batch context.
    fn commit_response(&mut self, response: &AssistantResponse) -> Vec<PendingCall> {
        let has_calls = response
            .content
            .iter()
            .any(|p| matches!(p, ContentPart::ToolUse { .. }));
        let batch_id = if has_calls {
            self.batches += 1;
            format!("batch_{}", self.batches)
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
                ContentPart::ToolResult { .. } => continue,
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

    /// Runs one batch. Returns true when the person cancelled it.
    async fn run_batch(&mut self, calls: Vec<PendingCall>, cancel: &CancellationToken) -> bool {
        let mut results: Vec<Option<(String, ToolResultStatus)>> = vec![None; calls.len()];
        let mut infos: Vec<Option<ToolCallInfo>> = vec![None; calls.len()];
        // Validate and ask the interceptors, in call order, before anything runs.
        for (i, call) in calls.iter().enumerate() {
            let input = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                Ok(v @ serde_json::Value::Object(_)) => v,
                Ok(_) => {
                    results[i] = Some((
                        format!(
                            "invalid arguments for `{}`: expected a JSON object, got {}",
                            call.name, call.arguments
                        ),
                        ToolResultStatus::Error,
                    ));
                    continue;
                }
                Err(e) => {
                    results[i] = Some((
                        format!(
                            "invalid JSON arguments for `{}`: {e}. The arguments were: {}",
                            call.name, call.arguments
                        ),
                        ToolResultStatus::Error,
                    ));
                    continue;
                }
            };
            if self.tools.get(&call.name).is_none() {
                results[i] = Some((
                    format!(
                        "unknown tool `{}`; available tools: {}",
                        call.name,
                        self.tools.names().join(", ")
                    ),
                    ToolResultStatus::Error,
                ));
                continue;
            }
            let info = ToolCallInfo {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                input,
                ctx: call.ctx.clone(),
            };
            for interceptor in &self.interceptors {
                if let ToolAction::Deny(reason) = interceptor.pre_tool_call(&info).await {
                    results[i] = Some((format!("denied: {reason}"), ToolResultStatus::Denied));
                    break;
                }
            }
            infos[i] = Some(info);
        }
        // Run the approved calls in parallel.
        let mut running = FuturesUnordered::new();
        for (i, call) in calls.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            self.emit(WorkerEvent::ToolStarted {
                name: call.name.clone(),
                ctx: call.ctx.clone(),
            });
            let tools = Arc::clone(&self.tools);
            let (name, args, ctx) = (call.name.clone(), call.arguments.clone(), call.ctx.clone());
            running.push(async move { (i, tools.call_tool(&name, &args, ctx).await) });
        }
        let mut cancelled = false;
        while !running.is_empty() {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    cancelled = true;
                    break;
                }
                Some((i, result)) = running.next() => {
                    results[i] = Some(match result {
                        Ok(output) => (output.content, ToolResultStatus::Success),
                        Err(e) => (e.to_string(), ToolResultStatus::Error),
                    });
                }
            }
        }
        // Dropping the unfinished futures stops them (tools clean up on drop).
        drop(running);
        for (i, call) in calls.iter().enumerate() {
            let (content, status) = results[i].take().unwrap_or_else(|| {
                (
                    "cancelled by the user while running".to_owned(),
                    ToolResultStatus::Cancelled,
                )
            });
            if let Some(info) = infos[i].take() {
                let result = ToolResultInfo {
                    call: info,
                    content: content.clone(),
                    status,
                };
                for interceptor in &self.interceptors {
                    interceptor.post_tool_call(&result).await;
                }
            }
            self.commit(Item::ToolResult {
                name: call.name.clone(),
                content,
                status,
                ctx: call.ctx.clone(),
            });
        }
        cancelled
    }
}

#[derive(Debug, Clone)]
struct PendingCall {
    name: String,
    arguments: String,
    ctx: ToolExecutionContext,
}

#[derive(Default)]
struct Usage(UsageEvent);

impl Usage {
    fn add(&mut self, u: &UsageEvent) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        }
        sum(&mut self.0.input_tokens, u.input_tokens);
        sum(&mut self.0.output_tokens, u.output_tokens);
        sum(&mut self.0.total_tokens, u.total_tokens);
        sum(
            &mut self.0.cache_read_input_tokens,
            u.cache_read_input_tokens,
        );
        sum(
            &mut self.0.cache_creation_input_tokens,
            u.cache_creation_input_tokens,
        );
    }

    fn outcome(&self, status: TurnStatus, requests: usize) -> TurnOutcome {
        TurnOutcome {
            status,
            usage: self.0,
            requests,
        }
    }
}
