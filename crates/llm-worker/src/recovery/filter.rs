//! The streaming side of recovery: text that may be a call is held back until that is
//! decided, and recovered calls become tool-use blocks.

use super::{
    close_cut_call, recover_after, settle, starts_list_of_objects, unknown_call,
    writes_past_a_call, Recovered, CALL_FENCES, OPEN_TAG,
};
use saki_llm_client::{
    generate_call_id, BlockDelta, BlockMetadata, BlockStart, BlockStop, BlockType, DeltaContent,
    Event, ResponseStatus, StopReason,
};

/// Where in a streaming text block the undecided part starts: bytes before it cannot
/// belong to a call and may be shown; from it on the text is held until it is clear that
/// the place holds no call (then it is shown and scanning goes on after it) or the block
/// ends. Incremental: call again with the grown text.
#[derive(Debug, Default)]
struct Scanner {
    /// Start of the first line not classified yet.
    line_start: usize,
    in_other_fence: bool,
    /// Where a possible call starts; while set, everything after it is held.
    held_from: Option<usize>,
    /// Length of the text when the held place was last looked at: it is only looked at
    /// again when something that can end it arrives, so a long held block costs no
    /// quadratic re-parsing.
    settled_upto: usize,
    /// In the line still growing, the text before this offset holds no line end and no
    /// tag start: a long line arriving in small pieces is not searched again and again.
    scanned: usize,
}

impl Scanner {
    /// Bytes of `text` that can be released.
    fn safe_len(&mut self, text: &str, offered: &[String], hold_unknown: bool) -> usize {
        loop {
            if let Some(held) = self.held_from {
                let fresh = &text[self.settled_upto.max(held)..];
                self.settled_upto = text.len();
                if !fresh.contains(['`', '>', '}', ']', '\n']) {
                    return held;
                }
                match settle(text, held, offered, hold_unknown) {
                    Some(end) => {
                        self.held_from = None;
                        self.line_start = end;
                    }
                    None => return held,
                }
            }
            let rest = &text[self.line_start..];
            let from = self.scanned.clamp(self.line_start, text.len()) - self.line_start;
            let Some(newline) = rest[from..].find('\n').map(|i| from + i) else {
                // The last line is still growing.
                return match self.undecided(rest, from) {
                    Some(offset) => self.line_start + offset,
                    None => {
                        // A tag may have begun in the last few bytes.
                        let mut clear = text.len().saturating_sub(OPEN_TAG.len());
                        while !text.is_char_boundary(clear) {
                            clear -= 1;
                        }
                        self.scanned = clear.max(self.line_start);
                        text.len()
                    }
                };
            };
            let line = &rest[..=newline];
            if let Some(offset) = self.classify_line(line) {
                let held = self.line_start + offset;
                self.held_from = Some(held);
                self.settled_upto = held;
                continue;
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
    /// `line[..from]` is known to hold no tag start.
    fn undecided(&self, line: &str, from: usize) -> Option<usize> {
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
        let fresh = &line[from..];
        if let Some(lt) = fresh.rfind('<') {
            let tail = &fresh[lt..];
            if OPEN_TAG.starts_with(tail) || tail.starts_with(OPEN_TAG) {
                return Some(from + lt);
            }
        }
        fresh.find(OPEN_TAG).map(|i| from + i)
    }
}

/// Whether the last complete lines of `text` are one line, or one run of up to
/// [`LOOP_LINES_MAX`] lines, written three times over (blank lines aside): a small model
/// in that state goes on until its output limit, minutes on a laptop, and nothing after
/// the first copy is worth reading. Asked to run the tests, a 0.5B model wrote the same
/// sentence and fenced command again and again.
fn ends_in_a_loop(text: &str) -> bool {
    const TIMES: usize = 3;
    const SHORTEST: usize = 8;
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let lines: Vec<&str> = complete
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(TIMES * LOOP_LINES_MAX)
        .collect();
    (1..=LOOP_LINES_MAX).any(|period| {
        let Some(last) = lines.get(..period) else {
            return false;
        };
        last.iter().map(|l| l.len()).sum::<usize>() >= SHORTEST
            && lines.len() >= TIMES * period
            && (1..TIMES).all(|copy| lines[copy * period..(copy + 1) * period] == *last)
    })
}

/// The longest run of lines whose repetition [`ends_in_a_loop`] sees.
const LOOP_LINES_MAX: usize = 8;

/// Whether `text` ends in bytes that repeat one piece of at most [`REPEAT_PERIOD_MAX`]
/// bytes: over [`REPEAT_SPAN`] bytes, or eight copies (at least [`REPEAT_SPAN_MIN`]
/// bytes) when the shortest piece repeated is a piece of a line or more. A small model
/// looping inside one line (a JSON string that writes `# TODO\n\n- write tests\n\n`
/// until the output limit) never ends a line for [`ends_in_a_loop`] to see; the short
/// pieces real text repeats (`0, `, `==`, `-`) need the whole span. A 0.5B model's loop of
/// `- add a new task\n\n` in a file's content ran 25 seconds to the whole span.
fn ends_in_a_repeat(text: &str) -> bool {
    let bytes = text.as_bytes();
    let periodic = |period: usize, span: usize| {
        bytes.len().checked_sub(span).is_some_and(|start| {
            period <= start
                && bytes[start..]
                    .iter()
                    .zip(&bytes[start - period..])
                    .all(|(a, b)| a == b)
        })
    };
    let shortest = (1..=REPEAT_PERIOD_MAX).find(|&period| periodic(period, REPEAT_SPAN_MIN));
    let copies = shortest.is_some_and(|period| {
        period >= 8 && periodic(period, (8 * period).clamp(REPEAT_SPAN_MIN, REPEAT_SPAN))
    });
    copies || (1..=REPEAT_PERIOD_MAX).any(|period| periodic(period, REPEAT_SPAN))
}

/// Bytes of exact repetition that end an answer (about 250 tokens).
const REPEAT_SPAN: usize = 1024;
/// The least: about 64 tokens.
const REPEAT_SPAN_MIN: usize = 256;
/// The longest piece whose repetition counts.
const REPEAT_PERIOD_MAX: usize = 256;
/// How much text arrives between two looks for a repeat.
const REPEAT_CHECK_EVERY: usize = 128;

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
    /// An answer that is only a call to a tool not offered becomes that call (it fails as
    /// unknown; see [`unknown_call`]).
    unknown_calls: bool,
    /// The text length at which to look for a repeat next.
    next_repeat_check: usize,
    /// [`CallFilter::finish`] ended the response: the model did not.
    cut: bool,
}

impl CallFilter {
    /// A filter for one response to a request that offered `offered` (off when empty).
    pub fn new(offered: Vec<String>) -> Self {
        Self {
            offered,
            ..Self::default()
        }
    }

    /// Also turn an answer that is nothing but a call to a tool that was not offered into
    /// that call, which then fails as unknown and lists the real tools.
    pub fn with_unknown_calls(mut self, on: bool) -> Self {
        self.unknown_calls = on;
        self
    }

    /// Ids of the calls recovered from text in this response.
    pub fn recovered(&self) -> &[String] {
        &self.recovered
    }

    /// Whether the held text has a complete call and starts another, or the answer writes
    /// one line over and over, or ends in a kilobyte of one repeated piece: a small model
    /// that does that often goes on until its output limit, so the caller may stop
    /// reading and [`finish`] (only the first call counts anyway, see [`recover`](super::recover)).
    ///
    /// [`finish`]: CallFilter::finish
    pub fn saturated(&self) -> bool {
        self.saturated
    }

    /// Ends the response here, as if the server had finished it: the text block closes
    /// with what it has.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.cut = true;
        if let (Some(index), None) = (self.text_index, &self.held_stop) {
            self.held_stop = Some(BlockStop {
                index,
                block_type: BlockType::Text,
                stop_reason: None,
            });
        }
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
                let safe = self
                    .scanner
                    .safe_len(&self.text, &self.offered, self.unknown_calls);
                self.emit_text(safe, out);
                if piece.contains('\n') && self.released < self.text.len() && !self.native_calls {
                    self.saturated = writes_past_a_call(&self.text[self.released..], &self.offered);
                }
                if piece.contains('\n') && !self.saturated {
                    self.saturated = ends_in_a_loop(&self.text);
                }
                if self.text.len() >= self.next_repeat_check && !self.saturated {
                    self.next_repeat_check = self.text.len() + REPEAT_CHECK_EVERY;
                    self.saturated = ends_in_a_repeat(&self.text);
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
                // An error or a cancel cut the block: the request may be sent again, and
                // what is still held may be half a call. It is never shown, so nothing is
                // shown twice or as an answer.
                self.reset_text();
            }
            Event::Status(status) if status.status.is_terminal() => {
                let recoverable = matches!(
                    status.status,
                    ResponseStatus::Completed | ResponseStatus::Incomplete
                );
                let stopped = !self.cut
                    && status.status == ResponseStatus::Completed
                    && !matches!(
                        status.stop_reason,
                        Some(StopReason::MaxTokens | StopReason::ContentFilter)
                    );
                if recoverable && !self.native_calls && self.try_recover(out, stopped) {
                    let mut status = status.clone();
                    status.stop_reason = Some(StopReason::ToolUse);
                    out.push(Event::Status(status));
                    return;
                }
                if status.status == ResponseStatus::Failed {
                    // A failed response may be sent again, and what is still held may be
                    // half a call: it is never shown, so nothing is shown twice.
                    self.text.truncate(self.released);
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
        self.next_repeat_check = 0;
    }

    /// At the end of a response without native calls: the held text as calls, if it is.
    /// `stopped`: the model ended the answer itself, so a call it left a bracket or two
    /// short is closed (see [`close_cut_call`]).
    fn try_recover(&mut self, out: &mut Vec<Event>, stopped: bool) -> bool {
        let (shown, as_written) = self.text.split_at(self.released);
        let mut found = recover_after(shown, as_written, &self.offered);
        // Only text with no call as written is closed, and only once.
        let closed = (found.is_none() && stopped)
            .then(|| close_cut_call(as_written))
            .flatten();
        let held = closed.as_deref().unwrap_or(as_written);
        if closed.is_some() {
            found = recover_after(shown, held, &self.offered);
        }
        let unknown = || {
            let whole = self.unknown_calls && self.text[..self.released].trim().is_empty();
            whole.then(|| unknown_call(held, &self.offered)).flatten()
        };
        let found = match found {
            Some(found) => found,
            None => match unknown() {
                Some(call) => Recovered {
                    text: String::new(),
                    calls: vec![call],
                },
                None => return false,
            },
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
