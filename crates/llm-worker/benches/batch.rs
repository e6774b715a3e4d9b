#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Tool batch overhead: the Worker's time from committing the last of 8 tool calls of one
//! response to committing the last result, with trivial tools (validation, interceptor
//! pass, parallel dispatch, result commit). Run: `cargo bench -p saki-llm-worker --bench batch`.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Noop;

#[async_trait::async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }
    async fn execute(
        &self,
        _input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(format!("ok {}", ctx.call_index)))
    }
}

struct AllowAll;
impl Interceptor for AllowAll {}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = MockServer::start().unwrap();
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Noop)).unwrap();
    let tools = Arc::new(tools);
    let rounds = 200;
    let mut samples: Vec<Duration> = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut turn = Turn::new();
        for i in 0..8 {
            turn = turn.with_tool_call(format!("c{i}"), "noop", "{\"x\":1}");
        }
        server.push(turn);
        server.push(Turn::text("done"));
        let mut worker = Worker::new(client.clone(), tools.clone(), WorkerConfig::new("m"));
        worker.add_interceptor(Arc::new(AllowAll));
        let marks: Arc<Mutex<(Option<Instant>, Option<Instant>)>> = Arc::default();
        let m = marks.clone();
        worker.set_observer(Arc::new(move |e| {
            let mut m = m.lock().unwrap();
            match e {
                WorkerEvent::Committed(Item::ToolCall { .. }) => m.0 = Some(Instant::now()),
                WorkerEvent::Committed(Item::ToolResult { .. }) => m.1 = Some(Instant::now()),
                _ => {}
            }
        }));
        runtime
            .block_on(worker.run_turn("go", CancellationToken::new()))
            .unwrap();
        let (a, b) = *marks.lock().unwrap();
        samples.push(b.unwrap() - a.unwrap());
    }
    samples.sort();
    println!(
        "tool batch of 8 trivial parallel calls, {rounds} rounds: median {:.1} µs, p90 {:.1} µs",
        samples[rounds / 2].as_secs_f64() * 1e6,
        samples[rounds * 9 / 10].as_secs_f64() * 1e6
    );
}
