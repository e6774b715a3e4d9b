#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Tools that arrive while a session runs (an MCP server connecting after the first
//! prompt): offered from the next request on, in their sorted place, and callable.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use std::sync::Arc;

struct Named(&'static str);

#[async_trait::async_trait]
impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "a tool"
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(format!("{} ran", self.0)))
    }
}

fn offered(request: &saki_testkit::RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn tools_added_to_the_shared_set_are_offered_from_the_next_request() {
    let server = MockServer::start().unwrap();
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut base = ToolServer::new();
    base.register(Arc::new(Named("read_file"))).unwrap();
    let mut worker = Worker::new(client, Arc::new(base), WorkerConfig::new("m"));
    let shared = worker.shared_tools();

    server.push(Turn::text("first"));
    worker
        .run_turn("one", CancellationToken::new())
        .await
        .unwrap();
    shared
        .register_all(vec![
            Arc::new(Named("mcp__s__b")),
            Arc::new(Named("mcp__s__a")),
        ])
        .unwrap();
    server.push(Turn::new().with_tool_call("c1", "mcp__s__b", "{}"));
    server.push(Turn::text("done"));
    worker
        .run_turn("two", CancellationToken::new())
        .await
        .unwrap();

    let requests = server.requests();
    assert_eq!(offered(&requests[0]), ["read_file"]);
    assert_eq!(
        offered(&requests[1]),
        ["mcp__s__a", "mcp__s__b", "read_file"]
    );
    assert_eq!(
        offered(&requests[1]),
        offered(&requests[2]),
        "stable within the session"
    );
    let result = worker.history().iter().find_map(|item| match item {
        Item::ToolResult {
            content, status, ..
        } => Some((content.clone(), *status)),
        _ => None,
    });
    assert_eq!(
        result,
        Some(("mcp__s__b ran".to_owned(), ToolResultStatus::Success))
    );
}
