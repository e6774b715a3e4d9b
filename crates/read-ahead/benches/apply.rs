#![allow(clippy::unwrap_used, clippy::expect_used)]
//! How long `OverlayFs::apply` takes for 10 written files (5 edited, 5 new, 4 KiB
//! each), in a temp tree: with its journal on disk (as saki runs it), and with the journal
//! in memory only (what the journal's fsyncs cost). Target: under 5 ms where an fsync is
//! cheap; the time is mostly the 10 files' fsyncs (run together) plus the journal's 3.
//! Run: `cargo bench -p saki-read-ahead`.
//! `SAKI_BENCH_DIR` picks where the tree lives (default: the system temp dir), so a
//! disk and a tmpfs can both be measured.

use saki_read_ahead::OverlayFs;
use saki_tools::Workspace;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILES: usize = 10;
const RUNS: usize = 30;

fn one_run(journal: bool) -> Duration {
    let parent = std::env::var_os("SAKI_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::tempdir_in(parent).unwrap();
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let body = "x".repeat(4096);
    for i in 0..FILES / 2 {
        std::fs::write(root.join(format!("src/f{i}.rs")), &body).unwrap();
    }
    let ws = Arc::new(Workspace::new(&root).unwrap());
    let overlay = OverlayFs::new_in(ws, &tmp.path().join("base")).unwrap();
    for i in 0..FILES {
        let path = if i < FILES / 2 {
            format!("src/f{i}.rs")
        } else {
            format!("new/n{i}.rs")
        };
        std::fs::write(overlay.resolve_write(&path).unwrap(), format!("{body}{i}")).unwrap();
    }
    let start = Instant::now();
    let journal_dir = tmp.path().join("journal");
    let report = overlay.apply_with_journal(journal.then_some(journal_dir.as_path()));
    let elapsed = start.elapsed();
    assert!(report.is_complete());
    elapsed
}

fn main() {
    for (journal, label) in [(true, "journal on disk"), (false, "journal in memory")] {
        let mut times: Vec<Duration> = (0..RUNS).map(|_| one_run(journal)).collect();
        times.sort();
        let median = times[RUNS / 2];
        let worst = times[RUNS - 1];
        println!(
            "apply {FILES} files, {label}: median {:.2} ms, best {:.2} ms, worst {:.2} ms (target < 5 ms)",
            median.as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
            worst.as_secs_f64() * 1e3
        );
    }
}
