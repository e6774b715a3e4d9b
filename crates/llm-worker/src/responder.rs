//! Runs one model request through a Timeline with the built-in collectors registered
//! and returns the assembled [`AssistantResponse`]. Callers add their own handlers
//! (live rendering, JSON events) to the same Timeline.

use crate::handler::{ErrorKind, Handler, StatusKind};
use crate::recovery::CallFilter;
use crate::timeline::event::{
    ErrorEvent, Event, ResponseStatus, StatusEvent, StopReason, UsageEvent,
};
use crate::timeline::{
    TextBlockCollector, ThinkingBlockCollector, Timeline, ToolCallCollector, UsageCollector,
};
use futures::StreamExt;
use saki_llm_client::{CancellationToken, Client, ClientError, ContentPart, Request};
use std::sync::{Arc, Mutex, PoisonError};

/// What the model answered in one request.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantResponse {
    /// Thinking, text and tool calls in the order the blocks arrived.
    pub content: Vec<ContentPart>,
    pub usage: UsageEvent,
    pub status: ResponseStatus,
    pub stop_reason: Option<StopReason>,
    pub error: Option<ErrorEvent>,
    /// Ids of the tool calls that were written as text and recovered (see
    /// [`crate::recovery`]).
    pub recovered: Vec<String>,
}

impl AssistantResponse {
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn thinking(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Thinking { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// `(id, name, arguments)` of each tool call, in order.
    pub fn tool_calls(&self) -> Vec<(&str, &str, &str)> {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::ToolUse {
                    id,
                    name,
                    arguments,
                    ..
                } => Some((id.as_str(), name.as_str(), arguments.as_str())),
                _ => None,
            })
            .collect()
    }
}

#[derive(Default)]
struct Outcome {
    status: Option<StatusEvent>,
    error: Option<ErrorEvent>,
}

#[derive(Clone, Default)]
struct OutcomeCollector(Arc<Mutex<Outcome>>);

impl OutcomeCollector {
    fn with<R>(&self, f: impl FnOnce(&mut Outcome) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Handler<StatusKind> for OutcomeCollector {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &StatusEvent) {
        if event.status.is_terminal() {
            self.with(|o| o.status = Some(event.clone()));
        }
    }
}

impl Handler<ErrorKind> for OutcomeCollector {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &ErrorEvent) {
        self.with(|o| o.error = Some(event.clone()));
    }
}

pub struct Responder {
    timeline: Timeline,
    /// Recover tool calls written as text (off by default).
    recovery: bool,
    unknown_calls: bool,
    text: TextBlockCollector,
    thinking: ThinkingBlockCollector,
    tools: ToolCallCollector,
    usage: UsageCollector,
    outcome: OutcomeCollector,
}

impl Default for Responder {
    fn default() -> Self {
        Self::new()
    }
}

impl Responder {
    pub fn new() -> Self {
        let text = TextBlockCollector::new();
        let thinking = ThinkingBlockCollector::new();
        let tools = ToolCallCollector::new();
        let usage = UsageCollector::new();
        let outcome = OutcomeCollector::default();
        let mut timeline = Timeline::new();
        timeline
            .on_text_block(text.clone())
            .on_thinking_block(thinking.clone())
            .on_tool_use_block(tools.clone())
            .on_usage(usage.clone())
            .on_status(outcome.clone())
            .on_error(outcome.clone());
        Self {
            timeline,
            recovery: false,
            unknown_calls: false,
            text,
            thinking,
            tools,
            usage,
            outcome,
        }
    }

    /// Recover tool calls the model writes as text, for tools the request offers.
    pub fn set_recovery(&mut self, on: bool) {
        self.recovery = on;
    }

    /// With recovery on: an answer that is nothing but a call to a tool that was not
    /// offered becomes that call (see [`crate::recovery::unknown_call`]).
    pub fn set_unknown_calls(&mut self, on: bool) {
        self.unknown_calls = on;
    }

    /// The Timeline, for registering more handlers (they run after the collectors).
    pub fn timeline_mut(&mut self) -> &mut Timeline {
        &mut self.timeline
    }

    /// Streams `request` and dispatches every event. Errors before the first event
    /// (after retries) are returned; later failures end up in the response's status.
    pub async fn respond(
        &mut self,
        client: &Client,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<AssistantResponse, ClientError> {
        self.reset();
        let mut stream = client.stream(request, cancel).await?;
        let offered = if self.recovery {
            request.tools.iter().map(|t| t.name.clone()).collect()
        } else {
            Vec::new()
        };
        let mut filter = CallFilter::new(offered).with_unknown_calls(self.unknown_calls);
        let mut out = Vec::new();
        while let Some(event) = stream.next().await {
            filter.push(event, &mut out);
            if filter.saturated() {
                // Dropping the stream closes the connection, which stops the generation.
                tracing::debug!("the answer goes on past a call written as text, or repeats one line; stopped reading");
                filter.finish(&mut out);
            }
            for event in out.drain(..) {
                self.timeline.dispatch(&event);
            }
            if filter.saturated() {
                break;
            }
        }
        let mut response = self.finish();
        response.recovered = filter.recovered().to_vec();
        Ok(response)
    }

    /// Dispatches already decoded events (replays, benchmarks) and assembles the response.
    pub fn replay<'a>(&mut self, events: impl IntoIterator<Item = &'a Event>) -> AssistantResponse {
        self.reset();
        for event in events {
            self.timeline.dispatch(event);
        }
        self.finish()
    }

    fn reset(&mut self) {
        self.text.clear();
        self.thinking.clear();
        self.tools.clear();
        self.usage.take();
        self.outcome.with(|o| *o = Outcome::default());
    }

    fn finish(&mut self) -> AssistantResponse {
        if self.timeline.current_block().is_some() {
            self.timeline.abort_current_block();
        }
        let mut indexed: Vec<(usize, ContentPart)> = Vec::new();
        indexed.extend(self.thinking.take_collected().into_iter().map(|t| {
            (
                t.index,
                ContentPart::Thinking {
                    text: t.text,
                    signature: t.signature,
                },
            )
        }));
        indexed.extend(
            self.text
                .take_indexed()
                .into_iter()
                .map(|(i, text)| (i, ContentPart::Text { text })),
        );
        indexed.extend(self.tools.take_collected().into_iter().map(|c| {
            (
                c.index,
                ContentPart::ToolUse {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                    signature: c.signature,
                },
            )
        }));
        indexed.sort_by_key(|(i, _)| *i);
        let (status, error) = self.outcome.with(|o| (o.status.take(), o.error.take()));
        let (status, stop_reason, error) = match status {
            Some(s) => (s.status, s.stop_reason, error),
            // The stream ended without a terminal status: the transport task died.
            None => (
                ResponseStatus::Failed,
                None,
                error.or_else(|| {
                    Some(ErrorEvent {
                        code: None,
                        message: "the event stream ended unexpectedly".into(),
                    })
                }),
            ),
        };
        AssistantResponse {
            content: indexed.into_iter().map(|(_, p)| p).collect(),
            usage: self.usage.take(),
            status,
            stop_reason,
            error,
            recovered: Vec::new(),
        }
    }
}
