//! An answer that holds a file's new text, saved where small models run.
//!
//! Asked to change a file, a small model often reads it and then answers with the changed
//! text instead of calling a tool: the repaired JSON, the requirements list with the new
//! line, the file with the function renamed. A loop stop makes it likelier: the answer
//! request then offers no tools at all. The work is done; only the saving is missing. That
//! is the "whole file" edit format some agents ask weak models for on purpose, so when a
//! turn that asks for a change ends with no change made and its answer holds what is
//! plainly a new version of a file the turn read, saki makes the `write_file` call itself.
//! The call passes every check a model's call would (the prompt's intent, the person's
//! approval mode, the echo refusal), and a note after its result says saki made it.
//!
//! "Plainly a new version": most of the file's words are in the text (it is the whole
//! file, not a snippet of it), most of the text's words are the file's (it is the file,
//! not prose about it), and it says something else than the file, or it is JSON where
//! the file is broken JSON. Exactly one text and file may match; anything less certain
//! leaves the answer as it is.

use crate::echo::without_notes;
use crate::intent::{changes_files, current_turn, read_intent};
use crate::workspace::Workspace;
use saki_llm_worker::interceptor::{Interceptor, OwnCall, TurnEndAction, OWN_CALL_PREFIX};
use saki_llm_worker::{Item, ToolResultStatus};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The largest file whose new text is looked for in an answer.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Share of the file's words the text must keep.
const KEPT_OF_FILE: f64 = 0.7;
/// Share of the text's words that must be the file's.
const FILE_OF_TEXT: f64 = 0.5;

/// Saves an answer's new file text (see the module's documentation).
#[derive(Debug)]
pub struct UnsavedAnswer {
    workspace: Arc<Workspace>,
}

impl UnsavedAnswer {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait::async_trait]
impl Interceptor for UnsavedAnswer {
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let Some(turn) = unsaved_turn(history) else {
            return TurnEndAction::Finish;
        };
        let mut files = Vec::new();
        let mut seen = Vec::new();
        for path in turn.paths {
            let Some((resolved, text)) = self.workspace.read_text(&path, MAX_FILE_BYTES).await
            else {
                continue;
            };
            // One file named two ways (`a.py`, `/work/a.py`) is one candidate, not two.
            if !seen.contains(&resolved) {
                seen.push(resolved);
                files.push((path, text));
            }
        }
        let Some((path, content)) = new_file_text(&turn.answer, &files) else {
            return TurnEndAction::Finish;
        };
        tracing::debug!(%path, "an answer held a file's new text; saving it");
        let note = format!(
            "[saki made this write_file call: the request asks for a change, and your answer \
             held the new text of {path} but did not save it. Tell the person in one \
             sentence what happened.]"
        );
        TurnEndAction::Call(OwnCall {
            name: "write_file".into(),
            arguments: serde_json::json!({ "path": path, "content": content }).to_string(),
            note,
        })
    }
}

/// A turn that asked for a change, made none, and ended in an answer.
struct UnsavedTurn {
    answer: String,
    /// Files the turn read or tried to change, as the model named them, each once.
    paths: Vec<String>,
}

fn unsaved_turn(history: &[Item]) -> Option<UnsavedTurn> {
    let (text, turn) = current_turn(history)?;
    if !read_intent(text).change {
        return None;
    }
    let mut paths: Vec<String> = Vec::new();
    let mut changing: HashSet<&str> = HashSet::new();
    for item in turn {
        match item {
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } => {
                // Once per turn: saki's own call is not followed by another.
                if ctx.call_id.starts_with(OWN_CALL_PREFIX) {
                    return None;
                }
                let is_change = changes_files(name);
                if is_change {
                    changing.insert(ctx.call_id.as_str());
                }
                if name == "read_file" || is_change {
                    let path = serde_json::from_str::<serde_json::Value>(arguments)
                        .ok()
                        .and_then(|v| v.get("path")?.as_str().map(str::to_owned));
                    if let Some(path) = path.filter(|p| !paths.contains(p)) {
                        paths.push(path);
                    }
                }
            }
            Item::ToolResult {
                status: ToolResultStatus::Success,
                ctx,
                ..
            } if changing.contains(ctx.call_id.as_str()) => return None,
            _ => {}
        }
    }
    let answer: Vec<&str> = turn
        .iter()
        .rev()
        .map_while(|item| match item {
            Item::AssistantText { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let answer: String = answer.into_iter().rev().collect::<Vec<_>>().join("\n");
    (!answer.trim().is_empty() && !paths.is_empty()).then_some(UnsavedTurn { answer, paths })
}

/// The one file of `files` (path, current text) that a text of `answer` is a new version
/// of, with that text as the file's new content.
fn new_file_text(answer: &str, files: &[(String, String)]) -> Option<(String, String)> {
    let mut found = None;
    for text in candidate_texts(answer) {
        for (path, current) in files {
            let text = without_notes(&text, current);
            if is_new_version(&text, current) {
                if found.is_some() {
                    return None;
                }
                found = Some((path.clone(), with_ending_of(text, current)));
            }
        }
    }
    found
}

/// The texts of `answer`'s fenced blocks, or the whole answer when it has none.
fn candidate_texts(answer: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<Vec<&str>> = None;
    for line in answer.lines() {
        if line.trim_start().starts_with("```") {
            match open.take() {
                Some(lines) => blocks.push(lines.join("\n")),
                None => open = Some(Vec::new()),
            }
        } else if let Some(lines) = open.as_mut() {
            lines.push(line);
        }
    }
    if let Some(lines) = open {
        blocks.push(lines.join("\n"));
    }
    if blocks.is_empty() {
        blocks.push(answer.trim().to_owned());
    }
    blocks
}

/// Whether `text` is plainly a new version of `current` (see the module's documentation).
fn is_new_version(text: &str, current: &str) -> bool {
    // A patch keeps the file's words too, but written into the file it would ruin it.
    if is_patch(text) && !is_patch(current) {
        return false;
    }
    let (new_words, old_words) = (words(text), words(current));
    if new_words.is_empty() || old_words.is_empty() || text.trim() == current.trim() {
        return false;
    }
    let kept = shared_count(&new_words, &old_words) as f64;
    let whole = kept >= KEPT_OF_FILE * old_words.len() as f64
        && kept >= FILE_OF_TEXT * new_words.len() as f64;
    whole && (new_words != old_words || repairs_json(text, current))
}

/// Whether `text` reads as a unified diff.
fn is_patch(text: &str) -> bool {
    let has = |start: &str| text.lines().any(|l| l.starts_with(start));
    has("@@ ") || (has("--- ") && has("+++ "))
}

/// Whether `current` is broken JSON that `text` repairs.
fn repairs_json(text: &str, current: &str) -> bool {
    let parses = |s: &str| serde_json::from_str::<serde_json::Value>(s).is_ok();
    let looks_json = |s: &str| s.trim_start().starts_with(['{', '[']);
    looks_json(current) && !parses(current) && parses(text)
}

/// The words of `text`: runs of letters, digits and `_`.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// How many words the two lists share, counting repeats.
fn shared_count(a: &[&str], b: &[&str]) -> usize {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for w in b {
        *counts.entry(w).or_default() += 1;
    }
    a.iter()
        .filter(|w| match counts.get_mut(*w) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

/// `text` ending in a line break when `current` does.
fn with_ending_of(mut text: String, current: &str) -> String {
    if current.ends_with('\n') && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
#[path = "unsaved_tests.rs"]
mod tests;
