#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What the sandbox costs a trivial shell call: the `shell` tool running `true` 100 times
//! with the sandbox helper (`saki sandbox-exec`, Landlock `workspace-write` and seccomp),
//! with the helper and the policy of a command that runs unasked (read-only), and without
//! (plain `bash -c`), median and p90 of each.
//! Run: `cargo bench -p saki-cli --bench sandbox`.

use saki_llm_worker::{Tool, ToolExecutionContext};
use saki_sandbox::shell_env::ShellEnvConfig;
use saki_sandbox::{SandboxMode, SandboxPolicy};
use saki_tools::{ShellRuntime, Workspace};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 100;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Sandboxed,
    Unasked,
}

fn shell(dir: &std::path::Path, kind: Kind) -> (saki_tools::shell::Shell, Arc<ShellRuntime>) {
    let mut workspace = Workspace::new(dir).unwrap();
    let mut runtime = ShellRuntime::new(&ShellEnvConfig::default(), &[]).unwrap();
    if kind != Kind::Plain {
        let home = std::env::var("HOME").ok().map(std::path::PathBuf::from);
        let policy = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            workspace.roots(),
            runtime.tmp(),
            home.as_deref(),
            &[],
            false,
        );
        let unasked = policy.for_unasked(
            workspace.roots(),
            runtime.tmp_unasked(),
            &|name| std::env::var_os(name),
            home.as_deref(),
        );
        runtime.set_sandbox(
            env!("CARGO_BIN_EXE_saki-sandbox-exec").into(),
            &policy,
            unasked.as_ref(),
        );
    }
    let runtime = Arc::new(runtime);
    workspace.set_shell_runtime(runtime.clone());
    (saki_tools::shell::Shell(Arc::new(workspace)), runtime)
}

fn measure(rt: &tokio::runtime::Runtime, dir: &std::path::Path, kind: Kind) -> Vec<Duration> {
    let (tool, runtime) = shell(dir, kind);
    let mark = || {
        if kind == Kind::Unasked {
            runtime.mark_unasked("c");
        }
    };
    let ctx = || ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    };
    let input = r#"{"command": "true"}"#;
    // Warm up the page cache for both binaries.
    for _ in 0..5 {
        mark();
        rt.block_on(tool.execute(input, ctx())).unwrap();
    }
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            mark();
            let start = Instant::now();
            let out = rt.block_on(tool.execute(input, ctx())).unwrap();
            assert!(out.content.contains("[exit code: 0]"), "{}", out.content);
            start.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let plain = measure(&rt, dir.path(), Kind::Plain);
    let sandboxed = measure(&rt, dir.path(), Kind::Sandboxed);
    let unasked = measure(&rt, dir.path(), Kind::Unasked);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for (name, t) in [
        ("bash -c true", &plain),
        ("sandboxed", &sandboxed),
        ("unasked", &unasked),
    ] {
        println!(
            "{name:>14}: median {:.2} ms, p90 {:.2} ms ({RUNS} runs)",
            ms(t[RUNS / 2]),
            ms(t[RUNS * 9 / 10])
        );
    }
    println!(
        "sandbox overhead: {:.2} ms approved, {:.2} ms unasked (median)",
        ms(sandboxed[RUNS / 2]) - ms(plain[RUNS / 2]),
        ms(unasked[RUNS / 2]) - ms(plain[RUNS / 2])
    );
}
