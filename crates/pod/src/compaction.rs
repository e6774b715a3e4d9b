//! Context compaction, the decision and planning half: token accounting, when to act,
//! which old tool outputs to prune, and where to split history for a summary. All pure
//! functions over history, so they are cheap (see `benches/compaction.rs`) and testable.
//! What the summary request says and how its answer is checked is in `summary.rs`.

use crate::instructions::estimate_tokens;
use saki_llm_worker::{Item, ToolResultStatus};
use saki_tools::common::prefix_at_boundary;
use std::collections::HashSet;

pub use crate::summary::{checked_summary, compacted_history, previous_snapshot, SUMMARY_MARKER};

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
/// The current turn is kept whole when it is at most this share of the history (by size);
/// a longer one may be split between its tool rounds, or one long agentic turn could never
/// be compacted at all.
pub const WHOLE_TURN_SHARE: f64 = 0.5;

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
        Item::Image { path, .. } => (path, ""),
    }
}

/// Tokens an image costs: providers bill by area, about one token per 750 pixels
/// (Anthropic's rule; OpenAI's tiles and Gemini's 258-token tiles come out close).
fn image_tokens(item: &Item) -> Option<usize> {
    match item {
        Item::Image { image, .. } => {
            let pixels = u64::from(image.width) * u64::from(image.height);
            Some(usize::try_from(pixels / 750).unwrap_or(usize::MAX).max(85))
        }
        _ => None,
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
    if let Some(tokens) = image_tokens(item) {
        // As many characters as the text that would cost the same.
        return tokens.saturating_mul(4);
    }
    let (a, b) = item_text(item);
    count(a) + count(b)
}

/// Estimated tokens of an item (a few tokens of framing per item).
pub fn item_tokens(item: &Item) -> usize {
    if let Some(tokens) = image_tokens(item) {
        return tokens + 4;
    }
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

/// A context window smaller than this (in tokens) is pruned by [`PruneLimits::for_window`].
pub const SMALL_WINDOW: u64 = 16_384;

/// How much tool output a prune keeps and when it is worth making.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneLimits {
    /// Tool output tokens kept, newest first, before older outputs may be pruned.
    pub protect: usize,
    /// A prune is made only when it frees more than this.
    pub minimum: usize,
    /// Newest user turns whose outputs are never pruned.
    pub protected_turns: usize,
}

impl PruneLimits {
    /// [`PRUNE_PROTECT`], [`PRUNE_MINIMUM`] and [`PRUNE_PROTECTED_TURNS`]; for a window
    /// under [`SMALL_WINDOW`] an eighth of it kept and a thirty-second worth freeing, in
    /// the current turn too (only the newest output is always kept). A stock llama.cpp
    /// server's 4096-token slot holds the system prompt and three pages of a file: a
    /// turn reading on would otherwise need a summary from a small model after every read.
    pub fn for_window(context_window: u64) -> Self {
        if context_window > 0 && context_window < SMALL_WINDOW {
            let window = usize::try_from(context_window).unwrap_or(usize::MAX);
            return Self {
                protect: window / 8,
                minimum: window / 32,
                protected_turns: 0,
            };
        }
        Self::default()
    }
}

impl Default for PruneLimits {
    fn default() -> Self {
        Self {
            protect: PRUNE_PROTECT,
            minimum: PRUNE_MINIMUM,
            protected_turns: PRUNE_PROTECTED_TURNS,
        }
    }
}

/// Plans a prune: walking newest to oldest from the end back to `boundary` (the last
/// compaction), the newest output and the outputs of `limits.protected_turns` user turns
/// are kept; once completed tool outputs add up past `limits.protect`, older ones are
/// marked — if that frees more than `limits.minimum`. An already pruned output ends the
/// walk.
pub fn plan_prune(history: &[Item], boundary: usize, limits: PruneLimits) -> Option<PrunePlan> {
    let (mut total, mut freed, mut turns) = (0usize, 0usize, 0usize);
    // With no turn protected, the output the model is about to act on still is.
    let mut keep_newest = limits.protected_turns == 0;
    let mut indices = Vec::new();
    for i in (boundary.min(history.len())..history.len()).rev() {
        match &history[i] {
            Item::User { .. } => turns += 1,
            Item::ToolResult {
                content, status, ..
            } => {
                if turns < limits.protected_turns || std::mem::take(&mut keep_newest) {
                    continue;
                }
                if content.starts_with(PRUNED_MARKER) {
                    break;
                }
                if !matches!(status, ToolResultStatus::Success | ToolResultStatus::Error) {
                    continue;
                }
                let estimate = estimate_tokens(content);
                total += estimate;
                if total > limits.protect {
                    freed += estimate;
                    indices.push(i);
                }
            }
            _ => {}
        }
    }
    (freed > limits.minimum).then_some(PrunePlan {
        indices,
        tokens_freed: freed,
    })
}

/// Where the kept tail starts: `history[..split]` is summarized. A split is at a user
/// message, or — when the current turn (from the last user message on) is more than
/// [`WHOLE_TURN_SHARE`] of the history — also at the start of a model response inside that
/// turn that follows a finished round of tool results. Either way no tool call is ever
/// parted from its result. The first split at or past `fraction` of the total size wins;
/// if none, a history ending in a model answer without tool calls may be summarized whole,
/// else the last possible split is used.
pub fn find_split_point(history: &[Item], fraction: f64) -> usize {
    let sizes: Vec<usize> = history.iter().map(item_chars).collect();
    let total: usize = sizes.iter().sum();
    let target = total as f64 * fraction;
    let turn_start = history
        .iter()
        .rposition(|i| matches!(i, Item::User { .. }))
        .unwrap_or(0);
    let turn_size: usize = sizes[turn_start..].iter().sum();
    let inner_splits = turn_size as f64 > total as f64 * WHOLE_TURN_SHARE;
    // Calls without their result yet, and whether this turn has finished a round.
    let mut open: HashSet<&str> = HashSet::new();
    let mut round_done = false;
    let mut cumulative = 0usize;
    let mut last_split = 0;
    for (i, item) in history.iter().enumerate() {
        let split_here = match item {
            Item::User { .. } => true,
            Item::AssistantText { .. } | Item::Thinking { .. } | Item::ToolCall { .. } => {
                inner_splits
                    && round_done
                    && open.is_empty()
                    && matches!(
                        history[i - 1],
                        Item::ToolResult { .. } | Item::System { .. } | Item::Image { .. }
                    )
            }
            // An image belongs with the prompt or the result before it.
            Item::System { .. } | Item::ToolResult { .. } | Item::Image { .. } => false,
        };
        if split_here {
            if cumulative as f64 >= target {
                return i;
            }
            last_split = i;
        }
        cumulative += sizes[i];
        match item {
            Item::ToolCall { ctx, .. } => {
                open.insert(ctx.call_id.as_str());
            }
            Item::ToolResult { ctx, .. } => {
                open.remove(ctx.call_id.as_str());
                round_done |= i > turn_start;
            }
            _ => {}
        }
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

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
