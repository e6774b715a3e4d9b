//! Tool calls written as text.
//!
//! Small local models often write their tool calls into the answer instead of the
//! protocol's tool-call fields, in one of a few shapes:
//!
//! - Hermes / Qwen tags: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`;
//! - a fenced block: `` ```json `` (or a bare `` ``` ``) around such an object;
//! - a bare object on its own line, `{"name": T, "arguments"|"parameters": {...}}`;
//! - a list of such objects.
//!
//! [`recover`] finds them in a finished answer; [`CallFilter`] sits between the event
//! stream and the Timeline so that text which may turn out to be a call is held back
//! until that is decided (nothing is printed and then retracted), and turns recovered
//! calls into ordinary tool-use blocks. A call is recovered only when the response has
//! no native call and only for tools that were offered, and only when the answer is the
//! call, not a quote of one inside prose. Everything else stays text: JSON in prose, a
//! config example, `{"name": "my-package", ...}`.

use serde_json::Value;

/// Fence languages whose block may hold a call.
const CALL_FENCES: &[&str] = &["", "json", "jsonc", "tool_call", "tool_code"];
const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";

/// Calls found in a text, and the text that is left once they are taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub text: String,
    /// `(name, arguments as a JSON object string)`.
    pub calls: Vec<(String, String)>,
}

/// The calls to `offered` tools written into `text`, or `None` when there are none.
///
/// Only the first place that holds calls counts (one tag, block or object, which may be
/// a list of calls): a small model that writes several calls one after another is
/// rambling, and its later calls are guesses about results it has not seen. Text before
/// that place stays; what comes after it is dropped.
///
/// A call quoted in an answer is not a call (see [`stands_alone`]): `None`.
pub fn recover(text: &str, offered: &[String]) -> Option<Recovered> {
    recover_after("", text, offered)
}

/// [`recover`] for the part of an answer still held back, `text`, after `shown`, the
/// part already shown: whether the call stands alone depends on the whole answer.
pub(crate) fn recover_after(shown: &str, text: &str, offered: &[String]) -> Option<Recovered> {
    let mut kept = String::new();
    let mut at = 0;
    while let Some((start, region)) = next_region(text, at) {
        let end = region.end;
        match parse_calls(&text[region.body.0..region.body.1], offered) {
            Some(mut calls) => {
                kept.push_str(&text[at..start]);
                let before_trivial = trivial(shown) && trivial(&text[..start]);
                if !stands_alone(before_trivial, text, end, offered) {
                    return None;
                }
                // A model that repeats a call within one answer means it once.
                let mut seen = std::collections::HashSet::new();
                calls.retain(|call| seen.insert(call.clone()));
                // What is left is often a stray brace or blank lines.
                let text = if kept.chars().any(char::is_alphanumeric) {
                    kept.trim().to_owned()
                } else {
                    String::new()
                };
                return Some(Recovered { text, calls });
            }
            None => kept.push_str(&text[at..end]),
        }
        at = end;
    }
    None
}

/// Text with no letter or digit: blanks, a stray bracket or fence.
fn trivial(text: &str) -> bool {
    !text.chars().any(char::is_alphanumeric)
}

/// Whether a call place that ends at `end` in `text` is the answer rather than a quote in
/// it. A model that means a call writes the call: the answer is the call, perhaps with a
/// sentence announcing it ("I will read the file first.") or further calls after it
/// (small models ramble on with calls). With words on both sides it is quoted ("Here is
/// how you would call it: ```json …``` but I won't"), and with words right after it,
/// talked about; either way running it would do what nobody asked for (a hostile file can
/// ask the model to show such an example). So it stands alone when everything after it
/// is further calls and trivial text, or when nothing but trivial text precedes it and
/// what follows it at once is trivial text or another call.
fn stands_alone(before_trivial: bool, text: &str, end: usize, offered: &[String]) -> bool {
    let (mut gap_start, mut scan) = (end, end);
    let mut first_gap = None;
    let mut all_gaps = true;
    loop {
        let gap_end = match next_region(text, scan) {
            Some((start, region)) if call_like(text, &region, offered) => {
                scan = region.end;
                start
            }
            // A place that is not a call is words like any other.
            Some((_, region)) => {
                scan = region.end;
                continue;
            }
            None => text.len(),
        };
        let gap = trivial(&text[gap_start..gap_end]);
        first_gap.get_or_insert(gap);
        all_gaps &= gap;
        if gap_end == text.len() {
            break;
        }
        gap_start = scan;
    }
    all_gaps || before_trivial && first_gap == Some(true)
}

/// A place that holds calls, or one the answer ended in (or was cut in) after it began
/// to read as JSON: the model was writing another call. A fence with nothing in it yet
/// is not one: it may close a block whose opening fence stood inside a line.
fn call_like(text: &str, region: &Region, offered: &[String]) -> bool {
    let body = &text[region.body.0..region.body.1];
    match region.closing {
        Closing::Closed => parse_calls(body, offered).is_some(),
        Closing::Open => {
            let body = body.trim_start();
            !body.is_empty()
                && (parse_calls(body, offered).is_some()
                    || matches!(json_value_end(body), JsonEnd::Incomplete))
        }
        Closing::Invalid => false,
    }
}

/// Most closing brackets [`close_cut_call`] adds.
const CUT_CLOSERS_MAX: usize = 2;

/// `text` with the closing brackets its last call-shaped place lacks, when the answer
/// ended (the model stopped on its own) right after a complete value inside it.
///
/// Small models end a call one brace short: `…"new_string": "9090"}` and then stop, where
/// `}}` was due. Only brackets are added, at most [`CUT_CLOSERS_MAX`], and only when the
/// text does not end inside a string, so no value the model wrote is changed or
/// completed. An answer cut by the output limit is not the model's end and is left alone.
pub fn close_cut_call(text: &str) -> Option<String> {
    let (_, region) = next_region(text, 0)?;
    if region.closing != Closing::Open {
        return None;
    }
    let body = text[region.body.0..].trim_end();
    let mut open = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in body.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' if open.pop() != Some(c) => return None,
            _ => {}
        }
    }
    let complete_value_last = body.ends_with(['}', ']', '"'])
        || body.ends_with(|c: char| c.is_ascii_digit())
        || ["true", "false", "null"].iter().any(|w| body.ends_with(w));
    if in_string || open.is_empty() || open.len() > CUT_CLOSERS_MAX || !complete_value_last {
        return None;
    }
    let mut closed = text.trim_end().to_owned();
    closed.extend(open.iter().rev());
    Some(closed)
}

/// Whether `text` holds a place with calls that is complete and followed by the start of
/// another: the model goes on writing calls it cannot use, so the answer can end there.
/// The start must already read as a call (see [`call_like`]): a fence after a call may
/// be the close of a quote, and the words after it decide whether the call runs.
fn writes_past_a_call(text: &str, offered: &[String]) -> bool {
    let mut at = 0;
    while let Some((_, region)) = next_region(text, at) {
        let complete = region.end < text.len()
            || text[..region.end]
                .trim_end()
                .ends_with(['}', ']', '`', '>']);
        if complete && parse_calls(&text[region.body.0..region.body.1], offered).is_some() {
            return next_region(text, region.end)
                .is_some_and(|(_, next)| call_like(text, &next, offered));
        }
        at = region.end;
    }
    false
}

struct Region {
    /// Byte range of the JSON inside the region.
    body: (usize, usize),
    /// Where the region ends (after a closing tag or fence).
    end: usize,
    closing: Closing,
}

/// Whether a region is finished, as far as the text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closing {
    /// Its closing tag or fence, or the end of its JSON value, has arrived.
    Closed,
    /// More may come.
    Open,
    /// A bare value that is not JSON at all; the region is its first line.
    Invalid,
}

/// For a place that may hold a call and starts at `held`: where it ends, once it is
/// clear that it holds none (it is complete and not a call, or not JSON). `None` while
/// it is undecided or when it is a call.
///
/// With `hold_unknown`, a place that is the whole text so far and one call to a tool that
/// was not offered is held too (see [`unknown_call`]); text after it releases it.
fn settle(text: &str, held: usize, offered: &[String], hold_unknown: bool) -> Option<usize> {
    let (start, region) = next_region(text, held)?;
    if start != held {
        return None;
    }
    match region.closing {
        Closing::Open => None,
        Closing::Invalid => Some(region.end),
        Closing::Closed => {
            let call = parse_calls(&text[region.body.0..region.body.1], offered).is_some()
                || hold_unknown && unknown_call(text, offered).is_some();
            (!call).then_some(region.end)
        }
    }
}

/// An answer that starts with one call-shaped object, `{"name": T, "arguments"|
/// "parameters": {...}}` (bare, fenced or tagged, with no other keys), naming a tool that
/// was not offered, with nothing after it but lines of their own: `(T, arguments)`.
///
/// A name written as words (`"run the tests"`) counts, its words joined with `_`.
///
/// Small models invent tools (`{"name": "todo_comments", "arguments": {"count": 1}}`)
/// and such an answer tells the person nothing. The Worker answers it as a failed call
/// to an unknown tool, which lists the real ones; it is never run. Lines after it are
/// the model explaining the call it made up (asked to run the tests, a 0.5B model wrote
/// `{"name": "run_tests", "arguments": {"command": "pytest tests/"}}` and then how to run
/// pytest, three times over): they are not shown. Words before it or on its line, a
/// list of objects, or a key a call does not have keep it text.
pub fn unknown_call(text: &str, offered: &[String]) -> Option<(String, String)> {
    let (start, region) = next_region(text, 0)?;
    // Words may follow on lines of their own: the model explaining the call it made up.
    let after = text[region.end..].trim_start_matches([' ', '\t']);
    if region.closing != Closing::Closed
        || !text[..start].trim().is_empty()
        || !(after.is_empty() || after.starts_with('\n'))
    {
        return None;
    }
    let value: Value = serde_json::from_str(text[region.body.0..region.body.1].trim()).ok()?;
    let object = value.as_object()?;
    let call_keys = ["name", "arguments", "parameters", "id", "type"];
    if !object.keys().all(|k| call_keys.contains(&k.as_str())) {
        return None;
    }
    // A name written as words (`"run the tests"`) is still a name: its words joined
    // with `_`, so the failed call carries a name every wire accepts.
    let name = object
        .get("name")?
        .as_str()?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_");
    // A file's path counts too (`tests/test_api.py`): small models name a call after
    // the file it is about.
    let identifier = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if !identifier || offered.contains(&name) {
        return None;
    }
    // Arguments written as a list or a string (`"arguments": ["LIMIT"]`) are still a
    // call's: the call never runs, so it carries none.
    let arguments = match call_shape(object) {
        Some((_, arguments)) => arguments,
        None if object.contains_key("arguments") || object.contains_key("parameters") => {
            "{}".to_owned()
        }
        None => return None,
    };
    Some((name, arguments))
}

/// The next place at or after `from` where a call may be written, as (start, region).
fn next_region(text: &str, from: usize) -> Option<(usize, Region)> {
    let mut line_start = from;
    let mut in_other_fence = false;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i + 1);
        let line = &text[line_start..line_end];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let lang = lang.trim().to_ascii_lowercase();
            if in_other_fence {
                in_other_fence = false;
            } else if CALL_FENCES.contains(&lang.as_str()) {
                let body_start = line_end;
                let close = text[body_start..].find("```").map(|i| body_start + i);
                let (body_end, end, closing) = match close {
                    Some(c) => (c, (c + 3).min(text.len()), Closing::Closed),
                    None => (text.len(), text.len(), Closing::Open),
                };
                return Some((
                    line_start,
                    Region {
                        body: (body_start, body_end),
                        end,
                        closing,
                    },
                ));
            } else {
                in_other_fence = true;
            }
        } else if !in_other_fence {
            if let Some(tag) = line.find(OPEN_TAG) {
                let start = line_start + tag;
                let body_start = start + OPEN_TAG.len();
                let (body_end, end, closing) = match text[body_start..].find(CLOSE_TAG) {
                    Some(c) => (
                        body_start + c,
                        body_start + c + CLOSE_TAG.len(),
                        Closing::Closed,
                    ),
                    None => (text.len(), text.len(), Closing::Open),
                };
                return Some((
                    start,
                    Region {
                        body: (body_start, body_end),
                        end,
                        closing,
                    },
                ));
            }
            if trimmed.starts_with('{') || starts_list_of_objects(&text[line_start + indent..]) {
                let start = line_start + indent;
                let (end, closing) = match json_value_end(&text[start..]) {
                    JsonEnd::Complete(n) => (start + n, Closing::Closed),
                    JsonEnd::Incomplete => (line_end, Closing::Open),
                    JsonEnd::Invalid => (line_end, Closing::Invalid),
                };
                return Some((
                    line_start,
                    Region {
                        body: (start, end),
                        end,
                        closing,
                    },
                ));
            }
        }
        line_start = line_end;
    }
    None
}

/// `[` followed (after blanks) by `{`.
fn starts_list_of_objects(text: &str) -> bool {
    text.strip_prefix('[')
        .is_some_and(|rest| rest.trim_start().starts_with('{'))
}

enum JsonEnd {
    /// Bytes taken by the value.
    Complete(usize),
    /// JSON so far, cut short.
    Incomplete,
    Invalid,
}

/// How much of `text` the JSON value at its start takes.
fn json_value_end(text: &str) -> JsonEnd {
    match strict_json_value_end(text) {
        // Keys written without quotes (`new_string: "x"`): the value as it ends quoted.
        JsonEnd::Invalid => {
            let Some((quoted, keys)) = bare_keys::quoted_with_keys(text) else {
                return JsonEnd::Invalid;
            };
            match strict_json_value_end(&quoted) {
                JsonEnd::Complete(end) => {
                    JsonEnd::Complete(bare_keys::offset_before_quoting(&keys, end))
                }
                end => end,
            }
        }
        end => end,
    }
}

fn strict_json_value_end(text: &str) -> JsonEnd {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(_)) => JsonEnd::Complete(values.byte_offset()),
        Some(Err(e)) if !e.is_eof() => JsonEnd::Invalid,
        _ => JsonEnd::Incomplete,
    }
}

/// Every JSON value in `body` as calls to offered tools; `None` when any is something else.
fn parse_calls(body: &str, offered: &[String]) -> Option<Vec<(String, String)>> {
    parse_json_calls(body, offered).or_else(|| {
        let quoted = bare_keys::quote_bare_keys(body)?;
        parse_json_calls(&quoted, offered)
    })
}

fn parse_json_calls(body: &str, offered: &[String]) -> Option<Vec<(String, String)>> {
    let mut calls = Vec::new();
    let mut values = serde_json::Deserializer::from_str(body.trim()).into_iter::<Value>();
    for value in values.by_ref() {
        match value.ok()? {
            Value::Array(items) => {
                for item in items {
                    calls.push(call_of(&item, offered)?);
                }
            }
            item => calls.push(call_of(&item, offered)?),
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// `{"name": T, "arguments"|"parameters": {...}}`, also wrapped in `"function"`.
fn call_of(value: &Value, offered: &[String]) -> Option<(String, String)> {
    let object = value.as_object()?;
    if let Some(function) = object.get("function").filter(|f| f.is_object()) {
        return call_of(function, offered);
    }
    let (name, arguments) = call_shape(object)?;
    offered
        .iter()
        .any(|o| o == name)
        .then(|| (name.to_owned(), arguments))
}

/// The name and the arguments (as a JSON object string) of a call-shaped object.
fn call_shape(object: &serde_json::Map<String, Value>) -> Option<(&str, String)> {
    let name = object.get("name")?.as_str()?;
    let arguments = object
        .get("arguments")
        .or_else(|| object.get("parameters"))?;
    let arguments = match arguments {
        Value::Object(_) => arguments.clone(),
        // Some models send the arguments as a JSON string, as the OpenAI wire does.
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)?,
        _ => return None,
    };
    Some((name, arguments.to_string()))
}

mod bare_keys;
mod filter;
pub use filter::CallFilter;

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
