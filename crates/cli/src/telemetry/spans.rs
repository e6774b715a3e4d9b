//! Spans made from engine events: `turn` (the parent of the rest of its turn),
//! `model_request`, `tool_call`, and `speculation`, which stays open from its start until
//! its fate is known (a boundary or an abort at its end; accepted or not once the person
//! sends their next prompt).

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Span, Tracer};
use saki_engine::{EngineEvent, SpecOutcome, SpecState, TurnEnd};
use saki_llm_worker::{Item, ToolResultStatus, WorkerEvent};
use std::collections::HashMap;
use std::time::Instant;

/// Text attributes are cut to this many bytes (a span is not a transcript).
const MAX_CONTENT: usize = 4096;

pub struct Spans {
    tracer: Tracer,
    log_content: bool,
    model: String,
    turn: Option<Context>,
    request: Option<Span>,
    tools: HashMap<String, (Span, Instant)>,
    /// Arguments of calls not started yet, by call id (with `log_content`).
    arguments: HashMap<String, String>,
    speculation: Option<(Span, Instant)>,
}

fn cut(text: &str) -> String {
    saki_tools::common::prefix_at_boundary(text, MAX_CONTENT).to_owned()
}

fn status_name(status: ToolResultStatus) -> &'static str {
    match status {
        ToolResultStatus::Success => "success",
        ToolResultStatus::Error => "error",
        ToolResultStatus::Denied => "denied",
        ToolResultStatus::Cancelled => "cancelled",
        ToolResultStatus::Skipped => "skipped",
    }
}

impl Spans {
    pub fn new(tracer: Tracer, log_content: bool) -> Self {
        Self {
            tracer,
            log_content,
            model: String::new(),
            turn: None,
            request: None,
            tools: HashMap::new(),
            arguments: HashMap::new(),
            speculation: None,
        }
    }

    fn child(&self, name: &'static str, attributes: Vec<KeyValue>) -> Span {
        let builder = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes);
        match &self.turn {
            Some(cx) => self.tracer.build_with_context(builder, cx),
            None => self.tracer.build_with_context(builder, &Context::new()),
        }
    }

    pub fn observe(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::Status(status) => self.model = status.model.clone(),
            EngineEvent::TurnStarted => self.turn_started(),
            EngineEvent::Worker(event) => self.worker(event),
            EngineEvent::TurnFinished { end, .. } => self.turn_finished(end),
            EngineEvent::Speculation(SpecState::Running) => {
                self.end_speculation(false, 0);
                let span = self.child(
                    "speculation",
                    vec![KeyValue::new("gen_ai.request.model", self.model.clone())],
                );
                self.speculation = Some((span, Instant::now()));
            }
            EngineEvent::SpeculationEnded(ended) => {
                let Some((span, _)) = self.speculation.as_mut() else {
                    return;
                };
                span.set_attribute(KeyValue::new(
                    "saki.speculation.outcome",
                    match ended.outcome {
                        SpecOutcome::Completed => "completed",
                        SpecOutcome::Boundary => "boundary",
                        SpecOutcome::Aborted => "aborted",
                        SpecOutcome::Discarded => "discarded",
                    },
                ));
                if let Some(kind) = ended.boundary {
                    span.set_attribute(KeyValue::new("saki.speculation.boundary", kind));
                }
                span.set_attribute(KeyValue::new(
                    "saki.speculation.commands_run",
                    ended.commands_run as i64,
                ));
                if self.log_content {
                    span.set_attribute(KeyValue::new(
                        "saki.speculation.suggestion",
                        cut(&ended.suggestion),
                    ));
                }
                // A completed one waits for the person: accepted or not.
                if ended.outcome != SpecOutcome::Completed {
                    self.end_speculation(false, 0);
                }
            }
            EngineEvent::Accepted { saved_ms, .. } => self.end_speculation(true, *saved_ms),
            _ => {}
        }
    }

    fn turn_started(&mut self) {
        self.end_turn(None);
        // A ready speculation not accepted by now was not used.
        self.end_speculation(false, 0);
        let span = self
            .tracer
            .span_builder("turn")
            .with_kind(SpanKind::Internal)
            .with_attributes(vec![KeyValue::new(
                "gen_ai.request.model",
                self.model.clone(),
            )])
            .start(&self.tracer);
        self.turn = Some(Context::new().with_span(span));
    }

    fn worker(&mut self, event: &WorkerEvent) {
        match event {
            WorkerEvent::RequestStarted { request } => {
                self.end_request();
                let span = self.child(
                    "model_request",
                    vec![
                        KeyValue::new("gen_ai.request.model", self.model.clone()),
                        KeyValue::new("saki.request.index", *request as i64),
                    ],
                );
                self.request = Some(span);
            }
            WorkerEvent::Usage(usage) => {
                if let Some(span) = self.request.as_mut() {
                    let n = |v: Option<u64>| v.unwrap_or(0) as i64;
                    span.set_attributes([
                        KeyValue::new("gen_ai.usage.input_tokens", n(usage.input_tokens)),
                        KeyValue::new("gen_ai.usage.output_tokens", n(usage.output_tokens)),
                        KeyValue::new(
                            "gen_ai.usage.cache_read_input_tokens",
                            n(usage.cache_read_input_tokens),
                        ),
                        KeyValue::new(
                            "gen_ai.usage.cache_creation_input_tokens",
                            n(usage.cache_creation_input_tokens),
                        ),
                    ]);
                }
                self.end_request();
            }
            WorkerEvent::ToolStarted { name, ctx } => {
                self.end_request();
                let mut attributes = vec![
                    KeyValue::new("gen_ai.tool.name", name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", ctx.call_id.clone()),
                ];
                if let Some(arguments) = self.arguments.remove(&ctx.call_id) {
                    attributes.push(KeyValue::new("saki.tool.arguments", arguments));
                }
                let span = self.child("tool_call", attributes);
                self.tools
                    .insert(ctx.call_id.clone(), (span, Instant::now()));
            }
            WorkerEvent::Committed(item) => self.committed(item),
            _ => {}
        }
    }

    fn committed(&mut self, item: &Item) {
        match item {
            Item::User { text } if self.log_content => {
                if let Some(cx) = &self.turn {
                    cx.span()
                        .set_attribute(KeyValue::new("saki.prompt", cut(text)));
                }
            }
            Item::AssistantText { text } if self.log_content => {
                if let Some(cx) = &self.turn {
                    cx.span()
                        .set_attribute(KeyValue::new("saki.answer", cut(text)));
                }
            }
            Item::ToolCall { arguments, ctx, .. } if self.log_content => {
                self.arguments.insert(ctx.call_id.clone(), cut(arguments));
            }
            Item::ToolResult {
                name,
                content,
                status,
                ctx,
            } => {
                // A call that never ran (denied, skipped) still gets its span.
                let (mut span, started) = self.tools.remove(&ctx.call_id).unwrap_or_else(|| {
                    let span = self.child(
                        "tool_call",
                        vec![
                            KeyValue::new("gen_ai.tool.name", name.clone()),
                            KeyValue::new("gen_ai.tool.call.id", ctx.call_id.clone()),
                        ],
                    );
                    (span, Instant::now())
                });
                span.set_attribute(KeyValue::new("saki.tool.status", status_name(*status)));
                span.set_attribute(KeyValue::new(
                    "saki.tool.duration_ms",
                    started.elapsed().as_millis() as i64,
                ));
                if self.log_content {
                    span.set_attribute(KeyValue::new("saki.tool.result", cut(content)));
                }
                if *status == ToolResultStatus::Error {
                    span.set_status(Status::error("the tool failed"));
                }
                span.end();
            }
            _ => {}
        }
    }

    fn end_request(&mut self) {
        if let Some(mut span) = self.request.take() {
            span.end();
        }
    }

    fn end_speculation(&mut self, accepted: bool, saved_ms: u64) {
        if let Some((mut span, _)) = self.speculation.take() {
            span.set_attribute(KeyValue::new("saki.speculation.accepted", accepted));
            span.set_attribute(KeyValue::new("saki.speculation.saved_ms", saved_ms as i64));
            span.end();
        }
    }

    fn turn_finished(&mut self, end: &TurnEnd) {
        self.end_turn(Some(end));
    }

    fn end_turn(&mut self, end: Option<&TurnEnd>) {
        self.end_request();
        for (_, (mut span, _)) in self.tools.drain() {
            span.set_attribute(KeyValue::new("saki.tool.status", "unfinished"));
            span.end();
        }
        self.arguments.clear();
        if let Some(cx) = self.turn.take() {
            let span = cx.span();
            if let Some(end) = end {
                span.set_attribute(KeyValue::new("saki.turn.end", turn_end_name(end)));
            }
            span.end();
        }
    }

    /// Ends every open span (the session ends).
    pub fn end_all(&mut self) {
        self.end_turn(None);
        self.end_speculation(false, 0);
    }
}

fn turn_end_name(end: &TurnEnd) -> String {
    let debug = format!("{end:?}");
    let name: String = debug.chars().take_while(|c| c.is_alphanumeric()).collect();
    name.to_ascii_lowercase()
}
