use super::*;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::AsyncRead;

static XS: [u8; 1 << 16] = [b'x'; 1 << 16];

/// A stderr of `long` bytes of `x` without a line end, then `tail`; made as it is read,
/// so the test holds none of it. It notes the process's resident memory as it goes.
struct Flood {
    long: usize,
    tail: &'static [u8],
    rss_max_kib: u64,
}

impl Flood {
    fn rest(&self) -> &'static [u8] {
        if self.long > 0 {
            &XS[..self.long.min(XS.len())]
        } else {
            self.tail
        }
    }
}

impl AsyncRead for Flood {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let rest = this.rest();
        let n = rest.len().min(buf.remaining());
        buf.put_slice(&rest[..n]);
        this.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for Flood {
    fn poll_fill_buf(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        Poll::Ready(Ok(self.get_mut().rest()))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().advance(amt);
    }
}

impl Flood {
    fn advance(&mut self, n: usize) {
        if self.long > 0 {
            let before = self.long;
            self.long -= n.min(self.long);
            // Every 8 MiB, how much memory the process holds now.
            if before / (8 << 20) != self.long / (8 << 20) {
                self.rss_max_kib = self.rss_max_kib.max(rss_kib().unwrap_or(0));
            }
        } else {
            self.tail = &self.tail[n.min(self.tail.len())..];
        }
    }
}

/// The process's resident memory (Linux), in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "current_thread")]
async fn a_line_of_hundreds_of_megabytes_is_never_held_whole() {
    let Some(before) = rss_kib() else {
        return; // No /proc: nothing to measure with.
    };
    let mut flood = Flood {
        long: 256 << 20,
        tail: b"\nfatal: no config\n",
        rss_max_kib: 0,
    };
    let stderr = Stderr::default();
    stderr.read_from(&mut flood, "big").await;
    let grown_mib = flood.rss_max_kib.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 64,
        "reading grew the process by {grown_mib} MiB"
    );
    let tail = stderr.tail();
    assert!(tail.ends_with(" | fatal: no config"), "{tail}");
    assert_eq!(tail.split(" | ").next().map(str::len), Some(LINE_MAX));
    assert!(stderr.closed());
}

#[tokio::test(flavor = "current_thread")]
async fn only_the_last_lines_are_kept() {
    let text: String = (0..20).map(|i| format!("line {i}\n\n")).collect();
    let stderr = Stderr::default();
    stderr.read_from(text.as_bytes(), "s").await;
    let tail = stderr.tail();
    assert!(tail.starts_with("line 8 | line 9"), "{tail}");
    assert!(tail.ends_with("line 19"), "{tail}");
}
