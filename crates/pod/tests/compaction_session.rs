#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A session with a small context window, end to end over HTTP: it grows until old tool
//! output is pruned, grows again until the start is summarized, sends its next request
//! below the window carrying the snapshot, and resumes from the session log as compacted.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::hook::{HookConfig, HookEvent, Hooks};
use saki_llm_worker::*;
use saki_pod::compaction::{PRUNED_MARKER, SUMMARY_MARKER};
use saki_pod::{CompactionSettings, Compactor, FsView, SessionStore};
use saki_testkit::{MockServer, Turn};
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

fn read_call(id: &str, path: &str) -> Turn {
    Turn::new().with_tool_call(id, "read_file", format!("{{\"path\":\"{path}\"}}"))
}

/// A stand-in read_file for the auto-read check (only its call matters).
struct ReadFile;

#[async_trait::async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "reads"
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new("fn main() {}"))
    }
}

struct Session {
    server: MockServer,
    worker: Worker,
    compactions: Arc<Mutex<Vec<Compaction>>>,
    store: SessionStore,
    id: String,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn session(hook_log: Option<&std::path::Path>) -> Session {
    let server = MockServer::start().unwrap();
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Blob)).unwrap();
    tools.register(Arc::new(ReadFile)).unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("main.rs"),
        "fn main() { println!(\"hi\"); }\n",
    )
    .unwrap();
    let workspace = Arc::new(saki_tools::Workspace::new(ws.path()).unwrap());
    // Usable window 100k; act at 85k estimated tokens.
    let settings = CompactionSettings::new("fast-model", 100_000, 0);
    let mut hooks = Hooks::new(ws.path().to_path_buf());
    if let Some(log) = hook_log {
        hooks.add(
            HookEvent::PreCompress,
            HookConfig {
                command: format!("cat >> {}; echo >> {}", log.display(), log.display()),
                matcher: None,
                timeout_secs: None,
            },
        );
    }
    let compactor = Compactor::new(client.clone(), settings)
        .with_fs(FsView::new(workspace))
        .with_hooks(hooks);
    let mut worker = Worker::new(client, Arc::new(tools), WorkerConfig::new("main-model"));
    worker.set_system_prompt(Some("sys".into()));
    worker.set_context_guard(Arc::new(compactor));

    let data = tempfile::tempdir().unwrap();
    let store = SessionStore::new(data.path());
    let writer = Arc::new(Mutex::new(
        store
            .create("/ws", "mock", "main-model", "start", Some("sys"))
            .unwrap(),
    ));
    let id = writer.lock().unwrap().meta().id.clone();
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
        server,
        worker,
        compactions,
        store,
        id,
        _dirs: (ws, data),
    }
}

/// A well-formed summary reply: scratchpad, then the snapshot with its goal and plan.
fn snapshot(goal: &str) -> String {
    format!(
        "<scratchpad>notes</scratchpad>\n<state_snapshot>\n<overall_goal>{goal}</overall_goal>\n\
         <current_plan>1. [IN PROGRESS] go on</current_plan>\n</state_snapshot>"
    )
}

fn request_text(body: &serde_json::Value) -> String {
    body["messages"].to_string()
}

#[tokio::test]
async fn a_small_window_prunes_then_summarizes_and_resumes_compacted() {
    let hook_log = tempfile::NamedTempFile::new().unwrap();
    let mut s = session(Some(hook_log.path()));
    // Turn 1: three 25k-token reads (75k), under the 85k line. Their arguments differ:
    // identical calls in one turn are answered from the first one.
    for (i, chars) in [100_000, 100_001, 100_002].iter().enumerate() {
        s.server.push(blob_call(&format!("r{i}"), *chars));
    }
    s.server.push(Turn::text("read them"));
    s.worker
        .run_turn("read the logs", CancellationToken::new())
        .await
        .unwrap();
    // Turn 2: small.
    s.server.push(Turn::text("ok"));
    s.worker
        .run_turn("next", CancellationToken::new())
        .await
        .unwrap();
    assert!(s.compactions.lock().unwrap().is_empty());

    // Turn 3: one 10k read crosses the line; turn 1's old outputs are pruned.
    s.server.push(read_call("f1", "main.rs"));
    s.server.push(blob_call("b3", 40_000));
    s.server.push(Turn::text("pruned fine"));
    s.worker
        .run_turn("more", CancellationToken::new())
        .await
        .unwrap();
    {
        let compactions = s.compactions.lock().unwrap();
        assert_eq!(compactions.len(), 1, "{compactions:#?}");
        let report = &compactions[0].report;
        assert_eq!(report.status, CompactionStatus::Pruned);
        assert_eq!(report.trigger, CompactionTrigger::Auto);
        assert_eq!(report.pruned, 2);
        assert!(report.tokens_after < report.tokens_before);
    }
    let pruned = s
        .worker
        .history()
        .iter()
        .filter(
            |i| matches!(i, Item::ToolResult { content, .. } if content.starts_with(PRUNED_MARKER)),
        )
        .count();
    assert_eq!(pruned, 2);
    // The request after the prune no longer carries those outputs.
    let last = s.server.requests().last().unwrap().body.clone();
    assert!(request_text(&last).contains(PRUNED_MARKER));
    assert!(request_text(&last).len() < 200_000);

    // Turn 4: two more 25k reads; pruning cannot help, the start is summarized.
    s.server.push(blob_call("b4", 100_000));
    s.server.push(blob_call("b5", 100_001));
    s.server
        .push(Turn::text(snapshot("goal: read the logs. files: main.rs")));
    s.server.push(Turn::text("summarized fine"));
    let outcome = s
        .worker
        .run_turn("even more", CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    let report = s.compactions.lock().unwrap()[1].report.clone();
    assert_eq!(report.status, CompactionStatus::Compressed, "{report:#?}");
    assert!(report.tokens_after < report.tokens_before);
    assert!(report.summarized > 0);
    assert_eq!(report.auto_read, vec!["main.rs"]);

    let requests = s.server.requests();
    let summary_request = &requests[requests.len() - 2].body;
    assert_eq!(summary_request["model"], "fast-model");
    assert!(summary_request.get("reasoning_effort").is_none());
    assert!(request_text(summary_request).contains("state_snapshot"));
    assert!(summary_request.get("tools").is_none(), "no tools offered");
    let next = &requests[requests.len() - 1].body;
    let text = request_text(next);
    assert!(text.contains(SUMMARY_MARKER) && text.contains("goal: read the logs"));
    assert!(text.contains("[Auto-read file: main.rs]"));
    // Below the window: 100k tokens is about 400k characters.
    assert!(
        next.to_string().len() < 4 * 85_000,
        "{}",
        next.to_string().len()
    );

    // The PreCompress hook saw both compactions, as automatic ones.
    let log = std::fs::read_to_string(hook_log.path()).unwrap();
    assert_eq!(log.matches("\"trigger\":\"auto\"").count(), 2, "{log}");

    // Resuming sees the compacted history, byte for byte what the model saw.
    let loaded = s.store.load(&s.id).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.items, s.worker.history());
    let raw = std::fs::read_to_string(&loaded.path).unwrap();
    assert_eq!(raw.matches("\"type\":\"compaction\"").count(), 2);
    assert!(raw.contains("read the logs"), "raw history stays on disk");
}

fn long_history() -> Vec<Item> {
    let mut h = Vec::new();
    for i in 0..6 {
        h.push(Item::user(format!("step {i} {}", "u".repeat(400))));
        h.push(Item::AssistantText {
            text: "a".repeat(400),
        });
    }
    h
}

fn compactor(server: &MockServer, settings: CompactionSettings) -> Compactor {
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    Compactor::new(client, settings)
}

async fn check(c: &Compactor, history: &[Item], trigger: CompactionTrigger) -> Option<Compaction> {
    let cancel = CancellationToken::new();
    let view = ContextView {
        history,
        system_prompt: None,
        tools: &[],
        last_report: None,
        cancel: &cancel,
    };
    c.check(view, trigger).await
}

#[tokio::test]
async fn auto_off_means_off_and_manual_still_works() {
    let server = MockServer::start().unwrap();
    let mut settings = CompactionSettings::new("m", 1_000, 0);
    settings.auto = false;
    let c = compactor(&server, settings);
    let h = long_history();
    assert_eq!(check(&c, &h, CompactionTrigger::Auto).await, None);
    assert!(server.requests().is_empty());
    server.push(Turn::text(snapshot("s")));
    let done = check(&c, &h, CompactionTrigger::Manual).await.unwrap();
    assert_eq!(done.report.status, CompactionStatus::Compressed);
    assert_eq!(done.report.trigger, CompactionTrigger::Manual);
}

#[tokio::test]
async fn a_summary_is_bounded_and_sampled_as_the_session_s_answers_are() {
    let server = MockServer::start().unwrap();
    let h = long_history();
    server.push(Turn::text(snapshot("s")));
    check(
        &compactor(&server, CompactionSettings::new("m", 1_000, 0)),
        &h,
        CompactionTrigger::Manual,
    )
    .await
    .unwrap();
    let mut settings = CompactionSettings::new("m", 1_000, 0);
    settings.summary_max_output_tokens = Some(1024);
    settings.summary_temperature = Some(0.0);
    server.push(Turn::text(snapshot("s")));
    check(&compactor(&server, settings), &h, CompactionTrigger::Manual)
        .await
        .unwrap();
    let requests = server.requests();
    let (free, bounded) = (&requests[0].body, &requests[1].body);
    assert!(free.get("max_tokens").is_none() && free.get("temperature").is_none());
    assert_eq!(bounded["max_tokens"], 1024);
    assert_eq!(bounded["temperature"], 0.0);
}

#[tokio::test]
async fn three_failed_automatic_attempts_pause_until_manual_or_model_change() {
    let server = MockServer::start().unwrap();
    let c = compactor(&server, CompactionSettings::new("m", 1_000, 0));
    let h = long_history();
    for n in 1..=3 {
        // An empty answer is asked for once more, then given up.
        server.push(Turn::text("   "));
        server.push(Turn::text(""));
        let r = check(&c, &h, CompactionTrigger::Auto).await.unwrap().report;
        assert_eq!(r.status, CompactionStatus::FailedEmptySummary);
        assert_eq!(r.message.is_some(), n == 3, "{r:?}");
    }
    assert!(c.auto_paused());
    assert_eq!(check(&c, &h, CompactionTrigger::Auto).await, None);
    assert_eq!(server.requests().len(), 6);
    // A manual compaction (even a failed one) resumes automatic attempts.
    server.push(Turn::text(snapshot(&"x".repeat(20_000))));
    let r = check(&c, &h, CompactionTrigger::Manual)
        .await
        .unwrap()
        .report;
    assert_eq!(r.status, CompactionStatus::FailedInflated);
    assert!(!c.auto_paused());
    // So does a model change.
    for _ in 0..3 {
        server.push(Turn::text(""));
        server.push(Turn::text(""));
        check(&c, &h, CompactionTrigger::Auto).await.unwrap();
    }
    assert!(c.auto_paused());
    c.model_changed(CompactionSettings::new("other", 1_000, 0));
    assert!(!c.auto_paused());
}

#[tokio::test]
async fn a_failed_summary_request_changes_nothing() {
    let server = MockServer::start().unwrap();
    let c = compactor(&server, CompactionSettings::new("m", 1_000, 0));
    server.push(saki_testkit::Reply::status(
        400,
        "{\"error\":{\"message\":\"bad\"}}",
    ));
    let done = check(&c, &long_history(), CompactionTrigger::Auto)
        .await
        .unwrap();
    assert_eq!(done.report.status, CompactionStatus::FailedRequest);
    assert_eq!(done.edit, None);
    assert!(done.report.message.unwrap().contains("bad"));
}

#[tokio::test]
async fn a_pre_compress_hook_can_block_and_small_histories_are_left_alone() {
    let server = MockServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut hooks = Hooks::new(dir.path().to_path_buf());
    hooks.add(
        HookEvent::PreCompress,
        HookConfig {
            command: "echo not now >&2; exit 2".into(),
            matcher: None,
            timeout_secs: None,
        },
    );
    let c = compactor(&server, CompactionSettings::new("m", 1_000, 0)).with_hooks(hooks);
    let done = check(&c, &long_history(), CompactionTrigger::Manual)
        .await
        .unwrap();
    assert_eq!(done.report.status, CompactionStatus::Blocked);
    assert_eq!(done.report.message.as_deref(), Some("not now"));
    assert!(server.requests().is_empty());
    // Under the line: nothing to do, nothing reported, no hook run.
    let small = vec![Item::user("hi")];
    assert_eq!(check(&c, &small, CompactionTrigger::Auto).await, None);
    // By hand on a history with nothing to summarize: Noop, before the hook.
    let noop = check(&c, &small, CompactionTrigger::Manual).await.unwrap();
    assert_eq!(noop.report.status, CompactionStatus::Noop);
}

#[tokio::test]
async fn a_summary_request_is_counted_as_background_work() {
    let server = MockServer::start().unwrap();
    let usage = saki_llm_worker::BackgroundUsage::new();
    let mut settings = CompactionSettings::new("m", 1_000, 0);
    settings.auto = false;
    let c = compactor(&server, settings).with_background_usage(usage.clone());
    server.push(Turn::text(snapshot("s")).with_usage(900, 40));
    let done = check(&c, &long_history(), CompactionTrigger::Manual)
        .await
        .unwrap();
    assert_eq!(done.report.status, CompactionStatus::Compressed);
    let spent = usage.take();
    assert_eq!(
        (
            spent.compaction.requests,
            spent.compaction.input_tokens,
            spent.compaction.output_tokens
        ),
        (1, 900, 40)
    );
    assert_eq!(spent.total(), spent.compaction, "nothing else");
}
