#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The grep tool's search against ripgrep (`rg`) on a large tree, same pattern, warm and
//! cold (page cache dropped when permitted). Run: `cargo bench -p saki-tools`.
//! `SAKI_GREP_TREE` picks the tree (default: the cargo registry sources),
//! `SAKI_GREP_PATTERN` the regex.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tree() -> PathBuf {
    if let Ok(t) = std::env::var("SAKI_GREP_TREE") {
        return t.into();
    }
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    home.join("registry/src")
}

fn drop_caches() -> bool {
    let _ = Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

fn saki(tree: &Path, pattern: &str) -> (Duration, usize) {
    let start = Instant::now();
    let query = saki_tools::fs::GrepQuery {
        pattern: pattern.to_owned(),
        glob: None,
        case_insensitive: false,
        max: saki_tools::grep::MAX_MATCHES,
        shown_root: tree.to_path_buf(),
    };
    let total = saki_tools::grep::search(tree, &query).unwrap().total;
    (start.elapsed(), total)
}

fn rg(tree: &Path, pattern: &str) -> Option<(Duration, usize)> {
    let start = Instant::now();
    let out = Command::new("rg")
        .args(["-n", "--no-messages", pattern])
        .arg(tree)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let elapsed = start.elapsed();
    Some((
        elapsed,
        out.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
    ))
}

fn best<F: FnMut() -> (Duration, usize)>(mut f: F, runs: usize) -> (Duration, usize) {
    (0..runs).map(|_| f()).min_by_key(|r| r.0).unwrap()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tree = tree();
    let pattern =
        std::env::var("SAKI_GREP_PATTERN").unwrap_or_else(|_| r"unsafe impl\s+Send".into());
    if !tree.is_dir() {
        println!("grep bench: skipped ({} missing)", tree.display());
        return;
    }
    println!("tree {}  pattern {pattern:?}", tree.display());
    let has_rg = rg(&tree, &pattern).is_some();
    if drop_caches() {
        let s = saki(&tree, &pattern);
        drop_caches();
        let r = if has_rg { rg(&tree, &pattern) } else { None };
        report("cold", s, r);
    } else {
        println!("cold: skipped (cannot drop the page cache without root)");
    }
    let s = best(|| saki(&tree, &pattern), 5);
    let r = if has_rg {
        Some(best(|| rg(&tree, &pattern).unwrap(), 5))
    } else {
        None
    };
    report("warm", s, r);
}

fn report(label: &str, s: (Duration, usize), r: Option<(Duration, usize)>) {
    match r {
        Some(r) => println!(
            "{label}: saki grep {:.1} ms ({} matches), rg {:.1} ms ({} lines), ratio {:.2}x",
            s.0.as_secs_f64() * 1e3,
            s.1,
            r.0.as_secs_f64() * 1e3,
            r.1,
            s.0.as_secs_f64() / r.0.as_secs_f64()
        ),
        None => println!(
            "{label}: saki grep {:.1} ms ({} matches); rg not installed",
            s.0.as_secs_f64() * 1e3,
            s.1
        ),
    }
}
