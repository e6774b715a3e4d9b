use super::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span as ProtoSpan;
use prost::Message;
use saki_engine::{SpecOutcome, SpecState, SpeculationEnded, TurnEnd};
use saki_llm_client::UsageEvent;
use saki_llm_worker::WorkerEvent;
use saki_llm_worker::{Item, ToolExecutionContext, ToolResultStatus, TurnOutcome, TurnStatus};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// One OTLP request as a collector got it.
struct Received {
    head: String,
    body: Vec<u8>,
}

/// A collector on a loopback port: answers 200 to every request and keeps it.
fn collector() -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            loop {
                let mut head = String::new();
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    head.push_str(&line);
                    line.clear();
                }
                if head.is_empty() {
                    break;
                }
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                keep.lock().unwrap().push(Received { head, body });
                let _ = reader
                    .get_mut()
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            }
        }
    });
    (url, got)
}

fn ctx(id: &str) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: id.into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    }
}

/// A turn with one request, one tool call and a speculation that is then accepted.
fn session(spans: &mut Spans) {
    let events = vec![
        EngineEvent::TurnStarted,
        EngineEvent::Worker(WorkerEvent::Committed(Item::user("SECRET PROMPT"))),
        EngineEvent::Worker(WorkerEvent::RequestStarted { request: 1 }),
        EngineEvent::Worker(WorkerEvent::Usage(UsageEvent {
            input_tokens: Some(1200),
            output_tokens: Some(30),
            cache_read_input_tokens: Some(1000),
            ..UsageEvent::default()
        })),
        EngineEvent::Worker(WorkerEvent::Committed(Item::ToolCall {
            name: "read_file".into(),
            arguments: r#"{"path":"SECRET.txt"}"#.into(),
            signature: None,
            ctx: ctx("c1"),
        })),
        EngineEvent::Worker(WorkerEvent::ToolStarted {
            name: "read_file".into(),
            ctx: ctx("c1"),
        }),
        EngineEvent::Worker(WorkerEvent::Committed(Item::ToolResult {
            name: "read_file".into(),
            content: "SECRET CONTENTS".into(),
            status: ToolResultStatus::Success,
            ctx: ctx("c1"),
        })),
        EngineEvent::TurnFinished {
            note: None,
            end: TurnEnd::Turn(Ok(TurnOutcome {
                status: TurnStatus::Completed { stop_reason: None },
                usage: UsageEvent::default(),
                requests: 1,
            })),
        },
        EngineEvent::Speculation(SpecState::Running),
        EngineEvent::SpeculationEnded(SpeculationEnded {
            suggestion: "run the tests".into(),
            outcome: SpecOutcome::Completed,
            reason: None,
            boundary: None,
            commands_run: 1,
            items: 3,
            files: Vec::new(),
        }),
        EngineEvent::Accepted {
            items: Vec::new(),
            files: Vec::new(),
            commands_run: 1,
            saved_ms: 4200,
            pipelined: None,
        },
    ];
    for event in &events {
        spans.observe(event);
    }
}

fn run(log_content: bool) -> (Vec<ProtoSpan>, Vec<Received>) {
    let (url, got) = collector();
    let config = OtelConfig {
        endpoint: Some(url),
        protocol: None,
        headers: [("x-collector-key".to_owned(), "k123".to_owned())].into(),
        log_content: Some(log_content),
    };
    let telemetry = Telemetry::start(&config).unwrap().unwrap();
    let mut telemetry = telemetry;
    session(&mut telemetry.spans);
    // Shutdown exports everything before it returns.
    telemetry.shutdown();
    let received = std::mem::take(&mut *got.lock().unwrap());
    let spans = received
        .iter()
        .flat_map(|r| {
            ExportTraceServiceRequest::decode(r.body.as_slice())
                .unwrap()
                .resource_spans
        })
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect();
    (spans, received)
}

fn attribute(span: &ProtoSpan, key: &str) -> Option<AnyValue> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.clone()?.value)
}

#[test]
fn spans_reach_the_collector_over_http_protobuf() {
    let (spans, received) = run(false);
    assert!(
        received[0].head.starts_with("POST /v1/traces "),
        "{}",
        received[0].head
    );
    assert!(received[0]
        .head
        .to_ascii_lowercase()
        .contains("x-collector-key: k123"));
    let named = |name: &str| spans.iter().find(|s| s.name == name).unwrap();
    let turn = named("turn");
    let request = named("model_request");
    let tool = named("tool_call");
    let speculation = named("speculation");
    assert_eq!(request.parent_span_id, turn.span_id);
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(
        attribute(request, "gen_ai.usage.input_tokens"),
        Some(AnyValue::IntValue(1200))
    );
    assert_eq!(
        attribute(request, "gen_ai.usage.cache_read_input_tokens"),
        Some(AnyValue::IntValue(1000))
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.name"),
        Some(AnyValue::StringValue("read_file".into()))
    );
    assert_eq!(
        attribute(tool, "saki.tool.status"),
        Some(AnyValue::StringValue("success".into()))
    );
    assert!(attribute(tool, "saki.tool.duration_ms").is_some());
    assert_eq!(
        attribute(speculation, "saki.speculation.accepted"),
        Some(AnyValue::BoolValue(true))
    );
    assert_eq!(
        attribute(speculation, "saki.speculation.saved_ms"),
        Some(AnyValue::IntValue(4200))
    );
    // Nothing of the prompt, the arguments or the file's contents left the machine.
    for r in &received {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("SECRET"), "{body}");
    }
}

#[test]
fn content_is_sent_only_when_asked_for() {
    let (spans, _) = run(true);
    let turn = spans.iter().find(|s| s.name == "turn").unwrap();
    assert_eq!(
        attribute(turn, "saki.prompt"),
        Some(AnyValue::StringValue("SECRET PROMPT".into()))
    );
    let tool = spans.iter().find(|s| s.name == "tool_call").unwrap();
    assert_eq!(
        attribute(tool, "saki.tool.result"),
        Some(AnyValue::StringValue("SECRET CONTENTS".into()))
    );
}

#[test]
fn config_decides_whether_and_how() {
    assert!(Telemetry::start(&OtelConfig::default()).unwrap().is_none());
    let grpc = OtelConfig {
        endpoint: Some("http://127.0.0.1:4317".into()),
        protocol: Some("carrier-pigeon".into()),
        ..OtelConfig::default()
    };
    assert!(matches!(
        Telemetry::start(&grpc),
        Err(TelemetryError::Protocol(_))
    ));
    assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
    assert_eq!(
        traces_url("http://h:4318/v1/traces"),
        "http://h:4318/v1/traces"
    );
}
