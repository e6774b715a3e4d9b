#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What an `@path` reference to a huge file costs: its cap, not the file. The peak
//! resident memory (VmHWM) is measured around each read, so this file holds one test:
//! its own process, no other test allocating beside it.

use saki_llm_worker::Item;
use saki_pod::FsView;
use saki_tools::Workspace;
use std::io::Write;
use std::sync::Arc;

/// More than a read of a 16 KiB reference may add to the peak.
const MAX_GROWTH_KB: u64 = 16 * 1024;

fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Resets the peak to the current size where the kernel allows it (`clear_refs` 5).
fn start() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    peak_kb()
}

#[tokio::test]
async fn a_reference_to_a_huge_file_reads_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    // 700 MB that take no disk: 20 KB of text, then a hole of NUL bytes.
    let mut file = std::fs::File::create(dir.path().join("huge.log")).unwrap();
    for i in 0..1000 {
        writeln!(file, "log line {i:05} with text").unwrap();
    }
    file.set_len(700 << 20).unwrap();
    drop(file);
    let view = FsView::new(Arc::new(Workspace::new(dir.path()).unwrap()));

    let base = start();
    let item = view.resolve_file_ref("huge.log", 16 * 1024).await.unwrap();
    let grown = peak_kb().saturating_sub(base);
    eprintln!("@huge.log: peak +{grown} kB");
    let Item::System { text } = &item else {
        panic!("{item:?}")
    };
    assert!(text.starts_with("[File: huge.log]\nlog line 00000 with text\n"));
    assert!(
        text.ends_with("\n[...truncated, 734003200 bytes total — use read_file for the rest]"),
        "{}",
        &text[text.len() - 200..]
    );
    assert!(grown < MAX_GROWTH_KB, "@path: {grown} kB");

    let base = start();
    let body = view.read_text("huge.log", 4096).await.unwrap();
    let grown = peak_kb().saturating_sub(base);
    eprintln!("read_text: peak +{grown} kB");
    assert!(body.starts_with("log line 00000"), "{body:.100}");
    assert!(grown < MAX_GROWTH_KB, "read_text: {grown} kB");
}
