#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Accept latency: from the call to `accept` until 10 files are on disk and the
//! speculated items are appended to history (and fsync'd to the session log, as the CLI
//! records them), with the all-or-nothing check and the apply journal on disk in a data
//! directory, as saki runs it. The speculation itself runs first against the mock provider
//! and is not timed. Target: under 5 ms. Run: `cargo bench -p saki-read-ahead --bench accept`.
//! The time is almost all fsyncs: the 10 files' (together), 3 for the journal, 1 for the
//! session log.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::{Worker, WorkerConfig, WorkerEvent};
use saki_pod::SessionStore;
use saki_read_ahead::{accept, CacheSafeParams, SpeculationStatus, Speculator};
use saki_testkit::{MockServer, Turn};
use saki_tools::{ApprovalMode, Workspace};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FILES: usize = 10;
const RUNS: usize = 30;

async fn one_run(server: &MockServer) -> Duration {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let body = "x".repeat(4096);
    for i in 0..FILES / 2 {
        std::fs::write(root.join(format!("src/f{i}.rs")), &body).unwrap();
    }
    let workspace = Arc::new(Workspace::new(&root).unwrap());
    let mut turn = Turn::new();
    for i in 0..FILES {
        let path = if i < FILES / 2 {
            format!("src/f{i}.rs")
        } else {
            format!("new/n{i}.rs")
        };
        let args = serde_json::json!({"path": path, "content": format!("{body}{i}")});
        turn = turn.with_tool_call(format!("w{i}"), "write_file", args.to_string());
    }
    server.push(turn);
    server.push(Turn::text("Wrote ten files."));
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut speculator = Speculator::new(
        client.clone(),
        "fast",
        ApprovalMode::Yolo,
        workspace.clone(),
    );
    speculator.overlay_base = tmp.path().join("overlays");
    let params = CacheSafeParams {
        system: None,
        tools: saki_tools::builtin_server(workspace.clone())
            .unwrap()
            .definitions(),
        history: Vec::new(),
        model: "main".into(),
        ..Default::default()
    };
    let spec = speculator
        .run(&params, "write ten files", CancellationToken::new())
        .await;
    assert_eq!(spec.status, SpeculationStatus::Completed);

    let tools = Arc::new(saki_tools::builtin_server(workspace).unwrap());
    let mut worker = Worker::new(client, tools, WorkerConfig::new("main"));
    let store = SessionStore::new(tmp.path().join("sessions"));
    let writer = Arc::new(Mutex::new(
        store.create("/ws", "p", "main", "t", None).unwrap(),
    ));
    worker.set_observer(Arc::new(move |e| match e {
        WorkerEvent::Committed(item) => writer.lock().unwrap().append(item).unwrap(),
        WorkerEvent::CommittedMany(items) => writer.lock().unwrap().append_all(items).unwrap(),
        _ => {}
    }));

    let start = Instant::now();
    let accepted = accept(spec, "write ten files").unwrap();
    worker.commit_items(accepted.items);
    let elapsed = start.elapsed();
    assert_eq!(accepted.applied.applied().len(), FILES);
    assert_eq!(worker.history().len(), 1 + FILES * 2 + 1);
    elapsed
}

fn main() {
    // The journal lives in the data directory, as in saki (fsync'd before the first write).
    let data = tempfile::tempdir().unwrap();
    saki_tools::state::set_data_dir(data.path().to_path_buf());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = MockServer::start().unwrap();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| runtime.block_on(one_run(&server)))
        .collect();
    times.sort();
    println!(
        "accept ({FILES} files applied, journal on disk, {} items appended, fsync'd): median {:.2} ms, best {:.2} ms, worst {:.2} ms (target < 5 ms)",
        2 + FILES * 2,
        times[RUNS / 2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3
    );
}
