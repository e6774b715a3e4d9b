//! The last lines a stdio server wrote to stderr, kept to say why it failed.
//!
//! A server is a program saki does not control: it may write a line of gigabytes, or
//! never end one. Reading whole lines and cutting them afterwards would hold each line in
//! memory first (600 MB of stderr cost 617 MB), so a line is read in pieces and only its
//! first [`LINE_BYTES`] are kept; the rest is skipped up to the next line end.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Lines of a server's stderr kept for error messages.
const LINES: usize = 12;
/// Longest stderr line kept, in characters.
const LINE_MAX: usize = 300;
/// Bytes of a line read into memory: [`LINE_MAX`] characters in any script.
const LINE_BYTES: usize = LINE_MAX * 4;

/// The last lines a server wrote to stderr, and whether it closed it.
#[derive(Default)]
pub(crate) struct Stderr {
    lines: Mutex<VecDeque<String>>,
    closed: AtomicBool,
}

impl Stderr {
    /// Whether the server closed its stderr (it was read to the end).
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The kept lines, oldest first, joined by ` | `.
    pub fn tail(&self) -> String {
        self.lines
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }

    /// Reads `reader` to its end, keeping the last [`LINES`] non-blank lines, each cut to
    /// [`LINE_MAX`] characters; `server` names the server in diagnostics.
    pub async fn read_from(&self, mut reader: impl AsyncBufRead + Unpin, server: &str) {
        let mut line = Vec::with_capacity(LINE_BYTES);
        while let Ok(true) = next_line(&mut reader, &mut line).await {
            let text = String::from_utf8_lossy(&line);
            let text: String = text.trim().chars().take(LINE_MAX).collect();
            tracing::debug!(server, line = %text, "MCP server stderr");
            if text.is_empty() {
                continue;
            }
            if let Ok(mut lines) = self.lines.lock() {
                if lines.len() == LINES {
                    lines.pop_front();
                }
                lines.push_back(text);
            }
        }
        self.closed.store(true, Ordering::Release);
    }
}

/// The next line of `reader` into `line`, at most [`LINE_BYTES`] of it (what is past
/// that is read and dropped). `false` at the end of the stream.
async fn next_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    line.clear();
    let mut read_any = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(read_any);
        }
        read_any = true;
        let (taken, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buf.len(), false),
        };
        let room = LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&buf[..taken.min(room)]);
        reader.consume(taken);
        if ended {
            return Ok(true);
        }
    }
}

#[cfg(test)]
#[path = "stderr_tests.rs"]
mod tests;
