//! What the answer to a rewrite request gives for a file: a new text to write, the file
//! as it is, or nothing usable. A small model's whole new text is checked before it
//! replaces anything: it may be a fragment, break a JSON file, turn a plain file into a
//! JSON document because the request also names a `package.json`, or move a key into a
//! neighbouring object.

use super::checks::imports_itself;
use super::py_imports::with_missing_imports;
use crate::intent::{against_intent, Intent};
use std::collections::HashSet;

/// What a rewrite request gave for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rewrite {
    /// A new text to write.
    New(String),
    /// The file as it is: the request, read with the file in front of the model and
    /// nothing else, changes nothing in it.
    Unchanged,
    /// Nothing that can be written: no complete code block, a fragment, or a text that
    /// does not keep the file's format (see [`read_rewrite`]).
    Unusable,
}

/// The text of the first complete code block of `answer`, without its fences.
pub(super) fn code_block(answer: &str) -> Option<&str> {
    let open = answer.find("```")?;
    let after_info = open + 3 + answer[open + 3..].find('\n')? + 1;
    let body = &answer[after_info..];
    let close = if body.starts_with("```") {
        0
    } else {
        body.find("\n```")? + 1
    };
    Some(&body[..close])
}

/// What the answer gives for `old`. A new text to write is a complete code block that
/// changes the file and keeps its format:
/// - unless the request takes something out, moves or renames it, it keeps at least half
///   of the file's characters (a small model may answer with a fragment; a function
///   moved to another file may be most of this one);
/// - unless the request removes, moves or renames something, a JSON file keeps every
///   key where it was (asked to turn on a top-level `debug`, the model moved it into the
///   `server` object beside it);
/// - it does what the request asks only (`Intent::additive`, `Intent::subtractive`):
///   an addition keeps every character of the file;
/// - a valid JSON file stays valid JSON;
/// - it does not import itself (`from pager import last_page` in `pager.py`);
/// - a file that is not JSON does not become a JSON document (asked to bump a version
///   "in package.json and VERSION", the model wrote `VERSION` as `{"version": ...}`).
///
/// A Python file's new text gets the standard imports it newly uses and leaves out
/// (`py_imports`).
///
/// A first line that only names the file (`stats.py`, `# stats.py`), where the file
/// itself does not open with it, is the model's caption of the block, not the file's.
pub(super) fn read_rewrite(old: &str, answer: &str, intent: Intent, shown: &str) -> Rewrite {
    let Some(block) = code_block(answer) else {
        return Rewrite::Unusable;
    };
    let mut new = without_caption(block, old, shown).to_owned();
    if !old.ends_with('\n') && new.ends_with('\n') {
        new.pop();
    }
    if new.trim_end() == old.trim_end() {
        return Rewrite::Unchanged;
    }
    if new.trim().is_empty() {
        return Rewrite::Unusable;
    }
    if !(intent.subtractive || intent.reshapes) && share_kept(old, &new) < MIN_SHARE_KEPT {
        return Rewrite::Unusable;
    }
    if against_intent(intent, old, &new) {
        return Rewrite::Unusable;
    }
    // Copied from a test shown beside it, the import makes the module fail to load.
    if imports_itself(&new, shown) && !imports_itself(old, shown) {
        return Rewrite::Unusable;
    }
    match (json_document(old), json_document(&new)) {
        // A valid JSON file left broken (a small model drops a comma, or answers with a
        // comment in it). A file that was not valid JSON is not judged: the request may
        // be to repair it.
        (Some(_), None) => Rewrite::Unusable,
        (None, Some(_)) if !json_like(old) => Rewrite::Unusable,
        (Some(old), Some(new)) if !intent.reshapes && moves_keys(&old, &new) => Rewrite::Unusable,
        _ if shown.ends_with(".py") => Rewrite::New(with_missing_imports(old, &new)),
        _ => Rewrite::New(new),
    }
}

/// `block` without a first line that names the file `shown` (by its path or its name,
/// bare, with a colon, or as a comment), unless `old` opens with that line too.
pub(super) fn without_caption<'a>(block: &'a str, old: &str, shown: &str) -> &'a str {
    let (first, rest) = block.split_once('\n').unwrap_or((block, ""));
    let name = shown.rsplit('/').next().unwrap_or(shown);
    let caption = first
        .trim()
        .trim_start_matches(['#', '/', '-', ';', '*', '<', '!', ' '])
        .trim_end_matches(['>', '-', '*', '/', ':', ' '])
        .trim();
    let names_file = !caption.is_empty() && (caption == shown || caption == name);
    let old_first = old.lines().next().unwrap_or("");
    if names_file && old_first.trim() != first.trim() {
        rest
    } else {
        block
    }
}

/// Whether `text` is empty or opens like a JSON document (when broken, it may be
/// repaired into one).
fn json_like(text: &str) -> bool {
    text.trim().is_empty() || text.trim_start().starts_with(['{', '['])
}

/// `text` as JSON, when it is a JSON object or array (a bare `1.2.0` or `true` is not
/// read as a JSON document).
fn json_document(text: &str) -> Option<serde_json::Value> {
    if !text.trim_start().starts_with(['{', '[']) {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// Whether a key of the JSON document `old` is not at the same place in `new` (moved
/// into another object, or gone).
fn moves_keys(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    let mut old_paths = HashSet::new();
    key_paths(old, &mut Vec::new(), &mut old_paths);
    let mut new_paths = HashSet::new();
    key_paths(new, &mut Vec::new(), &mut new_paths);
    !old_paths.is_subset(&new_paths)
}

/// Every key of `value`, as the keys and array positions that lead to it.
fn key_paths(value: &serde_json::Value, at: &mut Vec<String>, paths: &mut HashSet<Vec<String>>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                at.push(key.clone());
                paths.insert(at.clone());
                key_paths(inner, at, paths);
                at.pop();
            }
        }
        serde_json::Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                at.push(format!("[{index}]"));
                key_paths(inner, at, paths);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The least share of the file's characters a new text that takes nothing out keeps:
/// below it, the answer is a fragment (`replicas: 5` for a whole `deploy.yaml`).
const MIN_SHARE_KEPT: f32 = 0.5;

/// The share of `old`'s characters that `new` keeps, in order. By character, not by
/// line: a rename changes every line that names the function and keeps most of each.
fn share_kept(old: &str, new: &str) -> f32 {
    if old.is_empty() {
        return 1.0;
    }
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_chars(old, new);
    let kept: usize = diff
        .ops()
        .iter()
        .filter(|op| op.tag() == similar::DiffTag::Equal)
        .map(|op| op.old_range().len())
        .sum();
    kept as f32 / old.chars().count() as f32
}
