//! Lines for people about what the engine reports, shared by every front end.

use saki_llm_worker::CompactionReport;

/// The language servers' problems in a write's result: the block `edit` and `write_file`
/// append, parsed (`parse_block`) or counted (`error_count`). saki-lsp writes that
/// block; front ends read it through here and depend on the engine alone.
pub use saki_lsp::{error_count, parse_block, Diag, Severity};

/// One line for a compaction: what happened and the tokens before and after.
pub fn compaction_line(report: &CompactionReport) -> String {
    let status = serde_json::to_value(report.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut line = format!(
        "[compaction] {status} ({}): {} → {} tokens",
        report.trigger.as_str(),
        report.tokens_before,
        report.tokens_after
    );
    if report.summarized > 0 {
        line.push_str(&format!("; {} items summarized", report.summarized));
    }
    if report.pruned > 0 {
        line.push_str(&format!("; {} old tool outputs cleared", report.pruned));
    }
    if !report.auto_read.is_empty() {
        line.push_str(&format!("; re-read {}", report.auto_read.join(", ")));
    }
    if let Some(message) = &report.message {
        line.push_str(&format!(" — {message}"));
    }
    line
}
