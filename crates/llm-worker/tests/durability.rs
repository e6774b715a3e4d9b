#![allow(clippy::unwrap_used, clippy::expect_used)]
//! History first, durably: with a `Durability`, the Worker sends no request before what
//! it has committed is persisted, and a turn ends with everything persisted.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex};

struct Echo;

#[async_trait::async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echo"
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new("echoed"))
    }
}

/// A persistence the test completes by hand: each wait reports how many items were
/// committed, then waits for the test's go.
struct HeldFlush {
    committed: Arc<AtomicUsize>,
    asked: mpsc::UnboundedSender<usize>,
    go: Mutex<mpsc::UnboundedReceiver<()>>,
}

#[async_trait::async_trait]
impl Durability for HeldFlush {
    async fn flushed(&self) {
        self.asked
            .send(self.committed.load(Ordering::SeqCst))
            .unwrap();
        self.go.lock().await.recv().await;
    }
}

#[tokio::test]
async fn no_request_goes_out_and_no_call_runs_before_the_committed_items_are_durable() {
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call("c1", "echo", "{}"));
    server.push(Turn::text("done"));
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Echo)).unwrap();
    let mut worker = Worker::new(client, Arc::new(tools), WorkerConfig::new("m"));
    let committed = Arc::new(AtomicUsize::new(0));
    let counter = committed.clone();
    worker.set_observer(Arc::new(move |e| {
        if matches!(e, WorkerEvent::Committed(_)) {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    }));
    let (asked_tx, mut asked) = mpsc::unbounded_channel();
    let (go, go_rx) = mpsc::unbounded_channel();
    worker.set_durability(Arc::new(HeldFlush {
        committed,
        asked: asked_tx,
        go: Mutex::new(go_rx),
    }));
    let turn = tokio::spawn(async move {
        let outcome = worker
            .run_turn("go", CancellationToken::new())
            .await
            .unwrap();
        (outcome, worker)
    });

    // Before the first request: the user item is committed, nothing is sent until it
    // is durable.
    assert_eq!(asked.recv().await, Some(1));
    assert_eq!(server.requests().len(), 0);
    go.send(()).unwrap();
    // Before the call runs: the call is on record (a kill mid-call leaves it there).
    assert_eq!(asked.recv().await, Some(2));
    assert_eq!(server.requests().len(), 1);
    go.send(()).unwrap();
    // Before the second request: its result too.
    assert_eq!(asked.recv().await, Some(3));
    assert_eq!(server.requests().len(), 1);
    go.send(()).unwrap();
    // The turn ends once its answer is durable.
    assert_eq!(asked.recv().await, Some(4));
    assert!(!turn.is_finished());
    go.send(()).unwrap();
    let (outcome, worker) = turn.await.unwrap();
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    assert_eq!(worker.history().len(), 4);
    assert_eq!(server.requests().len(), 2);
}
