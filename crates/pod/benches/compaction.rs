#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Overflow check + prune plan + split point on long histories (two sizes, to show the
//! cost grows linearly). Run: `cargo bench -p saki-pod`.

use saki_llm_worker::{Item, ToolExecutionContext, ToolResultStatus};
use saki_pod::compaction::*;
use std::time::{Duration, Instant};

fn history(items: usize) -> Vec<Item> {
    let mut h = Vec::with_capacity(items);
    let mut i = 0;
    while h.len() < items {
        let ctx = ToolExecutionContext {
            call_id: format!("c{i}"),
            batch_id: format!("b{i}"),
            call_index: 0,
        };
        h.push(Item::user(format!(
            "please look at file number {i} and fix the bug in it"
        )));
        h.push(Item::ToolCall {
            name: "read_file".into(),
            arguments: format!("{{\"path\":\"src/f{i}.rs\"}}"),
            signature: None,
            ctx: ctx.clone(),
        });
        h.push(Item::ToolResult {
            name: "read_file".into(),
            content: "fn main() { println!(\"hello\"); }\n".repeat(40),
            status: ToolResultStatus::Success,
            ctx,
        });
        h.push(Item::AssistantText {
            text: format!("The bug in file {i} is an off-by-one; fixed."),
        });
        i += 1;
    }
    h.truncate(items);
    h
}

fn run(h: &[Item]) -> Duration {
    let start = Instant::now();
    let tokens = current_tokens(h, Some((h.len() / 2, 50_000)));
    let compact = should_compact(tokens, 200_000, 32_000, DEFAULT_THRESHOLD);
    let plan = plan_prune(h, 0, PruneLimits::default());
    let split = find_split_point(h, 1.0 - COMPRESSION_PRESERVE_THRESHOLD);
    std::hint::black_box((compact, plan, split));
    start.elapsed()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    for size in [10_000, 20_000] {
        let h = history(size);
        let best = (0..20).map(|_| run(&h)).min().unwrap();
        println!(
            "{size} items: overflow check + prune plan + split point in {:.2} ms",
            best.as_secs_f64() * 1e3
        );
    }
}
