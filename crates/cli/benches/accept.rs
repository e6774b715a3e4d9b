#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What accepting a speculation costs when it ran a command: the speculation runs a
//! generator that rewrites 10 files and the project's test (both in an overlay of the
//! workspace, through the real sandbox helper), then `accept` applies the 10 files (all
//! or none, journalled, fsync'd). Only the accept is timed; 30 runs, median and p90.
//! Run: `cargo bench -p saki-cli --bench accept`.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::{Item, WorkerConfig};
use saki_read_ahead::{accept, CacheSafeParams, SpeculationStatus, Speculator};
use saki_sandbox::shell_env::ShellEnvConfig;
use saki_sandbox::{OverlayMount, SandboxMode, SandboxPolicy};
use saki_testkit::{MockServer, Turn};
use saki_tools::{ApprovalMode, ShellRuntime, Workspace};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 30;
const FILES: usize = 10;

const GENERATE: &str = "python3 gen.py && python3 -m unittest -q";

fn workspace(dir: &std::path::Path, base: &std::path::Path) -> Option<Arc<Workspace>> {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for i in 0..FILES {
        std::fs::write(
            dir.join(format!("src/m{i}.py")),
            format!("def f{i}():\n    return -1\n"),
        )
        .unwrap();
    }
    std::fs::write(dir.join("test_m.py"), "import unittest\n").unwrap();
    std::fs::write(
        dir.join("gen.py"),
        "for i in range(10):\n    open(f'src/m{i}.py', 'w').write(f'def f{i}():\\n    return {i}\\n')\n",
    )
    .unwrap();
    let mut workspace = Workspace::new(dir).unwrap();
    let mut runtime = ShellRuntime::new(&ShellEnvConfig::default(), &[]).unwrap();
    let policy = SandboxPolicy::new(
        SandboxMode::WorkspaceWrite,
        workspace.roots(),
        runtime.tmp(),
        None,
        &[],
        false,
    );
    let env = |name: &str| std::env::var_os(name);
    let unasked = policy.for_unasked(workspace.roots(), runtime.tmp_unasked(), &env, None);
    let saki: PathBuf = env!("CARGO_BIN_EXE_saki").into();
    let probe = tempfile::tempdir_in(base).unwrap();
    let (upper, work) = (probe.path().join("u"), probe.path().join("w"));
    std::fs::create_dir_all(&upper).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let mount = OverlayMount {
        root: workspace.root().to_path_buf(),
        upper,
        work,
    };
    let status = policy
        .for_speculation(workspace.roots(), runtime.tmp_unasked(), &env, None, mount)
        .and_then(|p| saki_sandbox::probe(&saki, &p).ok())?;
    if !status.speculation_overlay {
        return None;
    }
    runtime.set_sandbox(saki, &policy, unasked.as_ref());
    runtime.allow_speculation_overlay(workspace.roots(), None);
    workspace.set_shell_runtime(Arc::new(runtime));
    Some(Arc::new(workspace))
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let Some(ws) = workspace(dir.path(), base.path()) else {
        println!("the kernel refuses the overlay here: nothing to measure");
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let params = CacheSafeParams {
        system: Some("sys".into()),
        tools: saki_tools::builtin_server(ws.clone())
            .unwrap()
            .definitions(),
        history: vec![
            Item::user("look"),
            Item::AssistantText { text: "ok".into() },
        ],
        model: "fast".into(),
        ..Default::default()
    };
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let server = MockServer::start().unwrap();
        server.push(Turn::new().with_tool_call(
            "c1",
            "shell",
            serde_json::json!({ "command": GENERATE }).to_string(),
        ));
        server.push(Turn::text("Regenerated and tested."));
        let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
        let mut speculator = Speculator::new(client, "fast", ApprovalMode::AutoEdit, ws.clone());
        speculator.overlay_base = base.path().to_path_buf();
        speculator.worker = WorkerConfig::new("fast");
        let spec = rt.block_on(speculator.run(&params, "regenerate", CancellationToken::new()));
        assert_eq!(
            spec.status,
            SpeculationStatus::Completed,
            "{:?}",
            spec.reason
        );
        let start = Instant::now();
        let accepted = accept(spec, "regenerate").unwrap();
        times.push(start.elapsed());
        assert_eq!(accepted.applied.applied().len(), FILES);
        // The next run changes the files again.
        for i in 0..FILES {
            std::fs::write(
                dir.path().join(format!("src/m{i}.py")),
                format!("def f{i}():\n    return -1\n"),
            )
            .unwrap();
        }
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "accept of a speculation that ran a command over {FILES} files: median {:.2} ms, p90 {:.2} ms ({RUNS} runs)",
        ms(times[RUNS / 2]),
        ms(times[RUNS * 9 / 10])
    );
}
