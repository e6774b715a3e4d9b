//! Server-Sent Events parsing (the WHATWG `text/event-stream` rules: LF, CRLF or CR
//! line ends, `event` / `data` / `id` / `retry` fields, `:` comments, multi-line data,
//! a blank line dispatches).
//!
//! Written by hand because it sits on the hot path: `eventsource-stream` allocates
//! several strings per event and capped decoding near 600k events/s, a large share of
//! the budget for the whole decode + dispatch pipeline. This parser borrows from its
//! buffer and hands each event to a callback.

/// The longest line, and the most data one event may gather. A whole tool call that
/// writes a 5 MB file fits; a server that never ends a line or an event does not take the
/// machine's memory.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// How much of the lines that are not SSE at all is kept (a provider's raw JSON error).
const MAX_STRAY_BYTES: usize = 64 * 1024;

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet terminated.
    partial: Vec<u8>,
    /// Lines that are not SSE (no known field), kept up to [`MAX_STRAY_BYTES`].
    stray: String,
    /// Set once a line or event went past [`MAX_EVENT_BYTES`]; the stream is unusable.
    overflow: bool,
    event_type: String,
    data: String,
    has_data: bool,
    /// The previous chunk ended in CR: a leading LF in the next one belongs to it.
    after_cr: bool,
    started: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `on_event(event_type, data)` for every complete event.
    /// The event type is `"message"` when the event named none.
    pub fn feed(&mut self, mut bytes: &[u8], on_event: &mut dyn FnMut(&str, &str)) {
        if self.overflow {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
            let terminator = bytes[end];
            let line = &bytes[..end];
            if self.partial.is_empty() {
                self.line(line, on_event);
            } else {
                self.partial.extend_from_slice(line);
                let whole = std::mem::take(&mut self.partial);
                self.line(&whole, on_event);
            }
            bytes = &bytes[end + 1..];
            if terminator == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.partial.extend_from_slice(bytes);
        if self.partial.len() > MAX_EVENT_BYTES {
            self.overflowed();
        }
    }

    /// Whether the stream broke a size limit (see [`MAX_EVENT_BYTES`]); nothing more is
    /// parsed then.
    pub fn overflow(&self) -> bool {
        self.overflow
    }

    /// The lines that were not SSE, as sent (some providers write a JSON error into an
    /// event stream without any `data:`).
    pub fn stray(&self) -> &str {
        &self.stray
    }

    fn overflowed(&mut self) {
        self.overflow = true;
        self.partial = Vec::new();
        self.data = String::new();
        self.has_data = false;
    }

    /// End of input. Unlike the browser rules, a final event that lacks its blank line
    /// (or even its line end) is still dispatched: servers that close abruptly meant it,
    /// and a truncated JSON payload is rejected by the decoder anyway.
    pub fn finish(&mut self, on_event: &mut dyn FnMut(&str, &str)) {
        if self.overflow {
            return;
        }
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, on_event);
        }
        // Servers that close without the trailing blank line still meant the event.
        self.dispatch(on_event);
    }

    fn line(&mut self, mut line: &[u8], on_event: &mut dyn FnMut(&str, &str)) {
        if self.overflow {
            return;
        }
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return; // comment (keep-alive)
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"data" => {
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    self.overflowed();
                    return;
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&value);
            }
            // Not in the browser rules: llama.cpp's server (builds before its HTTP layer
            // was rewritten) sends a failure mid-stream as an `error:` field, which those
            // rules drop; the stream would then seem to end normally with half an answer.
            b"error" => {
                self.event_type.clear();
                self.event_type.push_str("error");
                if self.data.len() + value.len() > MAX_EVENT_BYTES {
                    self.overflowed();
                    return;
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"id" | b"retry" => {} // they do not matter to a one-shot stream
            _ => {
                if self.stray.len() + line.len() < MAX_STRAY_BYTES {
                    self.stray.push_str(&String::from_utf8_lossy(line));
                    self.stray.push('\n');
                }
            }
        }
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(&str, &str)) {
        if self.has_data {
            let event_type = if self.event_type.is_empty() {
                "message"
            } else {
                &self.event_type
            };
            on_event(event_type, &self.data);
        }
        self.data.clear();
        self.event_type.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut push = |t: &str, d: &str| out.push((t.to_owned(), d.to_owned()));
        for c in chunks {
            p.feed(c, &mut push);
        }
        p.finish(&mut push);
        out
    }

    fn ev(t: &str, d: &str) -> (String, String) {
        (t.to_owned(), d.to_owned())
    }

    #[test]
    fn an_error_field_is_an_error_event() {
        assert_eq!(
            parse(&[b"data: {\"a\":1}\n\nerror: {\"code\":500}\n\ndata: [DONE]\n\n"]),
            [
                ("message".to_owned(), "{\"a\":1}".to_owned()),
                ("error".to_owned(), "{\"code\":500}".to_owned()),
                ("message".to_owned(), "[DONE]".to_owned()),
            ]
        );
    }

    #[test]
    fn fields_comments_and_multiline_data() {
        let got = parse(&[
            b": keep-alive\n\nevent: ping\ndata: {}\n\ndata:a\ndata: b\nid: 7\nretry: 10\n\n",
        ]);
        assert_eq!(got, [ev("ping", "{}"), ev("message", "a\nb")]);
    }

    #[test]
    fn crlf_cr_and_split_terminators() {
        assert_eq!(
            parse(&[b"data: x\r\n\r\ndata: y\r\rdata: z\n\n"]),
            [ev("message", "x"), ev("message", "y"), ev("message", "z")]
        );
        assert_eq!(
            parse(&[b"data: x\r", b"\n\r", b"\ndata: y\n\n"]),
            [ev("message", "x"), ev("message", "y")]
        );
    }

    #[test]
    fn split_utf8_bom_and_unterminated_tail() {
        let body = "\u{feff}data: héllo 日本\n\ndata: tail".as_bytes();
        let chunks: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(
            parse(&chunks),
            [ev("message", "héllo 日本"), ev("message", "tail")]
        );
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert_eq!(parse(&[b"event: lonely\n\n\n\n"]), []);
    }
}
