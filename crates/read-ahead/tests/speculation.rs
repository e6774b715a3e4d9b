#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Speculation over HTTP against the mock provider: nothing outside the overlay changes
//! before accept, accept applies exactly the overlay, abort leaves no trace, boundaries
//! keep the calls that ran (by index), pipelining, and forks that share the cache prefix.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::{Item, ToolResultStatus, Worker, WorkerConfig};
use saki_read_ahead::*;
use saki_testkit::{MockServer, Turn};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

struct Fixture {
    server: MockServer,
    ws: tempfile::TempDir,
    base: tempfile::TempDir,
    workspace: Arc<Workspace>,
}

fn fixture() -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), "pub fn a() {}\n").unwrap();
    std::fs::write(ws.path().join("README.md"), "# demo\n").unwrap();
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    Fixture {
        server: MockServer::start().unwrap(),
        ws,
        base: tempfile::tempdir().unwrap(),
        workspace,
    }
}

impl Fixture {
    fn client(&self) -> Client {
        Client::new(ClientConfig::new(WireApi::Chat, self.server.openai_url())).unwrap()
    }

    fn speculator(&self, mode: ApprovalMode) -> Speculator {
        let mut s = Speculator::new(self.client(), "fast", mode, self.workspace.clone());
        s.overlay_base = self.base.path().to_path_buf();
        s
    }

    fn params(&self) -> CacheSafeParams {
        let tools = saki_tools::builtin_server(self.workspace.clone()).unwrap();
        CacheSafeParams {
            system: Some("sys".into()),
            tools: tools.definitions(),
            history: vec![
                Item::user("look at lib.rs"),
                Item::AssistantText {
                    text: "It defines a().".into(),
                },
            ],
            model: "main".into(),
            ..Default::default()
        }
    }

    /// Every file of the workspace with its bytes.
    fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, root, out);
                } else {
                    let key = path.strip_prefix(root).unwrap().display().to_string();
                    out.insert(key, std::fs::read(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.ws.path(), self.ws.path(), &mut out);
        out
    }

    fn overlays_left(&self) -> usize {
        std::fs::read_dir(self.base.path())
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::new().with_tool_call(id, name, args.to_string())
}

fn edit_and_create(f: &Fixture) {
    f.server.push(
        call("c1", "read_file", json!({"path": "src/lib.rs"}))
            .with_tool_call(
                "c2",
                "edit",
                json!({"path": "src/lib.rs", "old_string": "pub fn a() {}", "new_string": "pub fn a() -> u8 { 1 }"})
                    .to_string(),
            )
            .with_tool_call(
                "c3",
                "write_file",
                json!({"path": "src/new.rs", "content": "pub fn b() {}\n"}).to_string(),
            ),
    );
    f.server
        .push(call("c4", "read_file", json!({"path": "src/lib.rs"})));
    f.server.push(Turn::text("Changed a() and added b()."));
}

#[tokio::test]
async fn a_completed_speculation_changes_nothing_until_accepted_then_exactly_the_overlay() {
    let f = fixture();
    let before = f.tree();
    edit_and_create(&f);
    f.server.push(Turn::text("run the tests"));
    let speculator = f.speculator(ApprovalMode::AutoEdit);
    let spec = speculator
        .run(
            &f.params(),
            "change a to return 1",
            CancellationToken::new(),
        )
        .await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    assert_eq!(f.tree(), before, "the real tree changed during speculation");
    // The second read saw the overlay's edit.
    let reread = spec
        .items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult { content, ctx, .. } if ctx.call_id == "c4" => Some(content.clone()),
            _ => None,
        })
        .next()
        .unwrap();
    assert!(reread.contains("-> u8 { 1 }"), "{reread}");
    // Ready without the pipelined suggestion: that is a request of its own.
    assert_eq!(f.server.requests().len(), 3);
    let next = speculator
        .pipelined(&f.params(), &spec.items, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(next, Ok("run the tests".into()));
    // It saw what the speculation did: the speculation's last request (its history: the
    // suggestion, the calls, their results) is its exact prefix, the answer and the
    // suggestion prompt follow.
    let requests = f.server.requests();
    let last_turn = requests[2].body["messages"].as_array().unwrap();
    let pipelined = requests[3].body["messages"].as_array().unwrap();
    assert_eq!(&pipelined[..last_turn.len()], &last_turn[..]);
    let text = |m: &Value| m["content"].as_str().unwrap_or_default().to_owned();
    let tail: Vec<String> = pipelined[last_turn.len()..].iter().map(text).collect();
    assert_eq!(tail, ["Changed a() and added b().", SUGGESTION_PROMPT]);
    let sent = requests[3].body["messages"].to_string();
    assert!(sent.contains("src/new.rs") && sent.contains("pub fn b() {}"));

    let mut accepted = accept(spec, "change a to return 1").unwrap();
    assert_eq!(accepted.applied.applied().len(), 2);
    let after = f.tree();
    assert_eq!(after["src/lib.rs"], b"pub fn a() -> u8 { 1 }\n");
    assert_eq!(after["src/new.rs"], b"pub fn b() {}\n");
    assert_eq!(after["README.md"], before["README.md"]);
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(accepted.items[0], Item::user("change a to return 1"));
    assert!(
        matches!(accepted.items.last(), Some(Item::AssistantText { text }) if text.starts_with("Changed"))
    );
    ensure_tool_result_pairing(&accepted.items).unwrap();
    accepted.wait_for_cleanup();
    assert_eq!(f.overlays_left(), 0);
}

#[tokio::test]
async fn abort_and_a_changed_text_leave_no_trace() {
    let f = fixture();
    let before = f.tree();
    edit_and_create(&f);
    f.server.push(Turn::text(""));
    let speculator = f.speculator(ApprovalMode::Yolo);
    let spec = speculator
        .run(&f.params(), "change a", CancellationToken::new())
        .await;
    assert_eq!(spec.status, SpeculationStatus::Completed);
    assert!(spec.overlay_dir().unwrap().exists());
    let next = speculator
        .pipelined(&f.params(), &spec.items, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(next, Err(SuppressReason::Empty));
    assert!(matches!(
        accept(spec, "change b"),
        Err(AcceptError::TextChanged)
    ));
    assert_eq!(f.tree(), before);
    assert_eq!(f.overlays_left(), 0);

    edit_and_create(&f);
    let spec = f
        .speculator(ApprovalMode::Yolo)
        .run(&f.params(), "change a", CancellationToken::new())
        .await;
    spec.abort();
    assert_eq!(f.tree(), before);
    assert_eq!(f.overlays_left(), 0);
}

#[tokio::test]
async fn a_write_in_default_mode_is_a_boundary_that_keeps_the_calls_that_ran() {
    let f = fixture();
    let before = f.tree();
    // Same tool name before and after the boundary: pairing must go by index.
    f.server.push(
        call("r1", "read_file", json!({"path": "README.md"}))
            .with_tool_call(
                "w1",
                "write_file",
                json!({"path": "x.txt", "content": "x"}).to_string(),
            )
            .with_tool_call("r2", "read_file", json!({"path": "src/lib.rs"}).to_string()),
    );
    let spec = f
        .speculator(ApprovalMode::Default)
        .run(&f.params(), "write x", CancellationToken::new())
        .await;
    assert_eq!(spec.status, SpeculationStatus::Boundary);
    assert!(
        spec.reason.as_deref().unwrap().contains("write_file"),
        "{:?}",
        spec.reason
    );
    // The batch stops before any of its calls runs, as the main loop's would at a
    // boundary; every call keeps its (skipped) result.
    let results: Vec<(&str, ToolResultStatus)> = spec
        .items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult { ctx, status, .. } => Some((ctx.call_id.as_str(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("r1", ToolResultStatus::Skipped),
            ("w1", ToolResultStatus::Skipped),
            ("r2", ToolResultStatus::Skipped)
        ]
    );
    ensure_tool_result_pairing(&spec.items).unwrap();
    assert!(matches!(
        accept(spec, "write x"),
        Err(AcceptError::NotCompleted("boundary"))
    ));
    assert_eq!(f.tree(), before);
}

#[tokio::test]
async fn shell_runs_only_when_proven_read_only_even_in_yolo() {
    let f = fixture();
    f.server
        .push(call("s1", "shell", json!({"command": "cat README.md"})));
    f.server
        .push(call("s2", "shell", json!({"command": "rm README.md"})));
    let spec = f
        .speculator(ApprovalMode::Yolo)
        .run(&f.params(), "clean up", CancellationToken::new())
        .await;
    assert_eq!(spec.status, SpeculationStatus::Boundary);
    assert!(spec.reason.unwrap().contains("rm README.md"));
    assert!(spec
        .items
        .iter()
        .any(|i| matches!(i, Item::ToolResult { content, .. } if content.contains("# demo"))));
    assert!(f.ws.path().join("README.md").exists());
}

#[tokio::test]
async fn a_cancelled_speculation_is_aborted() {
    let f = fixture();
    f.server.push(Turn::text("slow").stall_after(1));
    let cancel = CancellationToken::new();
    let speculator = f.speculator(ApprovalMode::Yolo);
    let params = f.params();
    // Cancelled mid-request: the request is out, and the rest of its reply never comes.
    let cancelled = async {
        f.server.wait_for_requests(1).await;
        cancel.cancel();
    };
    let (spec, ()) = tokio::join!(speculator.run(&params, "wait", cancel.clone()), cancelled);
    assert_eq!(spec.status, SpeculationStatus::Aborted);
    spec.abort();
    assert_eq!(f.overlays_left(), 0);
}

#[tokio::test]
async fn a_fork_sends_the_main_conversation_as_its_exact_prefix() {
    let f = fixture();
    let tools = Arc::new(saki_tools::builtin_server(f.workspace.clone()).unwrap());
    let mut worker = Worker::new(f.client(), tools, WorkerConfig::new("main"));
    worker.set_system_prompt(Some("system prompt".into()));
    f.server
        .push(call("c1", "read_file", json!({"path": "README.md"})));
    f.server.push(Turn::text("It is a demo."));
    worker
        .run_turn("what is this?", CancellationToken::new())
        .await
        .unwrap();
    let mut store = CacheSafeStore::default();
    store.save(&worker.build_request(), worker.history());
    f.server
        .push(Turn::text("{\"suggestion\": \"run the tests\"}"));
    let suggestion = generate_suggestion(
        &f.client(),
        store.get().unwrap(),
        "main",
        &[],
        CancellationToken::new(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(suggestion, Ok("run the tests".into()));

    let requests = f.server.requests();
    let main = &requests[1].body;
    let fork = &requests[2].body;
    assert_eq!(main["tools"].to_string(), fork["tools"].to_string());
    assert_eq!(main["model"], fork["model"]);
    let main_messages = main["messages"].as_array().unwrap();
    let fork_messages = fork["messages"].as_array().unwrap();
    assert!(fork_messages.len() > main_messages.len());
    for (a, b) in main_messages.iter().zip(fork_messages) {
        assert_eq!(a.to_string(), b.to_string(), "fork prefix differs");
    }
    // Byte for byte too: the chat body starts with the model and its messages array
    // (keys keep their insertion order), and the main request's body up to the end of
    // that array, unclosed, starts the fork's body.
    let raw = |body: &bytes::Bytes| String::from_utf8(body.to_vec()).unwrap();
    let (main_raw, fork_raw) = (raw(&requests[1].raw_body), raw(&requests[2].raw_body));
    assert!(
        main_raw.starts_with("{\"model\":\"main\",\"messages\":["),
        "{main_raw}"
    );
    let main_prefix = &main_raw[..main_raw.rfind("],\"stream\"").unwrap()];
    assert!(
        fork_raw.starts_with(main_prefix),
        "the fork's prefix differs"
    );
    assert!(fork.get("reasoning_effort").is_none() && fork.get("thinking").is_none());
    assert_eq!(fork["response_format"]["type"], "json_schema");
}

#[tokio::test]
async fn a_server_without_structured_output_gets_a_plain_suggestion_request() {
    let f = fixture();
    f.server.push(saki_testkit::Reply::status(
        400,
        "{\"error\":{\"message\":\"response_format is not supported\"}}",
    ));
    f.server.push(Turn::text("run the tests"));
    let suggestion = generate_suggestion(
        &f.client(),
        &f.params(),
        "fast",
        &[],
        CancellationToken::new(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(suggestion, Ok("run the tests".into()));
    let requests = f.server.requests();
    assert!(requests[0].body.get("response_format").is_some());
    assert!(requests[1].body.get("response_format").is_none());
}

/// Speculates "read the readme" in default mode.
async fn read_the_readme(f: &Fixture, recovery: bool) -> Speculation {
    let mut speculator = f.speculator(ApprovalMode::Default);
    speculator.worker.tool_call_recovery = recovery;
    speculator
        .run(&f.params(), "read the readme", CancellationToken::new())
        .await
}

fn assert_completed(spec: &Speculation) {
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
}

fn results_of(spec: &Speculation) -> Vec<(String, ToolResultStatus)> {
    spec.items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult {
                content, status, ..
            } => Some((content.clone(), *status)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_call_written_as_text_runs_in_a_speculation_as_in_the_main_loop() {
    for recovery in [true, false] {
        let f = fixture();
        f.server.push(Turn::text(
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}\n</tool_call>",
        ));
        f.server.push(Turn::text("It is a demo."));
        let spec = read_the_readme(&f, recovery).await;
        let results = results_of(&spec);
        if recovery {
            assert_completed(&spec);
            assert_eq!(results.len(), 1);
            assert!(results[0].0.contains("# demo"), "{results:?}");
            assert_eq!(spec.answer(), "It is a demo.");
        } else {
            // Not run, and not an answer either: never shown as a finished result.
            assert!(results.is_empty());
            assert_eq!(spec.status, SpeculationStatus::Boundary);
            assert!(
                spec.reason.as_deref().unwrap().contains("written as text"),
                "{:?}",
                spec.reason
            );
        }
    }
}

/// As the real 0.5B model answered "run the tests": a call whose tool is named in words.
/// The first is answered as an unknown tool, as in the main loop; a speculation that
/// ends on another, even when asked for its answer in text, is never a finished result.
#[tokio::test]
async fn a_call_to_a_tool_named_in_words_is_never_a_finished_speculation() {
    let f = fixture();
    let words = "{\"name\": \"run the tests\", \"arguments\": {\"command\": \"pytest\"}}";
    // The call, the call again (asked for a real one), and again when asked to answer.
    for _ in 0..3 {
        f.server.push(Turn::text(words));
    }
    let spec = read_the_readme(&f, true).await;
    let results = results_of(&spec);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].0.contains("unknown tool `run_the_tests`"),
        "{results:?}"
    );
    assert_eq!(spec.status, SpeculationStatus::Boundary);
    assert!(
        spec.reason.as_deref().unwrap().contains("written as text"),
        "{:?}",
        spec.reason
    );
}

#[tokio::test]
async fn arguments_are_repaired_or_refused_before_the_gate() {
    let f = fixture();
    f.server.push(call(
        "c1",
        "read_file",
        json!({"path": "README.md", "type": "object", "limit": "5"}),
    ));
    f.server
        .push(call("c2", "read_file", json!({"file": "README.md"})));
    f.server.push(Turn::text("done"));
    let spec = read_the_readme(&f, false).await;
    assert_completed(&spec);
    let results = results_of(&spec);
    assert_eq!(results[0].1, ToolResultStatus::Success);
    assert!(
        results[0].0.contains("ignored unknown argument `type`") && results[0].0.contains("# demo"),
        "{}",
        results[0].0
    );
    assert_eq!(results[1].1, ToolResultStatus::Error);
    assert!(
        results[1].0.contains("missing required argument `path`"),
        "{}",
        results[1].0
    );
}

#[tokio::test]
async fn a_speculation_that_repeats_itself_is_asked_for_its_answer_as_the_main_loop_is() {
    let f = fixture();
    for id in ["c1", "c2", "c3"] {
        f.server
            .push(call(id, "read_file", json!({"path": "README.md"})));
    }
    f.server.push(Turn::text("It is a demo."));
    let spec = read_the_readme(&f, false).await;
    assert_completed(&spec);
    assert_eq!(spec.answer(), "It is a demo.");
    let results = results_of(&spec);
    assert_eq!(results.len(), 3);
    assert!(results[1].0.contains("identical") && results[2].0.contains("identical"));
    ensure_tool_result_pairing(&spec.items).unwrap();
    let requests = f.server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[3].body["tool_choice"], "none",
        "the answer request offers no tool: {}",
        requests[3].body
    );
}
