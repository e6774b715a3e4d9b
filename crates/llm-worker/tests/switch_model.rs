#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `/model`: the next request uses everything that belongs to the new model, and keeps
//! what belongs to the session.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use std::sync::Arc;

#[tokio::test]
async fn a_switched_model_brings_its_own_settings_and_keeps_the_sessions() {
    let server = MockServer::start().unwrap();
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut first = WorkerConfig::new("big");
    first.system_prompt = Some("You are saki.".into());
    first.temperature = Some(0.7);
    first.max_turns = 7;
    let mut worker = Worker::new(client, Arc::new(ToolServer::new()), first);

    let mut small = WorkerConfig::new("small");
    small.temperature = Some(0.0);
    small.max_output_tokens = Some(512);
    small.tool_call_recovery = true;
    small.system_prompt = Some("not this one".into());
    small.max_turns = 50;
    worker.switch_model(&small);

    server.push(Turn::text("ok"));
    worker
        .run_turn("hi", CancellationToken::new())
        .await
        .unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["model"], "small");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 512, "{body}");
    assert_eq!(body["messages"][0]["content"], "You are saki.");
    assert_eq!(worker.model(), "small");
}
