#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A tool that returns an image, through the real Worker loop and every protocol: the
//! image is committed right after its result and sent with it in the next request; for
//! a model without vision the result says it is not shown, and nothing is sent.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use serde_json::Value;
use std::sync::Arc;

const DATA: &str = "iVBORw0KGgo=";

struct Snapshot;

#[async_trait::async_trait]
impl Tool for Snapshot {
    fn name(&self) -> &str {
        "snapshot"
    }
    fn description(&self) -> &str {
        "returns an image"
    }
    fn input_schema(&self) -> Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        let image = ImageRef {
            media_type: "image/png".into(),
            sha256: "cd".repeat(32),
            width: 2,
            height: 2,
            bytes: 8,
            data: Some(Base64::from_encoded(DATA)),
        };
        Ok(ToolOutput::new("[Image: s.png (PNG 2×2)]").with_image("s.png", image))
    }
}

async fn run(wire: WireApi, vision: bool) -> (Vec<Item>, Value) {
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call("call_1", "snapshot", "{}"));
    server.push(Turn::text("a square"));
    let base = match wire {
        WireApi::Chat | WireApi::Responses => server.openai_url(),
        _ => server.url(),
    };
    let client = Client::new(ClientConfig::new(wire, base)).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Snapshot)).unwrap();
    let mut config = WorkerConfig::new("m");
    config.vision = vision;
    let mut worker = Worker::new(client, Arc::new(tools), config);
    worker
        .run_turn("take a snapshot", CancellationToken::new())
        .await
        .unwrap();
    let second = server.requests().remove(1).body;
    (worker.history().to_vec(), second)
}

#[tokio::test]
async fn a_returned_image_follows_its_result_and_goes_out_in_every_protocol() {
    for wire in WireApi::ALL {
        let (history, body) = run(wire, true).await;
        assert!(
            matches!(&history[2..4], [
                Item::ToolResult { ctx, .. },
                Item::Image { call_id: Some(id), path, .. },
            ] if *id == ctx.call_id && path == "s.png"),
            "{wire}: {history:#?}"
        );
        let text = body.to_string();
        assert!(text.contains(DATA), "{wire}: the image is not in {text}");
    }
}

#[tokio::test]
async fn without_vision_the_result_says_the_image_is_not_shown() {
    for wire in WireApi::ALL {
        let (history, body) = run(wire, false).await;
        assert!(
            !history.iter().any(|i| matches!(i, Item::Image { .. })),
            "{wire}: {history:#?}"
        );
        let content = history
            .iter()
            .find_map(|i| match i {
                Item::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap();
        assert!(
            content.contains("does not accept images"),
            "{wire}: {content}"
        );
        assert!(!body.to_string().contains(DATA), "{wire}");
    }
}
