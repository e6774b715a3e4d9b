#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Compaction across the real Worker loop, over HTTP against the mock provider: old tool
//! output pruned after a turn however empty the window is, and one agentic turn of 60
//! tool rounds compacted between its rounds against a small window.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::*;
use saki_pod::compaction::{PRUNED_MARKER, SUMMARY_MARKER};
use saki_pod::{CompactionSettings, Compactor, SessionStore};
use saki_testkit::{MockServer, Turn};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Returns `{"chars": N}` characters of filler, like a big file read.
struct Blob;

#[async_trait::async_trait]
impl Tool for Blob {
    fn name(&self) -> &str {
        "blob"
    }
    fn description(&self) -> &str {
        "returns filler"
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(&self, input: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        let v: serde_json::Value = serde_json::from_str(input).unwrap();
        let n = v["chars"].as_u64().unwrap() as usize;
        Ok(ToolOutput::new("x".repeat(n)))
    }
}

fn blob_call(id: &str, chars: usize) -> Turn {
    Turn::new().with_tool_call(id, "blob", format!("{{\"chars\":{chars}}}"))
}

fn snapshot(n: usize) -> String {
    format!(
        "<scratchpad>s</scratchpad><state_snapshot><overall_goal>read every blob</overall_goal>\
         <recent_actions>summary {n}</recent_actions>\
         <current_plan>1. [IN PROGRESS] read on</current_plan></state_snapshot>"
    )
}

fn client(server: &MockServer) -> Client {
    Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap()
}

struct Session {
    worker: Worker,
    compactions: Arc<Mutex<Vec<Compaction>>>,
    store: SessionStore,
    id: String,
    _data: tempfile::TempDir,
}

/// A Worker on `main`, summaries from `summaries`, every item and compaction recorded.
fn session(main: &MockServer, summaries: &MockServer, settings: CompactionSettings) -> Session {
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Blob)).unwrap();
    let mut config = WorkerConfig::new("main-model");
    config.max_turns = 100;
    let mut worker = Worker::new(client(main), Arc::new(tools), config);
    worker.set_system_prompt(Some("sys".into()));
    worker.set_context_guard(Arc::new(Compactor::new(client(summaries), settings)));
    let data = tempfile::tempdir().unwrap();
    let store = SessionStore::new(data.path());
    let writer = store
        .create("/ws", "mock", "main-model", "start", Some("sys"))
        .unwrap();
    let id = writer.meta().id.clone();
    let writer = Mutex::new(writer);
    let compactions = Arc::new(Mutex::new(Vec::new()));
    let seen = compactions.clone();
    worker.set_observer(Arc::new(move |e| match e {
        WorkerEvent::Committed(item) => writer.lock().unwrap().append(item).unwrap(),
        WorkerEvent::Compacted(c) => {
            writer.lock().unwrap().append_compaction(c).unwrap();
            seen.lock().unwrap().push(c.clone());
        }
        _ => {}
    }));
    Session {
        worker,
        compactions,
        store,
        id,
        _data: data,
    }
}

#[tokio::test]
async fn old_tool_output_is_pruned_after_a_turn_far_below_the_threshold() {
    for prune in [true, false] {
        let server = MockServer::start().unwrap();
        // A million-token window: nowhere near full.
        let mut settings = CompactionSettings::new("fast", 1_000_000, 0);
        settings.prune = prune;
        let mut s = session(&server, &server, settings);
        // Turn 1: four 15k-token reads; turns 2 and 3 are small.
        for i in 0..4 {
            server.push(blob_call(&format!("r{i}"), 60_000 + i));
        }
        server.push(Turn::text("read"));
        server.push(Turn::text("two"));
        server.push(Turn::text("three"));
        for prompt in ["read the blobs", "two", "three"] {
            let cancel = CancellationToken::new();
            s.worker.run_turn(prompt, cancel).await.unwrap();
            let compactions = s.compactions.lock().unwrap();
            if prompt != "three" || !prune {
                // Turn 1 is among the last two until turn 3 ends.
                assert!(compactions.is_empty(), "{prompt}: {compactions:?}");
            }
        }
        let requests_before = server.requests().len();
        if !prune {
            assert!(s.worker.history().iter().all(
                |i| !matches!(i, Item::ToolResult { content, .. } if content.starts_with(PRUNED_MARKER))
            ));
            continue;
        }
        {
            let compactions = s.compactions.lock().unwrap();
            assert_eq!(compactions.len(), 1, "{compactions:?}");
            let report = &compactions[0].report;
            assert_eq!(report.status, CompactionStatus::Pruned);
            assert_eq!(report.trigger, CompactionTrigger::Auto);
            // Newest first: 15k + 15k kept, the third passes 40k; two are cleared.
            assert_eq!(report.pruned, 2);
            assert!(report.tokens_before - report.tokens_after >= 29_000);
        }
        // No request was made for it, and the next turn sends the pruned history.
        assert_eq!(server.requests().len(), requests_before);
        server.push(Turn::text("four"));
        s.worker
            .run_turn("four", CancellationToken::new())
            .await
            .unwrap();
        let last = server.requests().last().unwrap().body.to_string();
        assert_eq!(last.matches(PRUNED_MARKER).count(), 2);
        // History first: the prune is in the session log, and a resume sees it.
        let loaded = s.store.load(&s.id).unwrap();
        assert_eq!(loaded.items, s.worker.history());
    }
}

/// Call ids of the tool calls and of the tool results in one chat request.
fn call_ids(body: &serde_json::Value) -> (HashSet<String>, HashSet<String>) {
    let (mut calls, mut results) = (HashSet::new(), HashSet::new());
    for m in body["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            calls.insert(c["id"].as_str().unwrap().to_owned());
        }
        if m["role"] == "tool" {
            results.insert(m["tool_call_id"].as_str().unwrap().to_owned());
        }
    }
    (calls, results)
}

#[tokio::test]
async fn one_turn_of_sixty_tool_rounds_is_compacted_between_its_rounds() {
    let main = MockServer::start().unwrap();
    let summaries = MockServer::start().unwrap();
    // A 16k-token window (the smallest that is summarized rather than pruned within
    // the turn); each round adds about 1k tokens, so 60 rounds need ~61k.
    let window = saki_pod::compaction::SMALL_WINDOW;
    let mut s = session(
        &main,
        &summaries,
        CompactionSettings::new("fast", window, 0),
    );
    for i in 0..60 {
        main.push(blob_call(&format!("call{i}"), 4_000 + i));
    }
    main.push(Turn::text("all sixty read"));
    for n in 0..20 {
        summaries.push(Turn::text(snapshot(n)));
    }
    let request = "Read sixty blobs, one per call, then say so.";
    let outcome = s
        .worker
        .run_turn(request, CancellationToken::new())
        .await
        .unwrap();
    assert!(
        matches!(outcome.status, TurnStatus::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(outcome.requests, 61);

    let compactions = s.compactions.lock().unwrap().clone();
    assert!(compactions.len() >= 3, "{}", compactions.len());
    for c in &compactions {
        assert_eq!(c.report.status, CompactionStatus::Compressed, "{c:?}");
        assert_eq!(c.report.trigger, CompactionTrigger::Auto);
        assert!(c.report.tokens_after < c.report.tokens_before);
    }
    assert_eq!(summaries.requests().len(), compactions.len());
    // Later summaries merge the earlier snapshot.
    let last_summary = summaries.requests().last().unwrap().body.to_string();
    assert!(last_summary.contains("earlier_snapshot"));

    let requests = main.requests();
    assert_eq!(requests.len(), 61);
    for (n, r) in requests.iter().enumerate() {
        let text = r.body.to_string();
        // Under the window (about 4 characters a token) and still about the request.
        assert!(
            text.len() < 4 * window as usize,
            "request {n}: {}",
            text.len()
        );
        assert!(text.contains(request), "request {n} lost the request");
        // Pairing: every result has its call in the same request, and every call a result.
        let (calls, results) = call_ids(&r.body);
        assert_eq!(calls, results, "request {n}");
    }
    let text = requests.last().unwrap().body.to_string();
    assert!(text.contains(SUMMARY_MARKER) && text.contains("call59"));

    // The history the model saw is the one a resume loads.
    let loaded = s.store.load(&s.id).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.items, s.worker.history());
}
