#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Batch ids are unique within a session: a resumed Worker numbers on from the history it
//! was given, and items committed from elsewhere (an accepted speculation) move the
//! counter past their own ids.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use std::sync::Arc;

fn worker(server: &MockServer) -> Worker {
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Echo)).unwrap();
    Worker::new(client, Arc::new(tools), WorkerConfig::new("m"))
}

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
        Ok(ToolOutput::new("ok"))
    }
}

fn batch_ids(history: &[Item]) -> Vec<String> {
    let mut ids: Vec<String> = history
        .iter()
        .filter_map(|i| match i {
            Item::ToolCall { ctx, .. } => Some(ctx.batch_id.clone()),
            _ => None,
        })
        .collect();
    ids.dedup();
    ids
}

fn one_call_turn(server: &MockServer, id: &str) {
    server.push(Turn::new().with_tool_call(id, "echo", "{}"));
    server.push(Turn::text("done"));
}

#[tokio::test]
async fn a_resumed_worker_numbers_on_from_its_history() {
    let server = MockServer::start().unwrap();
    one_call_turn(&server, "c1");
    one_call_turn(&server, "c2");
    let mut first = worker(&server);
    for prompt in ["one", "two"] {
        first
            .run_turn(prompt, CancellationToken::new())
            .await
            .unwrap();
    }
    assert_eq!(batch_ids(first.history()), ["batch_1", "batch_2"]);

    // The same session, resumed by a new process.
    let mut resumed = worker(&server);
    resumed.set_history(first.history().to_vec());
    one_call_turn(&server, "c3");
    resumed
        .run_turn("three", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        batch_ids(resumed.history()),
        ["batch_1", "batch_2", "batch_3"]
    );
}

#[tokio::test]
async fn speculated_items_and_the_worker_draw_from_one_counter() {
    let server = MockServer::start().unwrap();
    let mut worker = worker(&server);
    // A speculation takes its ids from the Worker's counter...
    let shared = worker.batch_ids();
    let speculated = shared.next();
    let discarded = shared.next();
    assert_eq!(
        (speculated.as_str(), discarded.as_str()),
        ("batch_1", "batch_2")
    );
    let ctx = ToolExecutionContext {
        call_id: "s1".into(),
        batch_id: speculated,
        call_index: 0,
    };
    worker.commit_items(vec![
        Item::user("accepted"),
        Item::ToolCall {
            name: "echo".into(),
            arguments: "{}".into(),
            signature: None,
            ctx: ctx.clone(),
        },
        Item::ToolResult {
            name: "echo".into(),
            content: "ok".into(),
            status: ToolResultStatus::Success,
            ctx,
        },
        Item::AssistantText { text: "ok".into() },
    ]);
    // ...so the next turn's batch follows every id handed out, discarded ones included.
    one_call_turn(&server, "c1");
    worker
        .run_turn("next", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(batch_ids(worker.history()), ["batch_1", "batch_3"]);
}
