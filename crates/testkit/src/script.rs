//! What the mock server answers: scripted turns (rendered into the requested wire
//! protocol), raw SSE bodies, or plain HTTP errors, plus faults to inject.

use std::time::Duration;

/// One reply, consumed by one incoming request (first in, first out).
#[derive(Debug, Clone)]
pub enum Reply {
    /// A model turn rendered into the SSE dialect of whatever endpoint was called.
    Turn(Turn),
    /// A raw SSE body sent verbatim (e.g. a fixture file), split into its events.
    RawSse { body: String, faults: Faults },
    /// A non-streaming HTTP answer (e.g. 429 with `Retry-After`, 500, 401).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A hostile body: `prefix`, then `repeat` again and again, until the client hangs up
    /// or `max_bytes` were sent (an endless line, an event never ended, endless deltas,
    /// keep-alive comments only, a huge error body).
    Endless(Endless),
}

#[derive(Debug, Clone)]
pub struct Endless {
    pub status: u16,
    pub content_type: String,
    pub prefix: String,
    pub repeat: String,
    /// Pause between repeats (keep-alives); `None`: as fast as the client reads.
    pub every: Option<Duration>,
    /// Stop (and close the body) after this many bytes.
    pub max_bytes: Option<u64>,
}

impl Endless {
    /// A 200 event stream: `prefix`, then `repeat` forever.
    pub fn sse(prefix: impl Into<String>, repeat: impl Into<String>) -> Self {
        Endless {
            status: 200,
            content_type: "text/event-stream".into(),
            prefix: prefix.into(),
            repeat: repeat.into(),
            every: None,
            max_bytes: None,
        }
    }

    pub fn every(mut self, pause: Duration) -> Self {
        self.every = Some(pause);
        self
    }

    pub fn max_bytes(mut self, max: u64) -> Self {
        self.max_bytes = Some(max);
        self
    }

    pub fn status(mut self, status: u16, content_type: impl Into<String>) -> Self {
        self.status = status;
        self.content_type = content_type.into();
        self
    }
}

impl From<Endless> for Reply {
    fn from(endless: Endless) -> Self {
        Reply::Endless(endless)
    }
}

impl Reply {
    pub fn raw_sse(body: impl Into<String>) -> Self {
        Reply::RawSse {
            body: body.into(),
            faults: Faults::default(),
        }
    }

    pub fn status(status: u16, body: impl Into<String>) -> Self {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A non-streaming answer with the given headers.
    pub fn status_with_headers(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        Reply::Status {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.to_owned(),
        }
    }

    /// HTTP 429 with a `Retry-After` header in whole seconds.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Reply::Status {
            status: 429,
            headers: vec![("retry-after".into(), retry_after_secs.to_string())],
            body: r#"{"error":{"type":"rate_limit_error","message":"rate limited by testkit"}}"#
                .into(),
        }
    }
}

impl From<Turn> for Reply {
    fn from(turn: Turn) -> Self {
        Reply::Turn(turn)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    Thinking(String),
    ToolCall {
        id: String,
        name: String,
        /// The arguments JSON as the model would stream it (may be invalid on purpose).
        arguments: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Finish {
    /// Normal end; rendered as the protocol's tool-use reason when the turn has tool calls.
    #[default]
    EndTurn,
    MaxTokens,
    /// No finish signal at all: the stream just ends.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Faults {
    /// Send this many SSE events, then break the connection.
    pub drop_after: Option<usize>,
    /// Send this many SSE events, then keep the connection open without sending more.
    pub stall_after: Option<usize>,
    /// Insert a malformed `data:` event before the event with this index.
    pub malformed_at: Option<usize>,
    /// Pause before every event.
    pub chunk_delay: Option<Duration>,
}

/// Holds back the events of the turns that wait on it until [`Gate::open`]: for tests
/// that need one reply to arrive after something else happened (the response's headers
/// go out at once; its first event waits). Clones share the gate.
#[derive(Debug, Clone)]
pub struct Gate(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl Gate {
    pub fn new() -> Self {
        Self(std::sync::Arc::new(tokio::sync::watch::Sender::new(false)))
    }

    /// Lets every waiting (and later) turn on this gate stream.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    pub(crate) async fn wait(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub blocks: Vec<Block>,
    pub usage: Option<Usage>,
    pub finish: Finish,
    pub faults: Faults,
    /// Streams only once this gate is open.
    pub gate: Option<Gate>,
}

impl Turn {
    pub fn new() -> Self {
        Self::default()
    }

    /// A turn that answers with this text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    pub fn with_thinking(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Thinking(text.into()));
        self
    }

    pub fn with_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.blocks.push(Block::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
        });
        self
    }

    pub fn with_finish(mut self, finish: Finish) -> Self {
        self.finish = finish;
        self
    }

    pub fn drop_after(mut self, events: usize) -> Self {
        self.faults.drop_after = Some(events);
        self
    }

    pub fn stall_after(mut self, events: usize) -> Self {
        self.faults.stall_after = Some(events);
        self
    }

    pub fn malformed_at(mut self, event: usize) -> Self {
        self.faults.malformed_at = Some(event);
        self
    }

    /// Sends nothing until `gate` is opened.
    pub fn hold(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }

    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.faults.chunk_delay = Some(delay);
        self
    }

    pub fn has_tool_calls(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolCall { .. }))
    }
}

/// Splits text into word-sized pieces (each starting at a space) so deltas look real.
pub(crate) fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c == ' ' && i > start {
            out.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() || out.is_empty() {
        out.push(&text[start..]);
    }
    out
}

/// Splits a string into pieces of at most `n` characters.
pub(crate) fn fragments(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_to_the_text() {
        for text in [
            "",
            "one",
            "Hello there, world",
            " leading",
            "trailing ",
            "日本語 テキスト",
        ] {
            assert_eq!(pieces(text).concat(), text);
        }
        assert_eq!(fragments("abcdef", 4), vec!["abcd", "ef"]);
    }
}
