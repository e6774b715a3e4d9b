#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Worker loop over real HTTP: batches and their context, parallel execution,
//! interceptors, synthetic results, cancellation, and well-formed history.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Reply, Turn};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Records every context it runs with (and signals `started` once it has); optionally
/// waits on a shared barrier.
struct Probe {
    name: &'static str,
    seen: Arc<Mutex<Vec<ToolExecutionContext>>>,
    started: Arc<Notify>,
    barrier: Option<Arc<tokio::sync::Barrier>>,
    hang: bool,
}

#[async_trait::async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test probe"
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        self.seen.lock().unwrap().push(ctx.clone());
        self.started.notify_one();
        if let Some(b) = &self.barrier {
            b.wait().await;
        }
        if self.hang {
            std::future::pending::<()>().await;
        }
        if input.contains("fail") {
            return Err(ToolError::Failed("probe failed on purpose".into()));
        }
        if input.contains("panic") {
            panic!("probe panicked on purpose");
        }
        Ok(ToolOutput::new(format!(
            "{} ran #{}",
            self.name, ctx.call_index
        )))
    }
}

struct Setup {
    server: MockServer,
    seen: Arc<Mutex<Vec<ToolExecutionContext>>>,
    /// Signalled by every probe that has recorded its context.
    started: Arc<Notify>,
    events: Arc<Mutex<Vec<WorkerEvent>>>,
}

impl Setup {
    /// Waits until `n` probe calls have started (recorded their context).
    async fn probes_started(&self, n: usize) {
        within(&format!("{n} probe calls starting"), async {
            // Rechecked after every signal: `notify_one` keeps one wake-up for a waiter
            // that is not yet waiting, so no start is missed.
            while self.seen.lock().unwrap().len() < n {
                self.started.notified().await;
            }
        })
        .await;
    }
}

/// Awaits `signal`, failing the test with what was awaited if it does not come within a
/// minute: a missing signal is a failure, never a hang.
async fn within<T>(what: &str, signal: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(60), signal).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after 60 s waiting for {what}"),
    }
}

fn setup_with(
    wire: WireApi,
    barrier: Option<Arc<tokio::sync::Barrier>>,
    hang: bool,
) -> (Setup, Worker) {
    let server = MockServer::start().unwrap();
    let base = match wire {
        WireApi::Chat | WireApi::Responses => server.openai_url(),
        _ => server.url(),
    };
    let client = Client::new(ClientConfig::new(wire, base)).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(Notify::new());
    let mut tools = ToolServer::new();
    for name in ["alpha", "beta"] {
        tools
            .register(Arc::new(Probe {
                name,
                seen: seen.clone(),
                started: started.clone(),
                barrier: barrier.clone(),
                hang,
            }))
            .unwrap();
    }
    let mut worker = Worker::new(client, Arc::new(tools), WorkerConfig::new("m"));
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    worker.set_observer(Arc::new(move |e| sink.lock().unwrap().push(e.clone())));
    (
        Setup {
            server,
            seen,
            started,
            events,
        },
        worker,
    )
}

fn setup() -> (Setup, Worker) {
    setup_with(WireApi::Chat, None, false)
}

/// Every tool call is followed, in the same batch order, by exactly one result.
fn assert_well_formed(history: &[Item]) {
    let mut open: Vec<String> = Vec::new();
    for item in history {
        match item {
            Item::ToolCall { ctx, .. } => open.push(ctx.call_id.clone()),
            Item::ToolResult { ctx, .. } => {
                assert_eq!(
                    open.first(),
                    Some(&ctx.call_id),
                    "result out of order: {history:#?}"
                );
                open.remove(0);
            }
            _ => assert!(open.is_empty(), "a call has no result before {item:?}"),
        }
    }
    assert!(open.is_empty(), "calls without results: {open:?}");
}

fn results(history: &[Item]) -> Vec<(String, ToolResultStatus, ToolExecutionContext)> {
    history
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult {
                content,
                status,
                ctx,
                ..
            } => Some((content.clone(), *status, ctx.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn batches_carry_context_and_results_go_back_in_call_order() {
    for wire in WireApi::ALL {
        let (s, mut worker) = setup_with(wire, None, false);
        s.server.push(
            Turn::new()
                .with_tool_call("c1", "alpha", "{}")
                .with_tool_call("c2", "beta", "{}")
                .with_tool_call("c3", "alpha", r#"{"again": true}"#),
        );
        s.server
            .push(Turn::new().with_tool_call("c4", "beta", "{}"));
        s.server.push(Turn::text("done"));
        let outcome = worker
            .run_turn("go", CancellationToken::new())
            .await
            .unwrap();
        assert!(
            matches!(outcome.status, TurnStatus::Completed { .. }),
            "{wire}: {outcome:?}"
        );
        assert_eq!(outcome.requests, 3);
        let history = worker.history();
        assert_well_formed(history);
        let r = results(history);
        assert_eq!(r.len(), 4, "{wire}");
        let (first, second) = (&r[0].2.batch_id, &r[3].2.batch_id);
        assert!(
            r[..3].iter().all(|x| &x.2.batch_id == first),
            "{wire}: one batch per response"
        );
        assert_ne!(first, second, "{wire}: batches differ");
        assert_eq!(
            r.iter().map(|x| x.2.call_index).collect::<Vec<_>>(),
            [0, 1, 2, 0]
        );
        assert_eq!(r[1].0, "beta ran #1");
        let mut seen = s.seen.lock().unwrap().clone();
        seen.sort_by_key(|c| (c.batch_id.clone(), c.call_index));
        assert_eq!(
            seen.iter().map(|c| c.call_index).collect::<Vec<_>>(),
            [0, 1, 2, 0],
            "{wire}: tools saw their context"
        );
        if wire != WireApi::Gemini {
            assert_eq!(seen[0].call_id, "c1");
        }
        // The second request carried the first batch's calls and results.
        let requests = s.server.requests();
        let body = requests[1].body.to_string();
        assert!(
            body.contains("alpha ran #0") && body.contains("beta ran #1"),
            "{wire}: {body}"
        );
        assert_eq!(
            worker.history().last(),
            Some(&Item::AssistantText {
                text: "done".into()
            })
        );
    }
}

#[tokio::test]
async fn approved_calls_run_in_parallel() {
    // Each call waits until both have started: sequential execution would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let (s, mut worker) = setup_with(WireApi::Anthropic, Some(barrier), false);
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{}")
            .with_tool_call("c2", "beta", "{}"),
    );
    s.server.push(Turn::text("both ran"));
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        worker.run_turn("go", CancellationToken::new()),
    )
    .await
    .expect("tools did not run in parallel (deadlock)")
    .unwrap();
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    assert!(results(worker.history())
        .iter()
        .all(|r| r.1 == ToolResultStatus::Success));
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_become_error_results() {
    let (s, mut worker) = setup();
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{\"path\": tru")
            .with_tool_call("c2", "nope", "{}")
            .with_tool_call("c3", "beta", "[1]")
            .with_tool_call("c4", "alpha", "{\"fail\":1}"),
    );
    s.server.push(Turn::text("ok"));
    worker
        .run_turn("go", CancellationToken::new())
        .await
        .unwrap();
    let r = results(worker.history());
    assert_eq!(
        r.iter().map(|x| x.1).collect::<Vec<_>>(),
        [ToolResultStatus::Error; 4]
    );
    assert!(
        r[0].0.contains("invalid JSON") && r[0].0.contains("tru"),
        "{}",
        r[0].0
    );
    assert!(r[1].0.contains("unknown tool `nope`") && r[1].0.contains("alpha, beta"));
    assert!(r[2].0.contains("expected a JSON object"));
    assert_eq!(r[3].0, "probe failed on purpose");
    assert_eq!(
        r.iter().map(|x| x.2.call_index).collect::<Vec<_>>(),
        [0, 1, 2, 3],
        "synthetic results keep context"
    );
    assert_eq!(s.seen.lock().unwrap().len(), 1, "only the valid call ran");
    // The model saw them as errors.
    let body = &s.server.requests()[1].body;
    let tool_msgs: Vec<_> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_msgs.len(), 4);
}

struct Policy {
    log: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl Interceptor for Policy {
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        match user {
            Item::User { text } if text == "forbidden" => PromptAction::Cancel("not today".into()),
            _ => PromptAction::ContinueWith(vec![Item::system("[File: a.txt]\nhello")]),
        }
    }
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        self.log
            .lock()
            .unwrap()
            .push(format!("pre {}", call.ctx.call_index));
        if call.name == "beta" {
            ToolAction::Deny("beta is off limits".into())
        } else {
            ToolAction::Allow
        }
    }
    async fn post_tool_call(&self, result: &ToolResultInfo) {
        self.log.lock().unwrap().push(format!(
            "post {} {:?}",
            result.call.ctx.call_index, result.status
        ));
    }
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let nudged = history
            .iter()
            .any(|i| matches!(i, Item::System { text } if text == "keep going"));
        if nudged {
            TurnEndAction::Finish
        } else {
            TurnEndAction::ContinueWithMessages(vec![Item::system("keep going")])
        }
    }
}

#[tokio::test]
async fn interceptors_add_items_deny_calls_and_continue_turns() {
    let (s, mut worker) = setup();
    let log = Arc::new(Mutex::new(Vec::new()));
    worker.add_interceptor(Arc::new(Policy { log: log.clone() }));

    let outcome = worker
        .run_turn("forbidden", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        outcome.status,
        TurnStatus::PromptCancelled {
            reason: "not today".into()
        }
    );
    assert!(
        s.server.requests().is_empty(),
        "a cancelled prompt sends nothing"
    );
    assert!(worker.history().is_empty());

    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{}")
            .with_tool_call("c2", "beta", "{}"),
    );
    s.server.push(Turn::text("first answer"));
    s.server.push(Turn::text("second answer"));
    let outcome = worker
        .run_turn("read it", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        outcome.requests, 3,
        "on_turn_end asked for one more request"
    );
    let h = worker.history();
    assert_eq!(h[0], Item::user("read it"));
    assert_eq!(
        h[1],
        Item::system("[File: a.txt]\nhello"),
        "ContinueWith items follow the user item"
    );
    assert_well_formed(h);
    let r = results(h);
    assert_eq!(r[1].1, ToolResultStatus::Denied);
    assert!(r[1].0.contains("off limits"));
    assert_eq!(r[1].2.call_index, 1);
    assert_eq!(
        *log.lock().unwrap(),
        ["pre 0", "pre 1", "post 0 Success", "post 1 Denied"]
    );
    assert_eq!(s.seen.lock().unwrap().len(), 1, "the denied call never ran");
    assert!(h.contains(&Item::system("keep going")));
    // The added item reaches the model as a message of its own, after the prompt: never
    // inlined into the person's text.
    let messages = &s.server.requests()[0].body["messages"];
    assert_eq!(
        messages[0],
        serde_json::json!({"role": "user", "content": "read it"})
    );
    assert_eq!(
        messages[1],
        serde_json::json!({"role": "user", "content": "[File: a.txt]\nhello"})
    );
}

#[tokio::test]
async fn cancel_while_tools_run_gives_every_call_a_result() {
    let (s, mut worker) = setup_with(WireApi::Chat, None, true);
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{}")
            .with_tool_call("c2", "beta", "{}"),
    );
    let cancel = CancellationToken::new();
    // Cancel once both hanging calls are running.
    let (outcome, ()) = tokio::join!(worker.run_turn("go", cancel.clone()), async {
        s.probes_started(2).await;
        cancel.cancel();
    });
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_well_formed(worker.history());
    let r = results(worker.history());
    assert!(r.iter().all(|x| x.1 == ToolResultStatus::Cancelled));
    assert_eq!(r.iter().map(|x| x.2.call_index).collect::<Vec<_>>(), [0, 1]);
    assert!(r
        .iter()
        .all(|x| x.2.batch_id == r[0].2.batch_id && !x.2.batch_id.is_empty()));
}

/// Signals `reached` once a text block's streamed deltas read `text`.
struct TextReached {
    text: &'static str,
    reached: Arc<Notify>,
}

impl Handler<TextBlockKind> for TextReached {
    type Scope = String;
    fn on_event(&mut self, streamed: &mut String, event: &TextBlockEvent) {
        if let TextBlockEvent::Delta(delta) = event {
            streamed.push_str(delta);
            if streamed == self.text {
                self.reached.notify_one();
            }
        }
    }
}

#[tokio::test]
async fn cancel_mid_stream_and_failed_streams_leave_history_well_formed() {
    let (s, mut worker) = setup();
    s.server
        .push(Turn::text("one two three four five").stall_after(4));
    // Cancel mid-block: once all the text sent before the stall has streamed.
    let streamed = Arc::new(Notify::new());
    worker.timeline_mut().on_text_block(TextReached {
        text: "one two three",
        reached: streamed.clone(),
    });
    let cancel = CancellationToken::new();
    let (outcome, ()) = tokio::join!(worker.run_turn("go", cancel.clone()), async {
        within("\"one two three\" to stream", streamed.notified()).await;
        cancel.cancel();
    });
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(
        worker.history(),
        [Item::user("go")],
        "the aborted text block is not committed"
    );

    // A response that carried a finished call and then failed: the call gets a skipped result.
    s.server.push(Reply::raw_sse(concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"function\":{\"name\":\"alpha\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"error\":{\"message\":\"boom\"}}\n\n"
    )));
    let outcome = worker
        .run_turn("again", CancellationToken::new())
        .await
        .unwrap();
    assert!(
        matches!(&outcome.status, TurnStatus::Failed { error } if error.message == "boom"),
        "{outcome:?}"
    );
    assert_well_formed(worker.history());
    let r = results(worker.history());
    assert_eq!((r[0].1, r[0].2.call_index), (ToolResultStatus::Skipped, 0));
}

#[tokio::test]
async fn max_turns_stops_with_results_in_place() {
    let (s, _) = setup();
    let mut config = WorkerConfig::new("m");
    config.max_turns = 2;
    let client = Client::new(ClientConfig::new(WireApi::Chat, s.server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools
        .register(Arc::new(Probe {
            name: "alpha",
            seen: s.seen.clone(),
            started: s.started.clone(),
            barrier: None,
            hang: false,
        }))
        .unwrap();
    let mut worker = Worker::new(client, Arc::new(tools), config);
    for i in 0..3 {
        s.server
            .push(Turn::new().with_tool_call(format!("c{i}"), "alpha", "{}"));
    }
    let outcome = worker
        .run_turn("loop forever", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        (outcome.status, outcome.requests),
        (TurnStatus::MaxTurns, 2)
    );
    assert_well_formed(worker.history());
    assert_eq!(s.server.requests().len(), 2);
}

#[tokio::test]
async fn tool_definitions_are_sorted_and_duplicates_refused() {
    let (s, worker) = setup();
    let names: Vec<_> = worker
        .build_request()
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    let mut server = ToolServer::new();
    let probe = || {
        Arc::new(Probe {
            name: "alpha",
            seen: s.seen.clone(),
            started: s.started.clone(),
            barrier: None,
            hang: false,
        })
    };
    server.register(probe()).unwrap();
    assert_eq!(
        server.register(probe()),
        Err(ToolServerError::Duplicate("alpha".into()))
    );
}

#[tokio::test]
async fn usage_is_reported_per_request_and_summed_per_turn() {
    let (s, mut worker) = setup();
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{}")
            .with_usage(100, 10),
    );
    s.server.push(Turn::text("ok").with_usage(150, 5));
    let outcome = worker
        .run_turn("go", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        (outcome.usage.input_tokens, outcome.usage.output_tokens),
        (Some(250), Some(15))
    );
    let per_request = s
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, WorkerEvent::Usage(_)))
        .count();
    assert_eq!(per_request, 2);
}

#[tokio::test]
async fn a_tool_that_panics_is_an_error_result_and_the_turn_goes_on() {
    let (s, mut worker) = setup_with(WireApi::Chat, None, false);
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", r#"{"x":"panic"}"#)
            .with_tool_call("c2", "beta", "{}"),
    );
    s.server.push(Turn::text("done"));
    let outcome = worker
        .run_turn("go", CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    let results: Vec<(String, ToolResultStatus)> = worker
        .history()
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult {
                content, status, ..
            } => Some((content.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(results[0].1, ToolResultStatus::Error);
    assert!(
        results[0].0.contains("probe panicked on purpose"),
        "{results:?}"
    );
    assert_eq!(
        results[1],
        ("beta ran #1".to_owned(), ToolResultStatus::Success)
    );
    assert_eq!(s.server.requests().len(), 2);
}

/// An approval that is never answered (signalling `asking` once asked), and a record of
/// post-call hooks.
struct NeverAnswers {
    asked: Arc<Mutex<usize>>,
    asking: Arc<Notify>,
    post: Arc<Mutex<usize>>,
}

#[async_trait::async_trait]
impl Interceptor for NeverAnswers {
    async fn pre_tool_call(&self, _call: &ToolCallInfo) -> ToolAction {
        *self.asked.lock().unwrap() += 1;
        self.asking.notify_one();
        std::future::pending().await
    }
    async fn post_tool_call(&self, _result: &ToolResultInfo) {
        *self.post.lock().unwrap() += 1;
    }
}

#[tokio::test]
async fn cancel_while_an_approval_is_asked_stops_the_batch_and_runs_no_hook() {
    let (s, mut worker) = setup_with(WireApi::Chat, None, false);
    let asked = Arc::new(Mutex::new(0));
    let asking = Arc::new(Notify::new());
    let post = Arc::new(Mutex::new(0));
    worker.add_interceptor(Arc::new(NeverAnswers {
        asked: asked.clone(),
        asking: asking.clone(),
        post: post.clone(),
    }));
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{}")
            .with_tool_call("c2", "beta", "{}"),
    );
    let cancel = CancellationToken::new();
    // Cancel while the first approval is being asked.
    let (outcome, ()) = tokio::join!(worker.run_turn("go", cancel.clone()), async {
        // `notify_one` keeps the signal if the approval was asked before this waits.
        within("the approval to be asked", asking.notified()).await;
        cancel.cancel();
    });
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_well_formed(worker.history());
    let r = results(worker.history());
    assert_eq!(r.len(), 2);
    assert!(
        r.iter().all(|x| x.1 == ToolResultStatus::Cancelled),
        "{r:?}"
    );
    assert!(s.seen.lock().unwrap().is_empty(), "nothing ran");
    assert_eq!(
        *asked.lock().unwrap(),
        1,
        "the second call was never asked about"
    );
    assert_eq!(*post.lock().unwrap(), 0, "no hook after a cancel");
    assert_eq!(s.server.requests().len(), 1);
}

/// Stops the turn before any call to `beta` (a speculation's boundary).
struct Boundary;

#[async_trait::async_trait]
impl Interceptor for Boundary {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        match call.name.as_str() {
            "beta" => ToolAction::Stop("beta needs the person".into()),
            _ => ToolAction::Allow,
        }
    }
}

#[tokio::test]
async fn a_stop_ends_the_turn_before_the_batch_runs_and_leaves_history_well_formed() {
    let (s, mut worker) = setup();
    worker.add_interceptor(Arc::new(Boundary));
    s.server
        .push(Turn::new().with_tool_call("c0", "alpha", "{}"));
    s.server.push(
        Turn::new()
            .with_tool_call("c1", "alpha", "{}")
            .with_tool_call("c2", "beta", "{}"),
    );
    s.server.push(Turn::text("never asked for"));
    let outcome = worker
        .run_turn("go", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        (outcome.status, outcome.requests),
        (
            TurnStatus::Stopped {
                reason: "beta needs the person".into()
            },
            2
        )
    );
    assert_well_formed(worker.history());
    let r = results(worker.history());
    assert_eq!(r[0].1, ToolResultStatus::Success);
    for (content, status, _) in &r[1..] {
        assert_eq!(*status, ToolResultStatus::Skipped);
        assert!(content.contains("beta needs the person"), "{content}");
    }
    assert_eq!(
        s.seen.lock().unwrap().len(),
        1,
        "nothing of the stopped batch ran"
    );
    assert_eq!(s.server.requests().len(), 2);
}

#[tokio::test]
async fn offered_tools_replace_the_tool_sets_own_in_requests() {
    let (s, mut worker) = setup();
    let offered = vec![ToolDefinition {
        name: "gamma".into(),
        description: "only offered".into(),
        input_schema: serde_json::json!({"type": "object"}),
    }];
    worker.offer_tools(offered.clone());
    assert_eq!(worker.build_request().tools, offered);
    // A call to an offered tool the Worker cannot run is an error result, as any
    // unknown tool's.
    s.server
        .push(Turn::new().with_tool_call("c0", "gamma", "{}"));
    s.server.push(Turn::text("done"));
    worker
        .run_turn("go", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        s.server.requests()[0].body["tools"][0]["function"]["name"],
        "gamma"
    );
    assert_eq!(results(worker.history())[0].1, ToolResultStatus::Error);
}
