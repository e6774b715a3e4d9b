#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What checkpoints cost: per shell call (the hooks around a command that changes one
//! file: its named paths saved before, the changes looked at after — the paths inotify
//! reported, or a stat walk when a file was created) on trees of 1k, 10k and 50k files;
//! a turn's first call (with the turn's own scan); the first scan ever in a workspace
//! (every file copied into the store); and undoing a 10-file turn. Medians. Run: `cargo bench -p saki-undo --bench undo` (`-- 1000` for
//! one size only).

use saki_llm_worker::interceptor::{Interceptor, ToolCallInfo, ToolResultInfo};
use saki_llm_worker::{Item, ToolExecutionContext, ToolResultStatus};
use saki_tools::Workspace;
use saki_undo::{Checkpoints, UndoLimits};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A source tree: `files` files of about 600 bytes, 100 to a directory, 20 directories
/// to a parent, and an ignored `target/` the scan never walks.
fn tree(root: &Path, files: usize) {
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    for i in 0..files {
        let dir = root.join(format!("src{}/mod{}", i / 2000, (i / 100) % 20));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let body = format!("pub fn f{i}() -> usize {{\n    {i}\n}}\n").repeat(20);
        std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    for i in 0..1000 {
        std::fs::write(root.join(format!("target/debug/o{i}.o")), "obj").unwrap();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn shell_call(batch: usize, command: &str) -> ToolCallInfo {
    ToolCallInfo {
        name: "shell".into(),
        arguments: json!({ "command": command }).to_string(),
        input: json!({ "command": command }),
        ctx: ToolExecutionContext {
            call_id: format!("c{batch}"),
            batch_id: format!("b{batch}"),
            call_index: 0,
        },
    }
}

async fn sizes(files: usize, walk_always: bool) {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    tree(ws.path(), files);
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    let store = saki_undo::store_dir(data.path());
    let cp = Checkpoints::new(workspace, store, Some(UndoLimits::default()));
    cp.set_session(Some("bench"), 0);
    if walk_always {
        cp.walk_always();
    }

    // The first scan ever: every covered file read and copied into the store.
    let started = Instant::now();
    cp.on_prompt_submit(&Item::user("warm up")).await;
    let first = shell_call(0, "touch warm.txt");
    cp.pre_tool_call(&first).await;
    let baseline = started.elapsed();
    cp.end_turn().await;

    let mut per_call = Vec::new();
    let mut creating = Vec::new();
    let mut sealing = Vec::new();
    let mut turn_scan = Vec::new();
    let target = "src0/mod0/f0.rs";
    for round in 1..=15 {
        cp.on_prompt_submit(&Item::user(format!("turn {round}")))
            .await;
        // The turn's own first scan (in the background in a real session).
        let call = shell_call(round, &format!("sed -i s/a/b/ {target}"));
        let started = Instant::now();
        cp.pre_tool_call(&call).await;
        let pre = started.elapsed();
        // The command itself, not timed.
        std::fs::write(ws.path().join(target), format!("changed {round}\n")).unwrap();
        let result = ToolResultInfo {
            call,
            content: String::new(),
            status: ToolResultStatus::Success,
        };
        let started = Instant::now();
        cp.post_tool_call(&result).await;
        let post = started.elapsed();
        // A second call in the same turn: its first scan is done, so this is what each
        // further shell call costs.
        let call = shell_call(1000 + round, "echo more >> notes.txt");
        let started = Instant::now();
        cp.pre_tool_call(&call).await;
        std::fs::write(ws.path().join("notes.txt"), format!("notes {round}\n")).unwrap();
        cp.post_tool_call(&ToolResultInfo {
            call,
            content: String::new(),
            status: ToolResultStatus::Success,
        })
        .await;
        per_call.push(started.elapsed());
        turn_scan.push(pre + post);
        // A call that creates a file: a path the shadow does not know, so the walk
        // decides whether it is ignored.
        let call = shell_call(2000 + round, &format!("touch new{round}.txt"));
        let started = Instant::now();
        cp.pre_tool_call(&call).await;
        std::fs::write(ws.path().join(format!("new{round}.txt")), "new").unwrap();
        cp.post_tool_call(&ToolResultInfo {
            call,
            content: String::new(),
            status: ToolResultStatus::Success,
        })
        .await;
        creating.push(started.elapsed());
        let started = Instant::now();
        cp.end_turn().await;
        sealing.push(started.elapsed());
    }
    let how = if walk_always { "stat walk" } else { "inotify" };
    println!(
        "{files:>6} files, {how}: per shell call {} (median; {} when it creates a file); first \
         call of a turn {}; sealing a turn {}; first scan ever in the workspace {}",
        ms(median(per_call)),
        ms(median(creating)),
        ms(median(turn_scan)),
        ms(median(sealing)),
        ms(baseline),
    );
}

/// A turn that changed 10 files, undone (and redone, to undo it again), timed.
async fn undo_ten() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    tree(ws.path(), 1000);
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    let store = saki_undo::store_dir(data.path());
    let cp = Checkpoints::new(workspace, store, Some(UndoLimits::default()));
    cp.set_session(Some("bench"), 0);
    cp.on_prompt_submit(&Item::user("ten files")).await;
    let paths: Vec<String> = (0..10).map(|i| format!("src0/mod0/f{i}.rs")).collect();
    cp.before_paths(&paths);
    for p in &paths {
        std::fs::write(ws.path().join(p), "rewritten\n".repeat(50)).unwrap();
    }
    cp.after_paths(&paths);
    cp.end_turn().await;
    let mut times = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let outcome = cp.undo(1, false).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(outcome.restored.len(), 10);
        cp.redo(false).await.unwrap();
    }
    println!(
        "undo of a 10-file turn: {} (median, contents fsync'd)",
        ms(median(times))
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let only: Option<usize> = std::env::args().skip(1).find_map(|a| a.parse().ok());
    for files in [1_000, 10_000, 50_000] {
        if only.is_none_or(|n| n == files) {
            runtime.block_on(sizes(files, false));
            runtime.block_on(sizes(files, true));
        }
    }
    runtime.block_on(undo_ten());
}
