#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What reading a huge file costs: bounded by what the tool shows, not by the file. The
//! peak resident memory (VmHWM) is measured around each call, so this file holds one
//! test: its own process, no other test allocating beside it.

use saki_llm_worker::{ToolExecutionContext, ToolServer};
use saki_tools::{builtin_server, Workspace};
use serde_json::json;
use std::io::Write;
use std::sync::Arc;

/// More than any of these calls may add to the peak: a page, a read buffer, the
/// searcher's line limit on each walker thread.
const MAX_GROWTH_KB: u64 = 48 * 1024;

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Starts a measurement: resets the peak to the current size where the kernel allows
/// it (`clear_refs` 5), and returns the size to compare the peak with.
fn start() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    status_kb("VmHWM:")
}

/// The peak's growth since `start`, printed for the record (`--nocapture`).
fn growth_since(base: u64, what: &str) -> u64 {
    let grown = status_kb("VmHWM:").saturating_sub(base);
    eprintln!("{what}: peak +{grown} kB");
    grown
}

async fn call(server: &ToolServer, name: &str, args: serde_json::Value) -> Result<String, String> {
    let ctx = ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    };
    server
        .call_tool(name, &args.to_string(), ctx)
        .await
        .map(|o| o.content)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn huge_files_and_lines_cost_what_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    // 700 MB that take no disk: 20 KB of text lines, then a hole (NUL bytes, one line).
    let mut file = std::fs::File::create(ws.join("huge.log")).unwrap();
    for i in 0..1000 {
        writeln!(file, "log line {i:05} with text").unwrap();
    }
    file.set_len(700 << 20).unwrap();
    drop(file);
    // One line of 48 MB, with no NUL (binary detection would stop grep at one).
    let mut file = std::fs::File::create(ws.join("one_line.txt")).unwrap();
    file.write_all(b"needle ").unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..48 {
        file.write_all(&chunk).unwrap();
    }
    file.write_all(b"\n").unwrap();
    drop(file);
    std::fs::write(ws.join("small.txt"), "a needle here\n").unwrap();
    let server = builtin_server(Arc::new(Workspace::new(&ws).unwrap())).unwrap();

    let base = start();
    let out = call(&server, "read_file", json!({"path": "huge.log"}))
        .await
        .unwrap();
    assert!(out.starts_with("log line 00000 with text\n"), "{out:.100}");
    assert!(
        out.ends_with("; use offset=656 to read more]"),
        "{}",
        &out[out.len() - 200..]
    );
    let grown = growth_since(base, "read_file's first page");
    assert!(grown < MAX_GROWTH_KB, "read_file's first page: {grown} kB");

    // Paging far in counts lines on the way and keeps none of them.
    let base = start();
    let out = call(
        &server,
        "read_file",
        json!({"path": "huge.log", "offset": 990, "limit": 5}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("log line 00989 with text\n"), "{out:.100}");
    let grown = growth_since(base, "read_file at an offset");
    assert!(grown < MAX_GROWTH_KB, "read_file at an offset: {grown} kB");

    // The hole is one line of 700 MB, cut at the output cap.
    let base = start();
    let out = call(
        &server,
        "read_file",
        json!({"path": "huge.log", "offset": 1001}),
    )
    .await
    .unwrap();
    assert!(
        out.contains(
            "[...truncated: line 1001 is longer than 16384 bytes; only its start is shown]"
        ),
        "{}",
        &out[out.len() - 200..]
    );
    let grown = growth_since(base, "read_file of a 700 MB line");
    assert!(
        grown < MAX_GROWTH_KB,
        "read_file of a 700 MB line: {grown} kB"
    );

    let base = start();
    let out = call(&server, "read_file", json!({"path": "one_line.txt"}))
        .await
        .unwrap();
    assert!(out.starts_with("needle xxx"), "{out:.100}");
    let grown = growth_since(base, "read_file of a 48 MB line");
    assert!(
        grown < MAX_GROWTH_KB,
        "read_file of a 48 MB line: {grown} kB"
    );

    let base = start();
    let out = call(&server, "grep", json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert!(out.contains("small.txt:1:a needle here"), "{out}");
    assert!(
        out.contains("[not searched past a line longer than 1 MiB: one_line.txt;"),
        "{out}"
    );
    let grown = growth_since(base, "grep over a 48 MB line");
    assert!(grown < MAX_GROWTH_KB, "grep over a 48 MB line: {grown} kB");
}
