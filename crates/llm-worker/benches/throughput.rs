#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Decode + Timeline dispatch throughput per wire protocol on a long stream, on one
//! core: SSE bytes (in 16 KiB network-sized chunks) -> protocol decoder -> Timeline
//! with the built-in collectors. Run with `cargo bench -p saki-llm-worker`.
//!
//! Also times the cold start of `saki --version` when a release binary is present
//! (`cargo build --release -p saki-cli` first; `SAKI_BIN` overrides the path).

use saki_llm_client::{decode_sse_chunks, WireApi};
use saki_llm_worker::Responder;
use saki_testkit::{render, Turn, Wire};
use std::time::{Duration, Instant};

const DELTAS: usize = 120_000;

fn long_turn() -> Turn {
    // Word-sized deltas, like a real model; thinking, text and a tool call.
    let words: Vec<String> = (0..DELTAS).map(|i| format!("w{}", i % 997)).collect();
    let text = words.join(" ");
    Turn::new()
        .with_thinking(&text[..text.len() / 10])
        .with_text(text)
        .with_tool_call("call_1", "read_file", r#"{"path":"src/main.rs"}"#)
        .with_usage(1000, DELTAS as u64)
}

fn wire_of(w: WireApi) -> Wire {
    match w {
        WireApi::Chat => Wire::Chat,
        WireApi::Responses => Wire::Responses,
        WireApi::Anthropic => Wire::Anthropic,
        WireApi::Gemini => Wire::Gemini,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let turn = long_turn();
    println!(
        "{:<10} {:>10} {:>10} {:>12} {:>14}",
        "protocol", "events", "MiB", "seconds", "events/s"
    );
    for wire in WireApi::ALL {
        let body: String = render(wire_of(wire), &turn, "bench-model").concat();
        let chunks: Vec<&[u8]> = body.as_bytes().chunks(16 * 1024).collect();
        let mut responder = Responder::new();
        // One warm-up run, then the best of three.
        let mut best = Duration::MAX;
        let mut events = 0;
        for _ in 0..4 {
            let start = Instant::now();
            let decoded = decode_sse_chunks(wire, chunks.iter().copied());
            let mid = Instant::now();
            let response = responder.replay(decoded.iter());
            if std::env::var_os("BENCH_SPLIT").is_some() {
                eprintln!(
                    "{wire}: decode {:?} dispatch {:?}",
                    mid - start,
                    mid.elapsed()
                );
            }
            let elapsed = start.elapsed();
            assert!(response.text().len() > DELTAS, "{wire}: text missing");
            events = decoded.len();
            best = best.min(elapsed);
        }
        println!(
            "{:<10} {:>10} {:>10.1} {:>12.3} {:>14.0}",
            wire.as_str(),
            events,
            body.len() as f64 / (1024.0 * 1024.0),
            best.as_secs_f64(),
            events as f64 / best.as_secs_f64()
        );
    }
    cold_start();
}

fn cold_start() {
    let bin = std::env::var("SAKI_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            let target = std::env::var("CARGO_TARGET_DIR")
                .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
            std::path::Path::new(&target).join("release/saki")
        });
    if !bin.exists() {
        println!(
            "cold start: skipped ({} not built; run cargo build --release -p saki-cli)",
            bin.display()
        );
        return;
    }
    let run = || {
        let status = std::process::Command::new(&bin)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    };
    for _ in 0..5 {
        run();
    }
    let n = 100;
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "cold start `saki --version` over {n} runs: median {:.2} ms, p90 {:.2} ms",
        times[n / 2].as_secs_f64() * 1e3,
        times[n * 9 / 10].as_secs_f64() * 1e3
    );
}
