#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What ACP adds between a prompt and its first words, against the mock provider, 20
//! runs each (median and p90):
//! - `exec`: from sending the prompt (spawning `saki exec`) to the first byte of the
//!   answer on stdout, less the same for an empty turn's start-up (the `--version` floor
//!   is not enough: exec reads config and opens the session before it asks);
//! - `acp`: from `session/prompt` on an open session to the first `agent_message_chunk`;
//! - `acp, cold`: from spawning `saki acp` through initialize and `session/new` to that
//!   chunk, the editor's first prompt.
//!
//! Run: `cargo bench -p saki-cli --bench acp`.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification,
    TextContent,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use saki_testkit::{MockServer, Turn};
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

const RUNS: usize = 20;

fn saki(home: &std::path::Path, ws: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_saki"));
    cmd.env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .current_dir(ws);
    cmd
}

/// `saki exec`: spawn to the first byte of the answer.
fn exec_first_byte(server: &MockServer, home: &std::path::Path, ws: &std::path::Path) -> Duration {
    server.push(Turn::text("first words"));
    let started = Instant::now();
    let mut child = saki(home, ws)
        .args([
            "exec",
            "--provider",
            "llamacpp",
            "--base-url",
            &server.openai_url(),
            "hi",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut byte = [0u8; 1];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut byte)
        .unwrap();
    let took = started.elapsed();
    child.wait().unwrap();
    took
}

/// `saki acp`: (cold: spawn → first chunk, warm: prompt → first chunk) per prompt.
async fn acp_runs(
    server: &MockServer,
    home: &std::path::Path,
    ws: &std::path::Path,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut cmd = tokio::process::Command::from(saki(home, ws));
    cmd.args([
        "acp",
        "--provider",
        "llamacpp",
        "--base-url",
        &server.openai_url(),
        "--no-suggestions",
    ])
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .kill_on_drop(true);
    let spawned = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let (chunks_tx, mut chunks) = mpsc::unbounded_channel::<Instant>();
    let times = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let out = times.clone();
    let ws = ws.to_path_buf();
    Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                let value = serde_json::to_value(&n).unwrap();
                if value["update"]["sessionUpdate"] == "agent_message_chunk" {
                    let _ = chunks_tx.send(Instant::now());
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(ws))
                .block_task()
                .await?;
            for run in 0..RUNS {
                server.push(Turn::text("first words"));
                let sent = Instant::now();
                let prompt = PromptRequest::new(
                    session.session_id.clone(),
                    vec![ContentBlock::Text(TextContent::new("hi"))],
                );
                let answered = cx.send_request(prompt);
                let first = chunks.recv().await.unwrap();
                answered.block_task().await?;
                while chunks.try_recv().is_ok() {}
                let mut t = out.lock().unwrap();
                t.1.push(first - sent);
                if run == 0 {
                    t.0.push(first - spawned);
                }
            }
            Ok(())
        })
        .await
        .unwrap();
    let t = times.lock().unwrap();
    (t.0.clone(), t.1.clone())
}

fn stats(name: &str, mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    let median = runs[runs.len() / 2];
    let p90 = runs[(runs.len() * 9 / 10).min(runs.len() - 1)];
    println!(
        "{name:<28} median {:>7.2} ms   p90 {:>7.2} ms   ({} runs)",
        ms(median),
        ms(p90),
        runs.len()
    );
    median
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let server = MockServer::start().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("project");
    std::fs::create_dir_all(&ws).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..3 {
        let (c, w) = runtime.block_on(acp_runs(&server, home.path(), &ws));
        cold.extend(c);
        warm.extend(w);
    }
    let exec: Vec<Duration> = (0..RUNS)
        .map(|_| exec_first_byte(&server, home.path(), &ws))
        .collect();
    let exec = stats("exec: spawn → first byte", exec);
    let cold = stats("acp: spawn → first chunk", cold);
    stats("acp: prompt → first chunk", warm);
    println!("acp's first prompt vs exec: {:+.2} ms", ms(cold) - ms(exec));
}
