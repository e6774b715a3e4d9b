//! Context compaction, the decision and planning half: token accounting, when to act,
//! which old tool outputs to prune, and where to split history for a summary. All pure
//! functions over history, so they are cheap (see `benches/compaction.rs`) and testable.

use crate::instructions::estimate_tokens;
use saki_llm_worker::{CompactionStatus, Item, ToolResultStatus};
use saki_tools::common::prefix_at_boundary;

/// Tool output tokens kept, newest first, before older outputs may be pruned.
pub const PRUNE_PROTECT: usize = 40_000;
/// Pruning runs only when it frees more than this.
pub const PRUNE_MINIMUM: usize = 20_000;
/// User turns (newest) never pruned.
pub const PRUNE_PROTECTED_TURNS: usize = 2;
/// Share of history (by size) kept verbatim after a summary.
pub const COMPRESSION_PRESERVE_THRESHOLD: f64 = 0.3;
/// Default `compaction.threshold`: act at this share of the usable window.
pub const DEFAULT_THRESHOLD: f64 = 0.85;
/// What the model sees instead of a pruned tool output.
pub const PRUNED_MARKER: &str = "[Old tool result content cleared]";

fn item_text(item: &Item) -> (&str, &str) {
    match item {
        Item::User { text }
        | Item::System { text }
        | Item::AssistantText { text }
        | Item::Thinking { text, .. } => (text, ""),
        Item::ToolCall {
            name, arguments, ..
        } => (name, arguments),
        Item::ToolResult { name, content, .. } => (name, content),
    }
}

/// Characters of an item, as the split point measures size.
pub fn item_chars(item: &Item) -> usize {
    let count = |s: &str| {
        if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        }
    };
    let (a, b) = item_text(item);
    count(a) + count(b)
}

/// Estimated tokens of an item (a few tokens of framing per item).
pub fn item_tokens(item: &Item) -> usize {
    let (a, b) = item_text(item);
    estimate_tokens(a) + estimate_tokens(b) + 4
}

/// The prompt size now: the provider's last report (for the first `reported_items` items)
/// plus an estimate of the items since, scaled by how far estimates were off for the
/// reported prefix (clamped to 0.5–2x so one odd report cannot run away).
pub fn current_tokens(history: &[Item], report: Option<(usize, u64)>) -> u64 {
    let estimate = |items: &[Item]| items.iter().map(item_tokens).sum::<usize>() as u64;
    match report {
        None => estimate(history),
        Some((n, reported)) => {
            let n = n.min(history.len());
            let prefix = estimate(&history[..n]).max(1);
            let ratio = (reported as f64 / prefix as f64).clamp(0.5, 2.0);
            reported + (estimate(&history[n..]) as f64 * ratio).round() as u64
        }
    }
}

/// Whether to compact: `tokens >= threshold × (context_window − reserved_output)`.
pub fn should_compact(
    tokens: u64,
    context_window: u64,
    reserved_output: u64,
    threshold: f64,
) -> bool {
    let usable = context_window.saturating_sub(reserved_output);
    usable > 0 && tokens as f64 >= threshold * usable as f64
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunePlan {
    /// Indices of tool results to clear, newest first.
    pub indices: Vec<usize>,
    pub tokens_freed: usize,
}

/// Plans a prune: walking newest to oldest from the end back to `boundary` (the last
/// compaction), the newest user turns are protected; once completed tool outputs add up
/// past [`PRUNE_PROTECT`], older ones are marked — if that frees more than
/// [`PRUNE_MINIMUM`]. An already pruned output ends the walk.
pub fn plan_prune(history: &[Item], boundary: usize) -> Option<PrunePlan> {
    let (mut total, mut freed, mut turns) = (0usize, 0usize, 0usize);
    let mut indices = Vec::new();
    for i in (boundary.min(history.len())..history.len()).rev() {
        match &history[i] {
            Item::User { .. } => turns += 1,
            Item::ToolResult {
                content, status, ..
            } if turns >= PRUNE_PROTECTED_TURNS => {
                if content.starts_with(PRUNED_MARKER) {
                    break;
                }
                if !matches!(status, ToolResultStatus::Success | ToolResultStatus::Error) {
                    continue;
                }
                let estimate = estimate_tokens(content);
                total += estimate;
                if total > PRUNE_PROTECT {
                    freed += estimate;
                    indices.push(i);
                }
            }
            _ => {}
        }
    }
    (freed > PRUNE_MINIMUM).then_some(PrunePlan {
        indices,
        tokens_freed: freed,
    })
}

/// Where the kept tail starts: `history[..split]` is summarized. A split is only ever at
/// a user message (never between a tool call and its result). The first user message at
/// or past `fraction` of the total size wins; if none, a history ending in a model answer
/// without tool calls may be summarized whole, else the last possible split is used.
pub fn find_split_point(history: &[Item], fraction: f64) -> usize {
    let total: usize = history.iter().map(item_chars).sum();
    let target = total as f64 * fraction;
    let mut cumulative = 0usize;
    let mut last_split = 0;
    for (i, item) in history.iter().enumerate() {
        if matches!(item, Item::User { .. }) {
            if cumulative as f64 >= target {
                return i;
            }
            last_split = i;
        }
        cumulative += item_chars(item);
    }
    match history.last() {
        Some(Item::AssistantText { .. } | Item::Thinking { .. }) => history.len(),
        _ => last_split,
    }
}

/// What the model sees instead of each planned tool output: the marker plus a one-line
/// summary naming the call. (The full output stays in the session log.)
pub fn prune_replacements(history: &[Item], plan: &PrunePlan) -> Vec<(usize, String)> {
    plan.indices
        .iter()
        .filter_map(|&i| match history.get(i)? {
            Item::ToolResult {
                name, content, ctx, ..
            } => {
                let arguments = history[..i].iter().rev().find_map(|item| match item {
                    Item::ToolCall {
                        ctx: c, arguments, ..
                    } if c.call_id == ctx.call_id => Some(arguments.as_str()),
                    _ => None,
                });
                let call = match arguments {
                    Some(a) if a.len() <= 120 => format!("{name} {a}"),
                    Some(a) => format!("{name} {}…", prefix_at_boundary(a, 120)),
                    None => name.clone(),
                };
                let summary = format!(
                    "{PRUNED_MARKER} {call}: {} bytes, {} lines",
                    content.len(),
                    content.lines().count()
                );
                Some((i, summary))
            }
            _ => None,
        })
        .collect()
}

/// Marks the summary item so later compactions find (and merge) the previous snapshot.
pub const SUMMARY_MARKER: &str = "[Summary of the earlier conversation]";

/// The instruction appended to the history being summarized.
pub fn summary_instruction(previous_snapshot: Option<&str>) -> String {
    let mut text = String::from(
        "Stop the task for a moment and write a <state_snapshot> of this conversation so far, so that \
         work can continue from it alone. Be specific and brief. Include:\n\
         - overall goal: what the person wants in the end;\n\
         - instructions: the person's standing instructions, preferences and constraints, in their words;\n\
         - key knowledge: commands, conventions and facts learned (build/test commands, paths, APIs);\n\
         - file system state: files read, modified and created, with paths and what changed;\n\
         - recent actions and their results;\n\
         - plan: steps done, in progress, and to do.\n\
         Answer with the <state_snapshot>...</state_snapshot> block only.",
    );
    if let Some(previous) = previous_snapshot {
        text.push_str(
            "\n\nAn earlier snapshot exists (below). Merge it into the new one; where they disagree, \
             the newer facts win.\n",
        );
        text.push_str(previous);
    }
    text
}

/// The newest summary item's text in `history`, if any.
pub fn previous_snapshot(history: &[Item]) -> Option<&str> {
    history.iter().rev().find_map(|i| match i {
        Item::System { text } => text.strip_prefix(SUMMARY_MARKER).map(str::trim_start),
        _ => None,
    })
}

/// Builds the history after a summary — the marked snapshot, a short acknowledgement,
/// then the kept tail — and verifies it: an empty summary or a history that did not
/// shrink is refused (the old history stays).
pub fn compacted_history(
    summary: &str,
    tail: &[Item],
    tokens_before: u64,
) -> Result<(Vec<Item>, u64), CompactionStatus> {
    let summary = summary.trim();
    if summary.is_empty() {
        return Err(CompactionStatus::FailedEmptySummary);
    }
    let mut history = vec![
        Item::system(format!("{SUMMARY_MARKER}\n{summary}")),
        Item::AssistantText {
            text: "Understood; I will continue from this summary.".into(),
        },
    ];
    history.extend_from_slice(tail);
    let after = current_tokens(&history, None);
    if after >= tokens_before {
        return Err(CompactionStatus::FailedInflated);
    }
    Ok((history, after))
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
