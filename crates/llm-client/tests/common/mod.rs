//! Shared test helpers: fold an event stream into a summary, check the stream
//! invariants, and compare against a fixture's `.expect.json`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use saki_llm_client::{BlockMetadata, DeltaContent, Event, ResponseStatus, StopReason, UsageEvent};
use serde_json::Value;
use std::path::PathBuf;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub text: String,
    /// Text of every text delta, also of blocks later aborted (what a person saw).
    pub streamed_text: String,
    pub thinking: String,
    pub tool_calls: Vec<(String, String, String)>,
    pub usage: UsageEvent,
    pub status: Option<ResponseStatus>,
    pub stop_reason: Option<StopReason>,
    pub error: Option<String>,
}

/// Folds events the simple way (committed on stop, dropped on abort) and asserts the
/// invariants of the event model along the way.
pub fn fold(events: &[Event]) -> Summary {
    assert_invariants(events);
    let mut s = Summary::default();
    let mut pending: Option<(BlockMetadata, String)> = None;
    for event in events {
        match event {
            Event::BlockStart(b) => pending = Some((b.metadata.clone(), String::new())),
            Event::BlockDelta(d) => {
                if let DeltaContent::Text(t) = &d.delta {
                    s.streamed_text.push_str(t);
                }
                if let Some((_, buf)) = pending.as_mut() {
                    match &d.delta {
                        DeltaContent::Text(t)
                        | DeltaContent::Thinking(t)
                        | DeltaContent::InputJson(t) => buf.push_str(t),
                        DeltaContent::Signature(_) => {}
                    }
                }
            }
            Event::BlockStop(_) => match pending.take() {
                Some((BlockMetadata::Text, t)) => s.text.push_str(&t),
                Some((BlockMetadata::Thinking, t)) => s.thinking.push_str(&t),
                Some((BlockMetadata::ToolUse { id, name }, args)) => {
                    s.tool_calls.push((id, name, args))
                }
                _ => {}
            },
            Event::BlockAbort(_) => pending = None,
            Event::Usage(u) => s.usage.merge(u),
            Event::Status(st) if st.status.is_terminal() => {
                s.status = Some(st.status);
                s.stop_reason = st.stop_reason;
            }
            Event::Error(e) => s.error = Some(e.message.clone()),
            _ => {}
        }
    }
    s
}

pub fn assert_invariants(events: &[Event]) {
    assert!(
        matches!(events.first(), Some(Event::Status(s)) if s.status == ResponseStatus::Started),
        "stream must start with Status(Started): {events:?}"
    );
    let terminals: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::Status(s) if s.status.is_terminal()))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        terminals,
        vec![events.len() - 1],
        "exactly one terminal status, last: {events:?}"
    );
    let mut open: Option<usize> = None;
    for event in events {
        match event {
            Event::BlockStart(b) => {
                assert!(
                    open.is_none(),
                    "block {} opened while {:?} open",
                    b.index,
                    open
                );
                open = Some(b.index);
            }
            Event::BlockDelta(d) => assert_eq!(open, Some(d.index), "delta outside its block"),
            Event::BlockStop(b) => {
                assert_eq!(open.take(), Some(b.index), "stop of a block not open")
            }
            Event::BlockAbort(b) => {
                assert_eq!(open.take(), Some(b.index), "abort of a block not open")
            }
            _ => {}
        }
    }
    assert!(open.is_none(), "block left open at end of stream");
}

pub fn fixtures_dir() -> PathBuf {
    // At run time, as `cargo test` sets it: a test binary shared by checkouts through one
    // target directory would carry another checkout's path, since gone.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("tests/fixtures")
}

pub struct Fixture {
    pub provider: String,
    pub name: String,
    pub sse: String,
    pub expect: Value,
}

impl Fixture {
    pub fn wire(&self) -> saki_llm_client::WireApi {
        match self.provider.as_str() {
            "openai_chat" => saki_llm_client::WireApi::Chat,
            "openai_responses" => saki_llm_client::WireApi::Responses,
            "anthropic" => saki_llm_client::WireApi::Anthropic,
            "gemini" => saki_llm_client::WireApi::Gemini,
            other => panic!("unknown fixture provider {other}"),
        }
    }
}

pub fn all_fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for provider in ["openai_chat", "openai_responses", "anthropic", "gemini"] {
        let dir = fixtures_dir().join(provider);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let p = e.unwrap().path();
                (p.extension()? == "sse")
                    .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        names.sort();
        for name in names {
            let sse = std::fs::read_to_string(dir.join(format!("{name}.sse"))).unwrap();
            let expect_path = dir.join(format!("{name}.expect.json"));
            let Ok(expect) = std::fs::read_to_string(&expect_path) else {
                continue; // a capture without expectations (e.g. recorded from a real server)
            };
            out.push(Fixture {
                provider: provider.into(),
                name,
                sse,
                expect: serde_json::from_str(&expect).unwrap(),
            });
        }
    }
    assert!(out.len() >= 24, "fixtures missing: found {}", out.len());
    out
}

fn stop_reason_name(r: Option<StopReason>) -> Value {
    match r {
        None => Value::Null,
        Some(r) => serde_json::to_value(r).unwrap(),
    }
}

/// Compares a folded stream with a fixture's expectations.
pub fn assert_matches_expect(fixture: &Fixture, s: &Summary) {
    let ctx = format!("{}/{}", fixture.provider, fixture.name);
    let e = &fixture.expect;
    // A failed stream aborts its open block (nothing half-done is committed), but the
    // text it carried was delivered as deltas first.
    let text = if s.status == Some(ResponseStatus::Failed) {
        &s.streamed_text
    } else {
        &s.text
    };
    assert_eq!(text, e["text"].as_str().unwrap(), "{ctx}: text");
    assert_eq!(
        s.thinking,
        e["thinking"].as_str().unwrap(),
        "{ctx}: thinking"
    );
    let calls = e["tool_calls"].as_array().unwrap();
    assert_eq!(
        s.tool_calls.len(),
        calls.len(),
        "{ctx}: tool call count {:?}",
        s.tool_calls
    );
    for ((id, name, args), want) in s.tool_calls.iter().zip(calls) {
        match want["id"].as_str() {
            Some(want_id) => assert_eq!(id, want_id, "{ctx}: tool id"),
            None => assert!(!id.is_empty(), "{ctx}: generated id must not be empty"),
        }
        assert_eq!(name, want["name"].as_str().unwrap(), "{ctx}: tool name");
        let parsed: Value =
            serde_json::from_str(args).unwrap_or_else(|e| panic!("{ctx}: args {args:?}: {e}"));
        assert_eq!(parsed, want["arguments"], "{ctx}: tool args");
    }
    let ids: std::collections::HashSet<_> = s.tool_calls.iter().map(|c| &c.0).collect();
    assert_eq!(ids.len(), s.tool_calls.len(), "{ctx}: tool ids unique");
    let usage = &e["usage"];
    if usage.is_null() {
        assert!(
            s.usage.is_empty(),
            "{ctx}: no usage expected, got {:?}",
            s.usage
        );
    } else {
        let want = UsageEvent {
            input_tokens: usage["input_tokens"].as_u64(),
            output_tokens: usage["output_tokens"].as_u64(),
            total_tokens: usage["total_tokens"].as_u64(),
            cache_read_input_tokens: usage["cache_read_input_tokens"].as_u64(),
            cache_creation_input_tokens: usage["cache_creation_input_tokens"].as_u64(),
        };
        assert_eq!(s.usage, want, "{ctx}: usage");
    }
    let status = serde_json::to_value(s.status.unwrap()).unwrap();
    assert_eq!(status, e["status"], "{ctx}: status");
    assert_eq!(
        stop_reason_name(s.stop_reason),
        e["stop_reason"],
        "{ctx}: stop reason"
    );
    if let Some(needle) = e.get("error_contains").and_then(Value::as_str) {
        let msg = s
            .error
            .as_deref()
            .unwrap_or_else(|| panic!("{ctx}: expected an error"));
        assert!(
            msg.contains(needle),
            "{ctx}: error {msg:?} lacks {needle:?}"
        );
    }
}

/// Replaces every tool-call id with a placeholder so runs that generate ids compare equal.
pub fn without_ids(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .cloned()
        .map(|mut e| {
            if let Event::BlockStart(b) = &mut e {
                if let BlockMetadata::ToolUse { id, .. } = &mut b.metadata {
                    *id = "<id>".into();
                }
            }
            e
        })
        .collect()
}
