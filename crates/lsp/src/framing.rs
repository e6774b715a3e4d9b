//! JSON-RPC messages over a byte stream as LSP frames them: `Content-Length: N` (and
//! optionally `Content-Type`) header lines, an empty line, then N bytes of JSON.
//!
//! Written here (about a hundred lines) rather than taken from a crate: `lsp-server`
//! frames on blocking threads, `async-lsp` brings a whole server framework and pins an
//! older `lsp-types`, and `tower-lsp` is for writing servers.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message body accepted from a server (a workspace's symbols can be large;
/// anything past this is a broken or hostile server, and the connection ends).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The longest header line accepted.
const MAX_HEADER_LINE: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    #[error("reading from the server: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad header line from the server: {0}")]
    BadHeader(String),
    #[error("a message without Content-Length")]
    NoLength,
    #[error("a message of {0} bytes, over the {MAX_MESSAGE_BYTES}-byte bound")]
    TooLarge(usize),
    #[error("the stream ended inside a message")]
    Truncated,
}

/// `body` framed for the wire.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Writes one framed message and flushes it.
pub async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    writer.write_all(&encode(body)).await?;
    writer.flush().await
}

/// Reads the next message body; `None` when the stream ends between messages.
pub async fn read_message<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> Result<Option<Vec<u8>>, FramingError> {
    let mut length = None;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let n = (&mut *reader)
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err(FramingError::Truncated)
            };
        }
        if n > MAX_HEADER_LINE {
            return Err(FramingError::BadHeader(format!(
                "longer than {MAX_HEADER_LINE} bytes"
            )));
        }
        first = false;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(FramingError::BadHeader(text.to_owned()));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| FramingError::BadHeader(text.to_owned()))?,
            );
        }
    }
    let length = length.ok_or(FramingError::NoLength)?;
    if length > MAX_MESSAGE_BYTES {
        return Err(FramingError::TooLarge(length));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            FramingError::Truncated
        } else {
            FramingError::Io(e)
        }
    })?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::BufReader;

    async fn read_all(bytes: &[u8]) -> Vec<Result<Option<Vec<u8>>, String>> {
        let mut reader = BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            let next = read_message(&mut reader).await.map_err(|e| e.to_string());
            let end = !matches!(next, Ok(Some(_)));
            out.push(next);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn frames_round_trip_back_to_back() {
        let mut wire = encode(br#"{"a":1}"#);
        wire.extend(encode("{\"b\":\"é\"}".as_bytes()));
        let got = read_all(&wire).await;
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0].as_ref().unwrap().as_deref(),
            Some(&br#"{"a":1}"#[..])
        );
        assert_eq!(
            got[1].as_ref().unwrap().as_deref(),
            Some("{\"b\":\"é\"}".as_bytes())
        );
        assert_eq!(got[2], Ok(None));
    }

    #[tokio::test]
    async fn headers_are_case_insensitive_and_content_type_is_ignored() {
        let wire = b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}";
        let got = read_all(wire).await;
        assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"{}"[..]));
    }

    #[tokio::test]
    async fn broken_frames_are_errors_not_hangs() {
        let missing = read_all(b"Content-Type: x\r\n\r\n{}").await;
        assert!(missing[0].as_ref().unwrap_err().contains("Content-Length"));
        let short = read_all(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(short[0].as_ref().unwrap_err().contains("ended inside"));
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE_BYTES + 1);
        assert!(read_all(huge.as_bytes()).await[0]
            .as_ref()
            .unwrap_err()
            .contains("bound"));
        let garbage = read_all(b"hello\r\n\r\n").await;
        assert!(garbage[0].as_ref().unwrap_err().contains("bad header"));
        let cut_header = read_all(b"Content-Length: 2\r\n").await;
        assert!(cut_header[0].as_ref().unwrap_err().contains("ended inside"));
    }
}
