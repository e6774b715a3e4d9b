use super::event::*;
use super::*;
use crate::handler::*;
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<String>>>;

fn start(index: usize, metadata: BlockMetadata) -> Event {
    Event::BlockStart(BlockStart {
        index,
        block_type: metadata.block_type(),
        metadata,
    })
}
fn delta(index: usize, d: DeltaContent) -> Event {
    Event::BlockDelta(BlockDelta { index, delta: d })
}
fn text(index: usize, s: &str) -> Event {
    delta(index, DeltaContent::Text(s.into()))
}
fn stop(index: usize, block_type: BlockType) -> Event {
    Event::BlockStop(BlockStop {
        index,
        block_type,
        stop_reason: None,
    })
}

struct Named(&'static str, Log);
impl Handler<UsageKind> for Named {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), e: &UsageEvent) {
        self.1
            .lock()
            .unwrap()
            .push(format!("{}:usage:{:?}", self.0, e.input_tokens));
    }
}
impl Handler<PingKind> for Named {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), _: &PingEvent) {
        self.1.lock().unwrap().push(format!("{}:ping", self.0));
    }
}
impl Handler<TextBlockKind> for Named {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), e: &TextBlockEvent) {
        self.1.lock().unwrap().push(format!("{}:{e:?}", self.0));
    }
}

/// Counts deltas in its scope and reports the count at Stop: proves scope lifetime.
struct Counter(Log);
impl Handler<TextBlockKind> for Counter {
    type Scope = usize;
    fn on_event(&mut self, count: &mut usize, e: &TextBlockEvent) {
        match e {
            TextBlockEvent::Delta(_) => *count += 1,
            TextBlockEvent::Stop(s) => self
                .0
                .lock()
                .unwrap()
                .push(format!("block {} had {count}", s.index)),
            TextBlockEvent::Start(_) => assert_eq!(*count, 0, "scope must be fresh at start"),
        }
    }
}

#[test]
fn timeline_and_collectors_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Timeline>();
    check::<TextBlockCollector>();
    check::<ToolCallCollector>();
    check::<ThinkingBlockCollector>();
}

#[test]
fn meta_events_go_to_handlers_in_registration_order_at_once() {
    let log = Log::default();
    let mut t = Timeline::new();
    t.on_usage(Named("a", log.clone()))
        .on_usage(Named("b", log.clone()))
        .on_ping(Named("p", log.clone()));
    t.on_text_block(Named("t", log.clone()));
    t.dispatch(&start(0, BlockMetadata::Text));
    t.dispatch(&Event::Usage(UsageEvent {
        input_tokens: Some(5),
        ..Default::default()
    }));
    t.dispatch(&Event::Ping(PingEvent::default()));
    t.dispatch(&text(0, "x"));
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "t:Start(TextBlockStart { index: 0 })",
            "a:usage:Some(5)",
            "b:usage:Some(5)",
            "p:ping",
            "t:Delta(\"x\")"
        ]
    );
}

#[test]
fn each_block_gets_a_fresh_scope_per_handler() {
    let log = Log::default();
    let mut t = Timeline::new();
    let collector = TextBlockCollector::new();
    t.on_text_block(Counter(log.clone()))
        .on_text_block(collector.clone());
    for (i, words) in [["a", "b"].as_slice(), ["c"].as_slice()].iter().enumerate() {
        t.dispatch(&start(i, BlockMetadata::Text));
        for w in *words {
            t.dispatch(&text(i, w));
        }
        t.dispatch(&stop(i, BlockType::Text));
    }
    assert_eq!(*log.lock().unwrap(), ["block 0 had 2", "block 1 had 1"]);
    assert_eq!(collector.collected(), ["ab", "c"]);
    assert!(collector.has_content());
    assert_eq!(collector.take_collected().len(), 2);
    assert!(collector.collected().is_empty());
}

#[test]
fn a_delta_without_block_start_starts_the_scope_implicitly() {
    let collector = TextBlockCollector::new();
    let tools = ToolCallCollector::new();
    let mut t = Timeline::new();
    t.on_text_block(collector.clone())
        .on_tool_use_block(tools.clone());
    t.dispatch(&text(0, "implicit "));
    assert_eq!(t.current_block(), Some(BlockType::Text));
    t.dispatch(&text(0, "start"));
    t.dispatch(&stop(0, BlockType::Text));
    assert_eq!(collector.collected(), ["implicit start"]);
    assert_eq!(t.current_block(), None);

    t.dispatch(&delta(1, DeltaContent::InputJson("{\"a\":1}".into())));
    t.dispatch(&stop(1, BlockType::ToolUse));
    let calls = tools.collected();
    assert_eq!(calls.len(), 1);
    assert!(
        !calls[0].id.is_empty(),
        "an implicit tool block still gets an id"
    );
}

#[test]
fn abort_current_block_discards_the_scope() {
    let collector = TextBlockCollector::new();
    let mut t = Timeline::new();
    t.on_text_block(collector.clone());
    t.dispatch(&start(0, BlockMetadata::Text));
    t.dispatch(&text(0, "half"));
    t.abort_current_block();
    assert_eq!(t.current_block(), None);
    assert!(collector.collected().is_empty());
    t.dispatch(&start(1, BlockMetadata::Text));
    t.dispatch(&text(1, "whole"));
    t.dispatch(&stop(1, BlockType::Text));
    assert_eq!(
        collector.collected(),
        ["whole"],
        "no leftovers from the aborted block"
    );

    t.dispatch(&start(2, BlockMetadata::Text));
    t.dispatch(&text(2, "gone"));
    t.dispatch(&Event::BlockAbort(BlockAbort {
        index: 2,
        block_type: BlockType::Text,
        reason: "x".into(),
    }));
    assert_eq!(collector.collected(), ["whole"]);
}

#[test]
fn tool_results_are_routed_to_text_handlers() {
    let collector = TextBlockCollector::new();
    let mut t = Timeline::new();
    t.on_text_block(collector.clone());
    t.dispatch(&start(
        0,
        BlockMetadata::ToolResult {
            tool_use_id: "c1".into(),
        },
    ));
    t.dispatch(&text(0, "result body"));
    t.dispatch(&stop(0, BlockType::ToolResult));
    assert_eq!(collector.collected(), ["result body"]);
}

#[test]
fn wrappers_filter_deltas_by_block_kind() {
    let text_c = TextBlockCollector::new();
    let thinking = ThinkingBlockCollector::new();
    let mut t = Timeline::new();
    t.on_text_block(text_c.clone())
        .on_thinking_block(thinking.clone());
    t.dispatch(&start(0, BlockMetadata::Thinking));
    t.dispatch(&delta(0, DeltaContent::Thinking("hmm".into())));
    t.dispatch(&delta(0, DeltaContent::Text("stray".into())));
    t.dispatch(&delta(0, DeltaContent::Signature("sig".into())));
    t.dispatch(&stop(0, BlockType::Thinking));
    assert!(
        text_c.collected().is_empty(),
        "text handlers never see a thinking block"
    );
    let got = thinking.collected();
    assert_eq!(
        (got[0].text.as_str(), got[0].signature.as_deref()),
        ("hmm", Some("sig"))
    );
}

#[test]
fn tool_call_collector_keeps_id_name_and_raw_arguments() {
    let tools = ToolCallCollector::new();
    let mut t = Timeline::new();
    t.on_tool_use_block(tools.clone());
    let tool = |id: &str, name: &str| BlockMetadata::ToolUse {
        id: id.into(),
        name: name.into(),
    };
    t.dispatch(&start(0, tool("c1", "read_file")));
    t.dispatch(&delta(0, DeltaContent::InputJson("{\"path\":".into())));
    t.dispatch(&delta(0, DeltaContent::InputJson("\"a\"}".into())));
    t.dispatch(&stop(0, BlockType::ToolUse));
    t.dispatch(&start(1, tool("c2", "ls")));
    t.dispatch(&stop(1, BlockType::ToolUse));
    t.dispatch(&start(2, tool("c3", "grep")));
    t.dispatch(&delta(
        2,
        DeltaContent::InputJson("{\"pattern\": tru".into()),
    ));
    t.dispatch(&stop(2, BlockType::ToolUse));
    assert!(tools.has_pending_calls());
    let calls = tools.take_collected();
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("c1", "read_file")
    );
    assert_eq!(calls[0].input().unwrap(), serde_json::json!({"path": "a"}));
    assert_eq!(
        calls[1].arguments, "{}",
        "no arguments means an empty object"
    );
    assert!(
        calls[2].input().is_err(),
        "invalid JSON stays visible, never a silent {{}}"
    );
    assert_eq!(calls[2].arguments, "{\"pattern\": tru");
    assert!(!tools.has_pending_calls());
}

#[test]
fn usage_reports_of_one_request_are_merged() {
    let usage = UsageCollector::new();
    let mut t = Timeline::new();
    t.on_usage(usage.clone());
    t.dispatch(&Event::Usage(UsageEvent {
        input_tokens: Some(100),
        output_tokens: Some(1),
        cache_read_input_tokens: Some(80),
        ..Default::default()
    }));
    t.dispatch(&Event::Usage(UsageEvent {
        output_tokens: Some(42),
        ..Default::default()
    }));
    let u = usage.take();
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cache_read_input_tokens),
        (Some(100), Some(42), Some(80))
    );
    assert!(usage.usage().is_empty());
}

#[test]
fn a_start_while_a_block_is_open_aborts_the_old_block() {
    let collector = TextBlockCollector::new();
    let mut t = Timeline::new();
    t.on_text_block(collector.clone());
    t.dispatch(&start(0, BlockMetadata::Text));
    t.dispatch(&text(0, "orphan"));
    t.dispatch(&start(1, BlockMetadata::Text));
    t.dispatch(&text(1, "kept"));
    t.dispatch(&stop(1, BlockType::Text));
    assert_eq!(collector.collected(), ["kept"]);
}
