//! `read_file`'s text: the lines asked for, read from the file as a stream. What a read
//! costs is bounded by what it shows, not by the file: lines before `offset` are only
//! counted, a line is kept only up to the output cap, and past the page the file is read
//! on only to count its lines, for at most [`COUNT_AHEAD_MAX_BYTES`]. A 700 MB file or a
//! 600 MB line costs a buffer and a page, never its size in memory.

use crate::common::{failed, utf8_prefix_len};
use saki_llm_worker::{ToolError, ToolOutput};
use std::io::{BufRead, BufReader, Read, Seek};

/// How far past the page the file is read to count its lines, so the notices can say
/// how many there are (models are asked for that, and page by it). The same bound as
/// `ls` counting a file's lines: reading 8 MiB more is a few milliseconds; beyond it a
/// notice says "at least" instead of reading the rest of a huge file.
pub const COUNT_AHEAD_MAX_BYTES: u64 = 8 << 20;

/// The head of a file checked for binary content (a NUL byte in it, as
/// [`crate::common::looks_binary`] checks).
pub const HEAD_BYTES: usize = 8192;

/// Read buffer: a page is at most the output cap, read in pieces this big.
const BUF_BYTES: usize = 64 * 1024;

/// Reads up to [`HEAD_BYTES`] from the start of `file` (for sniffing), and rewinds it.
pub fn head<F: Read + Seek>(file: &mut F) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    file.by_ref()
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    file.rewind()?;
    Ok(head)
}

/// Whether `head` (the first [`HEAD_BYTES`] of a file of `len` bytes) is not text: a NUL
/// byte, or bytes that are not UTF-8 (a character cut at the head's end is not counted).
pub fn head_is_binary(head: &[u8], len: u64) -> bool {
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        // An incomplete sequence at the very end is fine when the file goes on.
        Err(e) => e.error_len().is_some() || (head.len() as u64) == len,
    }
}

/// What one pass over the file found.
struct Scan {
    /// The page: the note, then the lines shown.
    out: String,
    shown: usize,
    /// Lines in the file, or at least this many when `complete` is false.
    total: usize,
    complete: bool,
    /// The one line shown was cut at the cap.
    cut_line: bool,
}

/// The page of `file` (a regular file, text by its head) starting at line `offset`
/// (1-based), at most `limit` lines, within `cap` bytes, with the notices saying how to
/// read on. `shown` names the file in errors.
pub fn render<F: Read + Seek>(
    file: F,
    shown: &str,
    offset: usize,
    limit: Option<usize>,
    cap: usize,
) -> Result<ToolOutput, ToolError> {
    let io = |e: std::io::Error| failed(format!("cannot read {shown}: {e}"));
    let not_text = || failed(format!("{shown} is a binary file; not shown"));
    let mut reader = BufReader::with_capacity(BUF_BYTES, file);
    let mut first = offset.max(1);
    let mut page = scan(&mut reader, Pager::new(first, limit, cap, String::new()))
        .map_err(io)?
        .ok_or_else(not_text)?;
    let total = page.total;
    if page.complete && first > total.max(1) {
        if first == total + 1 && total > 0 {
            // The next page after the last one: a reader going page by page has
            // finished. Showing the file again would start it over from the top.
            return Ok(ToolOutput::new(format!(
                "[end of file: it has {total} lines, and offset {first} is just past the \
                 last one; nothing more to read]"
            ))
            .with_summary("0 lines".to_owned()));
        }
        // Small models send a made-up offset for a file they have not seen; the file
        // itself serves them better than an empty answer.
        let note = format!(
            "[offset {first} is past the end of this {total}-line file; showing it from line 1]\n"
        );
        first = 1;
        reader.rewind().map_err(io)?;
        page = scan(&mut reader, Pager::new(first, limit, cap, note))
            .map_err(io)?
            .ok_or_else(not_text)?;
    }
    Ok(finish(page, first, cap))
}

/// The notices after the page, as the model reads them.
fn finish(page: Scan, first: usize, cap: usize) -> ToolOutput {
    let Scan {
        mut out,
        shown,
        total,
        complete,
        cut_line,
    } = page;
    let last = first - 1 + shown;
    let summary = format!("{shown} lines");
    let mut notice = |text: String| {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&text);
    };
    if cut_line {
        notice(format!(
            "[...truncated: line {last} is longer than {cap} bytes; only its start is shown]"
        ));
    }
    if !complete {
        notice(format!(
            "[...truncated: showing lines {first}-{last} of at least {total}; use offset={} \
             to read more]",
            last + 1
        ));
    } else if last < total {
        notice(format!(
            "[...truncated: showing lines {first}-{last} of {total}; use offset={} to read more]",
            last + 1
        ));
    } else if first > 1 {
        notice(format!("[end of file: line {total} is the last]"));
    } else if first == 1 && total > 1 {
        // Models this small cannot count lines; the whole file's count is one fact they
        // are often asked for.
        notice(format!("[{total} lines in all]"));
    }
    ToolOutput::new(out).with_summary(summary)
}

/// The page being built, line by line.
struct Pager {
    first: usize,
    /// The last line to show (inclusive); `limit` may be anything up to u64::MAX.
    end: usize,
    cap: usize,
    out: String,
    shown: usize,
    cut_line: bool,
    /// Lines are still being shown (false once the page is complete).
    collecting: bool,
    /// The number of the current line (lines started so far).
    line_no: usize,
    /// The current line's bytes, kept only while it may be shown, at most `cap` + 4 (a
    /// character cut at the cap is then whole or dropped).
    line: Vec<u8>,
    line_len: usize,
}

impl Pager {
    fn new(first: usize, limit: Option<usize>, cap: usize, note: String) -> Self {
        let end = limit.map_or(usize::MAX, |l| l.saturating_add(first - 1));
        Self {
            first,
            end,
            cap,
            out: note,
            shown: 0,
            cut_line: false,
            collecting: first <= end,
            line_no: 0,
            line: Vec::new(),
            line_len: 0,
        }
    }

    fn start_line(&mut self) {
        self.line_no += 1;
        self.line_len = 0;
    }

    /// A piece of the current line.
    fn feed(&mut self, piece: &[u8]) {
        let keep_max = self.cap.saturating_add(4);
        if self.collecting && self.line_no >= self.first && self.line.len() < keep_max {
            let room = keep_max - self.line.len();
            self.line.extend_from_slice(&piece[..piece.len().min(room)]);
        }
        self.line_len = self.line_len.saturating_add(piece.len());
    }

    /// Ends the current line: shows it, or completes the page. `false`: not UTF-8.
    fn end_line(&mut self) -> bool {
        if !self.collecting || self.line_no < self.first {
            return true;
        }
        if self.out.len() + self.line_len > self.cap {
            if self.shown == 0 {
                let keep = utf8_prefix_len(&self.line, self.cap);
                let Ok(text) = std::str::from_utf8(&self.line[..keep]) else {
                    return false;
                };
                self.out.push_str(text);
                self.shown = 1;
                self.cut_line = keep < self.line_len;
            }
            self.collecting = false;
        } else {
            let Ok(text) = std::str::from_utf8(&self.line) else {
                return false;
            };
            self.out.push_str(text);
            self.shown += 1;
            if self.line_no >= self.end {
                self.collecting = false;
            }
        }
        self.line.clear();
        true
    }

    fn done(self, complete: bool) -> Scan {
        Scan {
            out: self.out,
            shown: self.shown,
            total: self.line_no,
            complete,
            cut_line: self.cut_line,
        }
    }
}

/// One pass: skips to the first line, keeps lines while they fit, then counts lines for
/// at most [`COUNT_AHEAD_MAX_BYTES`]. `None`: a shown line is not UTF-8.
fn scan<R: BufRead>(reader: &mut R, mut pager: Pager) -> std::io::Result<Option<Scan>> {
    let mut at_line_start = true;
    // Bytes read since the page was complete, only to count lines.
    let mut counted: u64 = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        if !pager.collecting {
            if counted >= COUNT_AHEAD_MAX_BYTES {
                // The file goes on: a line starts in what is left if none is open.
                if at_line_start {
                    pager.start_line();
                }
                return Ok(Some(pager.done(false)));
            }
            counted += n as u64;
        }
        let mut pos = 0;
        while pos < n {
            if at_line_start {
                pager.start_line();
                at_line_start = false;
            }
            let rest = &buf[pos..];
            let (piece, ends) = match memchr::memchr(b'\n', rest) {
                Some(k) => (&rest[..=k], true),
                None => (rest, false),
            };
            pager.feed(piece);
            pos += piece.len();
            if ends {
                at_line_start = true;
                let was_collecting = pager.collecting;
                if !pager.end_line() {
                    return Ok(None);
                }
                if was_collecting && !pager.collecting {
                    counted = (n - pos) as u64;
                }
            }
        }
        reader.consume(n);
    }
    if !at_line_start && !pager.end_line() {
        return Ok(None);
    }
    Ok(Some(pager.done(true)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    /// read_file's page as it was made from the whole file in memory, with the notice
    /// for a cut line: what the stream must give for every file it counts to the end.
    fn whole(text: &str, offset: usize, limit: Option<usize>, cap: usize) -> String {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let total = lines.len();
        let mut first = offset.max(1);
        let mut note = String::new();
        if first == total + 1 && total > 0 {
            return format!(
                "[end of file: it has {total} lines, and offset {first} is just past the last \
                 one; nothing more to read]"
            );
        }
        if first > total.max(1) {
            note = format!(
                "[offset {first} is past the end of this {total}-line file; showing it from line 1]\n"
            );
            first = 1;
        }
        let stop = limit.map_or(total, |l| l.saturating_add(first - 1).min(total));
        let wanted = &lines[(first - 1).min(stop)..stop];
        let mut out = note;
        let mut shown = 0;
        let mut cut = false;
        for line in wanted {
            if out.len() + line.len() > cap {
                if shown == 0 {
                    let part = crate::common::prefix_at_boundary(line, cap);
                    cut = part.len() < line.len();
                    out.push_str(part);
                    shown = 1;
                }
                break;
            }
            out.push_str(line);
            shown += 1;
        }
        let last = first - 1 + shown;
        let mut notice = |text: String| {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&text);
        };
        if cut {
            notice(format!(
                "[...truncated: line {last} is longer than {cap} bytes; only its start is shown]"
            ));
        }
        if last < total {
            notice(format!(
                "[...truncated: showing lines {first}-{last} of {total}; use offset={} to read more]",
                last + 1
            ));
        } else if first > 1 {
            notice(format!("[end of file: line {total} is the last]"));
        } else if first == 1 && total > 1 {
            notice(format!("[{total} lines in all]"));
        }
        out
    }

    fn streamed(text: &str, offset: usize, limit: Option<usize>, cap: usize) -> String {
        let file = std::io::Cursor::new(text.as_bytes().to_vec());
        render(file, "f", offset, limit, cap).unwrap().content
    }

    proptest! {
        #[test]
        fn the_stream_pages_as_the_whole_file_did(
            text in "(é|[ab\n]){0,60}",
            offset in 0usize..30,
            limit in proptest::option::of(0usize..30),
            cap in 1usize..40,
        ) {
            prop_assert_eq!(
                streamed(&text, offset, limit, cap),
                whole(&text, offset, limit, cap)
            );
        }
    }

    #[test]
    fn a_file_past_the_counting_bound_says_at_least() {
        let line = "0123456789abcdef\n";
        let text = line.repeat((COUNT_AHEAD_MAX_BYTES as usize / line.len()) * 2);
        let out = streamed(&text, 1, Some(2), 1024);
        assert!(out.starts_with(&line.repeat(2)), "{out}");
        let notice = out.lines().last().unwrap();
        assert!(
            notice.starts_with("[...truncated: showing lines 1-2 of at least ")
                && notice.ends_with("; use offset=3 to read more]"),
            "{notice}"
        );
        // Far into the file, the page is found by counting, and the end is exact again.
        let total = text.len() / line.len();
        let out = streamed(&text, total, None, 1024);
        assert_eq!(
            out,
            format!("{line}[end of file: line {total} is the last]")
        );
    }

    #[test]
    fn a_line_longer_than_the_cap_is_cut_and_said_so() {
        let text = format!("{}\nnext\n", "é".repeat(100));
        let out = streamed(&text, 1, None, 51);
        assert_eq!(
            out,
            format!(
                "{}\n[...truncated: line 1 is longer than 51 bytes; only its start is shown]\n\
                 [...truncated: showing lines 1-1 of 2; use offset=2 to read more]",
                "é".repeat(25)
            )
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_in_a_shown_line_are_binary() {
        let file = std::io::Cursor::new(b"ok\n\xff\xfe\n".to_vec());
        let err = render(file, "f", 1, None, 1024).unwrap_err().to_string();
        assert!(err.contains("binary"), "{err}");
        assert!(head_is_binary(b"a\0b", 3));
        assert!(!head_is_binary("é".as_bytes(), 2));
        // A character cut at the head's end is text when the file goes on, not at its end.
        assert!(!head_is_binary(&"é".as_bytes()[..1], 2));
        assert!(head_is_binary(&"é".as_bytes()[..1], 1));
    }
}
