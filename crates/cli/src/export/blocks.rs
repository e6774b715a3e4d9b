//! A session's log as the blocks a reader sees, whatever the format: prompts, answers,
//! thinking, tool calls with their results (paired by call id) and diffs, notes, and
//! the usage of each turn.

use saki_llm_client::UsageEvent;
use saki_llm_worker::{Item, ToolResultStatus};
use saki_pod::transcript::Entry;
use serde_json::Value;
use std::collections::HashMap;

/// Outputs longer than this many lines or bytes are folded.
pub const FOLD_LINES: usize = 30;
pub const FOLD_BYTES: usize = 3_000;

pub fn long(text: &str) -> bool {
    text.len() > FOLD_BYTES || text.lines().count() > FOLD_LINES
}

#[derive(Debug)]
pub struct Tool {
    pub name: String,
    /// The arguments, pretty-printed when they are JSON.
    pub arguments: String,
    /// A diff the call makes (`edit`, `write_file`), built from its arguments.
    pub diff: Option<String>,
    pub result: Option<(ToolResultStatus, String)>,
}

#[derive(Debug)]
pub enum Block {
    Prompt(String),
    /// Context saki attached (an `@file` body, a note to the model).
    Context(String),
    Answer(String),
    Thinking(String),
    Tool(Tool),
    Image(String),
    /// Something that happened to the session (a compaction, an undo).
    Note(String),
    /// The tokens of one turn's main requests.
    Usage(UsageEvent),
}

/// One block and whether an accepted speculation produced it.
#[derive(Debug)]
pub struct Shown {
    pub block: Block,
    pub speculated: bool,
}

/// The blocks of `entries`, in order; each turn's usage follows its last block.
pub fn blocks(entries: &[Entry]) -> Vec<Shown> {
    let mut results: HashMap<&str, (ToolResultStatus, &str)> = HashMap::new();
    for entry in entries {
        if let Entry::Item {
            item:
                Item::ToolResult {
                    content,
                    status,
                    ctx,
                    ..
                },
            ..
        } = entry
        {
            results.insert(&ctx.call_id, (*status, content));
        }
    }
    let mut out = Vec::new();
    let mut turn_usage: Option<UsageEvent> = None;
    let flush = |out: &mut Vec<Shown>, usage: &mut Option<UsageEvent>| {
        if let Some(usage) = usage.take() {
            out.push(Shown {
                block: Block::Usage(usage),
                speculated: false,
            });
        }
    };
    for entry in entries {
        let (block, speculated) = match entry {
            Entry::Usage { usage } => {
                add(turn_usage.get_or_insert_with(UsageEvent::default), usage);
                continue;
            }
            Entry::Compaction {
                tokens_before,
                tokens_after,
            } => (
                Block::Note(format!(
                    "context compacted for the model: {tokens_before} → {tokens_after} tokens"
                )),
                false,
            ),
            Entry::Undo { summary } => (Block::Note(summary.clone()), false),
            Entry::Item { item, speculated } => {
                let block = match item {
                    Item::User { text } => {
                        flush(&mut out, &mut turn_usage);
                        Block::Prompt(text.clone())
                    }
                    Item::System { text } => Block::Context(text.clone()),
                    Item::AssistantText { text } => Block::Answer(text.clone()),
                    Item::Thinking { text, .. } => Block::Thinking(text.clone()),
                    Item::ToolCall {
                        name,
                        arguments,
                        ctx,
                        ..
                    } => Block::Tool(tool(
                        name,
                        arguments,
                        results.get(ctx.call_id.as_str()).copied(),
                    )),
                    Item::ToolResult { .. } => continue,
                    Item::Image { path, .. } => Block::Image(path.clone()),
                };
                (block, *speculated)
            }
        };
        out.push(Shown { block, speculated });
    }
    flush(&mut out, &mut turn_usage);
    out
}

pub fn add(sum: &mut UsageEvent, u: &UsageEvent) {
    fn plus(a: &mut Option<u64>, b: Option<u64>) {
        if let Some(b) = b {
            *a = Some(a.unwrap_or(0) + b);
        }
    }
    plus(&mut sum.input_tokens, u.input_tokens);
    plus(&mut sum.output_tokens, u.output_tokens);
    plus(&mut sum.total_tokens, u.total_tokens);
    plus(&mut sum.cache_read_input_tokens, u.cache_read_input_tokens);
    plus(
        &mut sum.cache_creation_input_tokens,
        u.cache_creation_input_tokens,
    );
}

fn tool(name: &str, arguments: &str, result: Option<(ToolResultStatus, &str)>) -> Tool {
    let parsed: Option<Value> = serde_json::from_str(arguments).ok();
    let field = |k: &str| parsed.as_ref()?.get(k)?.as_str();
    let diff = match name {
        "edit" => match (field("old_string"), field("new_string")) {
            (Some(old), Some(new)) => Some(format!(
                "--- {path}\n+++ {path}\n{}{}",
                prefixed(old, '-'),
                prefixed(new, '+'),
                path = field("path").unwrap_or("?")
            )),
            _ => None,
        },
        "write_file" => field("content").map(|content| {
            format!(
                "+++ {}\n{}",
                field("path").unwrap_or("?"),
                prefixed(content, '+')
            )
        }),
        _ => None,
    };
    let arguments = match (&parsed, &diff) {
        // The diff shows the text; the arguments keep the rest.
        (Some(Value::Object(map)), Some(_)) => {
            let mut map = map.clone();
            for k in ["old_string", "new_string", "content"] {
                map.remove(k);
            }
            serde_json::to_string_pretty(&map).unwrap_or_default()
        }
        (Some(v), None) => serde_json::to_string_pretty(v).unwrap_or_default(),
        _ => arguments.to_owned(),
    };
    Tool {
        name: name.to_owned(),
        arguments,
        diff,
        result: result.map(|(s, c)| (s, c.to_owned())),
    }
}

fn prefixed(text: &str, mark: char) -> String {
    text.lines().map(|l| format!("{mark}{l}\n")).collect()
}

pub fn status_label(status: ToolResultStatus) -> &'static str {
    match status {
        ToolResultStatus::Success => "done",
        ToolResultStatus::Error => "error",
        ToolResultStatus::Denied => "denied",
        ToolResultStatus::Cancelled => "cancelled",
        ToolResultStatus::Skipped => "skipped",
    }
}

/// `1.2k in (800 cached) · 300 out`.
pub fn usage_label(u: &UsageEvent, wire: saki_llm_client::WireApi) -> String {
    let label = saki_read_ahead::stats::tokens_label;
    format!(
        "{} in ({} cached) · {} out",
        label(u.prompt_tokens(wire).unwrap_or(0)),
        label(u.cache_read_input_tokens.unwrap_or(0)),
        label(u.output_tokens.unwrap_or(0))
    )
}
