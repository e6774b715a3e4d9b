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
//! no native call and only for tools that were offered. Everything else stays text:
//! JSON in prose, a config example, `{"name": "my-package", ...}`.

use saki_llm_client::{
    generate_call_id, BlockDelta, BlockMetadata, BlockStart, BlockStop, BlockType, DeltaContent,
    Event, ResponseStatus, StopReason,
};
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
pub fn recover(text: &str, offered: &[String]) -> Option<Recovered> {
    let mut kept = String::new();
    let mut at = 0;
    while let Some((start, region)) = next_region(text, at) {
        let end = region.end;
        match parse_calls(&text[region.body.0..region.body.1], offered) {
            Some(mut calls) => {
                kept.push_str(&text[at..start]);
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

/// Whether `text` holds a place with calls that is complete and followed by the start of
/// another: the model goes on writing calls it cannot use, so the answer can end there.
fn writes_past_a_call(text: &str, offered: &[String]) -> bool {
    let mut at = 0;
    while let Some((_, region)) = next_region(text, at) {
        let complete = region.end < text.len()
            || text[..region.end]
                .trim_end()
                .ends_with(['}', ']', '`', '>']);
        if complete && parse_calls(&text[region.body.0..region.body.1], offered).is_some() {
            return next_region(text, region.end).is_some();
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
                let (body_end, end) = match close {
                    Some(c) => (c, (c + 3).min(text.len())),
                    None => (text.len(), text.len()),
                };
                return Some((
                    line_start,
                    Region {
                        body: (body_start, body_end),
                        end,
                    },
                ));
            } else {
                in_other_fence = true;
            }
        } else if !in_other_fence {
            if let Some(tag) = line.find(OPEN_TAG) {
                let start = line_start + tag;
                let body_start = start + OPEN_TAG.len();
                let (body_end, end) = match text[body_start..].find(CLOSE_TAG) {
                    Some(c) => (body_start + c, body_start + c + CLOSE_TAG.len()),
                    None => (text.len(), text.len()),
                };
                return Some((
                    start,
                    Region {
                        body: (body_start, body_end),
                        end,
                    },
                ));
            }
            if trimmed.starts_with('{') || starts_list_of_objects(&text[line_start + indent..]) {
                let start = line_start + indent;
                let end = json_value_end(&text[start..]).map_or(line_end, |n| start + n);
                return Some((
                    line_start,
                    Region {
                        body: (start, end),
                        end,
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

/// Bytes taken by the JSON value at the start of `text`.
fn json_value_end(text: &str) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(_)) => Some(values.byte_offset()),
        _ => None,
    }
}

/// Every JSON value in `body` as calls to offered tools; `None` when any is something else.
fn parse_calls(body: &str, offered: &[String]) -> Option<Vec<(String, String)>> {
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
    let name = object.get("name")?.as_str()?;
    if !offered.iter().any(|o| o == name) {
        return None;
    }
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
    Some((name.to_owned(), arguments.to_string()))
}

/// Where in a streaming text block the undecided part starts: bytes before it cannot
/// belong to a call and may be shown; from it on the text is held until the block ends.
/// Incremental: call again with the grown text.
#[derive(Debug, Default)]
struct Scanner {
    /// Start of the first line not classified yet.
    line_start: usize,
    in_other_fence: bool,
    /// Where a possible call starts; once set, everything after it is held.
    held_from: Option<usize>,
}

impl Scanner {
    /// Bytes of `text` that can be released.
    fn safe_len(&mut self, text: &str) -> usize {
        if let Some(held) = self.held_from {
            return held;
        }
        loop {
            let rest = &text[self.line_start..];
            let Some(newline) = rest.find('\n') else {
                // The last line is still growing.
                return match self.undecided(rest) {
                    Some(offset) => self.line_start + offset,
                    None => text.len(),
                };
            };
            let line = &rest[..=newline];
            if let Some(offset) = self.classify_line(line) {
                let held = self.line_start + offset;
                self.held_from = Some(held);
                return held;
            }
            self.line_start += newline + 1;
        }
    }

    /// For a complete line: the offset where a call may start, else `None` (and the
    /// fence state updated).
    fn classify_line(&mut self, line: &str) -> Option<usize> {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let lang = lang.trim().to_ascii_lowercase();
            if self.in_other_fence {
                self.in_other_fence = false;
                return None;
            }
            if CALL_FENCES.contains(&lang.as_str()) {
                return Some(0);
            }
            self.in_other_fence = true;
            return None;
        }
        if self.in_other_fence {
            return None;
        }
        if let Some(tag) = line.find(OPEN_TAG) {
            return Some(tag);
        }
        let indent = line.len() - trimmed.len();
        (trimmed.starts_with('{') || starts_list_of_objects(trimmed)).then_some(indent)
    }

    /// For the growing last line: the offset from which it must wait, if it could still
    /// turn into the start of a call.
    fn undecided(&self, line: &str) -> Option<usize> {
        if self.in_other_fence {
            return None;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let could_start = trimmed.is_empty()
            || trimmed.starts_with('{')
            || trimmed.starts_with('[') && trimmed[1..].trim_start().is_empty()
            || starts_list_of_objects(trimmed)
            || "```".starts_with(trimmed)
            || trimmed.starts_with("```");
        if could_start {
            return Some(indent);
        }
        // A tag may be arriving piece by piece: `<tool_` now, `call>` later.
        if let Some(lt) = line.rfind('<') {
            let tail = &line[lt..];
            if OPEN_TAG.starts_with(tail) || tail.starts_with(OPEN_TAG) {
                return Some(lt);
            }
        }
        line.find(OPEN_TAG)
    }
}

/// Holds back text that may be a call written as text, and turns recovered calls into
/// tool-use blocks, between the client's event stream and the Timeline.
#[derive(Debug, Default)]
pub struct CallFilter {
    /// Tools the request offered; empty turns the filter off.
    offered: Vec<String>,
    text_index: Option<usize>,
    text: String,
    released: usize,
    scanner: Scanner,
    /// The text block's stop, held with its undecided tail.
    held_stop: Option<BlockStop>,
    native_calls: bool,
    next_index: usize,
    recovered: Vec<String>,
    /// The held text has a complete call and goes on with another: the model writes calls
    /// about results it has not seen.
    saturated: bool,
}

impl CallFilter {
    /// A filter for one response to a request that offered `offered` (off when empty).
    pub fn new(offered: Vec<String>) -> Self {
        Self {
            offered,
            ..Self::default()
        }
    }

    /// Ids of the calls recovered from text in this response.
    pub fn recovered(&self) -> &[String] {
        &self.recovered
    }

    /// Whether the held text has a complete call and starts another: a small model that
    /// does that often goes on until its output limit, so the caller may stop reading and
    /// [`finish`] (only the first call counts anyway, see [`recover`]).
    ///
    /// [`finish`]: CallFilter::finish
    pub fn saturated(&self) -> bool {
        self.saturated
    }

    /// Ends the response here, as if the server had finished it.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.push(
            Event::Status(saki_llm_client::StatusEvent::new(ResponseStatus::Completed)),
            out,
        );
    }

    /// Feeds one event; what may be dispatched now goes to `out`, in order.
    pub fn push(&mut self, event: Event, out: &mut Vec<Event>) {
        if self.offered.is_empty() {
            out.push(event);
            return;
        }
        match &event {
            Event::BlockStart(start) => {
                self.next_index = self.next_index.max(start.index + 1);
                if start.block_type == BlockType::ToolUse {
                    self.native_calls = true;
                }
                self.release_all(out);
                if start.block_type == BlockType::Text {
                    self.text_index = Some(start.index);
                }
            }
            Event::BlockDelta(BlockDelta {
                index,
                delta: DeltaContent::Text(piece),
            }) if Some(*index) == self.text_index && self.held_stop.is_none() => {
                self.text.push_str(piece);
                let safe = self.scanner.safe_len(&self.text);
                self.emit_text(safe, out);
                if piece.contains('\n') && self.released < self.text.len() && !self.native_calls {
                    self.saturated = writes_past_a_call(&self.text[self.released..], &self.offered);
                }
                return;
            }
            Event::BlockStop(stop) if Some(stop.index) == self.text_index => {
                if self.released == self.text.len() {
                    self.reset_text();
                } else {
                    self.held_stop = Some(stop.clone());
                    return;
                }
            }
            Event::BlockAbort(abort) if Some(abort.index) == self.text_index => {
                let len = self.text.len();
                self.emit_text(len, out);
                self.reset_text();
            }
            Event::Status(status) if status.status.is_terminal() => {
                let recoverable = matches!(
                    status.status,
                    ResponseStatus::Completed | ResponseStatus::Incomplete
                );
                if recoverable && !self.native_calls && self.try_recover(out) {
                    let mut status = status.clone();
                    status.stop_reason = Some(StopReason::ToolUse);
                    out.push(Event::Status(status));
                    return;
                }
                self.release_all(out);
            }
            _ => {}
        }
        out.push(event);
    }

    fn emit_text(&mut self, upto: usize, out: &mut Vec<Event>) {
        if upto > self.released {
            if let Some(index) = self.text_index {
                out.push(Event::BlockDelta(BlockDelta {
                    index,
                    delta: DeltaContent::Text(self.text[self.released..upto].to_owned()),
                }));
            }
            self.released = upto;
        }
    }

    /// Shows whatever is held as the text it is, and closes its block if it ended.
    fn release_all(&mut self, out: &mut Vec<Event>) {
        let len = self.text.len();
        self.emit_text(len, out);
        if let Some(stop) = self.held_stop.take() {
            out.push(Event::BlockStop(stop));
            self.reset_text();
        }
    }

    fn reset_text(&mut self) {
        self.text_index = None;
        self.text.clear();
        self.released = 0;
        self.scanner = Scanner::default();
    }

    /// At the end of a response without native calls: the held text as calls, if it is.
    fn try_recover(&mut self, out: &mut Vec<Event>) -> bool {
        let Some(found) = recover(&self.text[self.released..], &self.offered) else {
            return false;
        };
        if let Some(index) = self.text_index {
            if !found.text.is_empty() {
                out.push(Event::BlockDelta(BlockDelta {
                    index,
                    delta: DeltaContent::Text(found.text),
                }));
            }
            let stop = self.held_stop.take().unwrap_or(BlockStop {
                index,
                block_type: BlockType::Text,
                stop_reason: None,
            });
            out.push(Event::BlockStop(stop));
        }
        for (name, arguments) in found.calls {
            let id = generate_call_id();
            let index = self.next_index;
            self.next_index += 1;
            out.push(Event::BlockStart(BlockStart {
                index,
                block_type: BlockType::ToolUse,
                metadata: BlockMetadata::ToolUse {
                    id: id.clone(),
                    name,
                },
            }));
            out.push(Event::BlockDelta(BlockDelta {
                index,
                delta: DeltaContent::InputJson(arguments),
            }));
            out.push(Event::BlockStop(BlockStop {
                index,
                block_type: BlockType::ToolUse,
                stop_reason: None,
            }));
            self.recovered.push(id);
        }
        self.reset_text();
        true
    }
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
