//! Helpers every built-in tool shares.

use saki_llm_worker::ToolError;
use serde::de::DeserializeOwned;

/// Largest tool output the model sees, in bytes (about 4k tokens).
pub const TOOL_OUTPUT_MAX_BYTES: usize = 16 * 1024;

/// The most `tool_output_max_bytes` may be set to, whatever a config file says (a
/// workspace's own config too). The cap sizes what each call holds (a `read_file` page,
/// an `@path` body, the shell's head and tail), for every call of a batch at once, and
/// every result stays in history and is sent again with each request. 1 MiB is about
/// 250k tokens, more than most models' whole context: a larger output serves no model
/// and only costs memory.
pub const TOOL_OUTPUT_HARD_MAX_BYTES: usize = 1 << 20;

pub fn parse_args<T: DeserializeOwned>(input_json: &str) -> Result<T, ToolError> {
    serde_json::from_str(input_json).map_err(|e| ToolError::InvalidInput(e.to_string()))
}

pub fn failed(e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(e.to_string())
}

/// Reads a regular file whole (see [`open_regular`]). Only for files whose whole content
/// is needed: a reader that shows part of a file uses [`read_prefix`].
pub fn read_regular(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    read_regular_at_most(path, u64::MAX)
}

/// [`read_regular`] for a file that must not be larger than `max` bytes: a larger one
/// is refused (`ErrorKind::FileTooLarge`) before any of it is read, and one that grows
/// while it is read stops at `max + 1` bytes and is refused.
pub fn read_regular_at_most(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (file, len) = open_regular(path)?;
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {max} bytes; not read"),
        )
    };
    if len > max {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).min(1 << 26));
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The first `max` bytes of what `reader` reads (fewer when it ends sooner), and the
/// length of what it reads, `len` as its file's length said: for a reader that shows
/// only the start of a file, so that what it costs is bounded by what it keeps, whatever
/// the file's size.
pub fn read_prefix(
    reader: impl std::io::Read,
    len: u64,
    max: usize,
) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(max).min(max));
    reader.take(max as u64).read_to_end(&mut bytes)?;
    // A file that grew since its length was read is at least as long as what was read.
    let len = len.max(bytes.len() as u64);
    Ok((bytes, len))
}

/// Opens a regular file to read, and its length. Anything else (a FIFO, a device, a
/// socket) is refused without blocking: opening a FIFO to read waits for a writer
/// forever, and a device may never end. The check is made on the opened file, so a swap
/// after a look cannot fool it.
pub fn open_regular(path: &std::path::Path) -> std::io::Result<(std::fs::File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let kind = meta.file_type();
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}, not a regular file; not read"),
        ));
    }
    Ok((file, meta.len()))
}

/// The length of the longest prefix of `bytes` of at most `max` bytes that does not
/// end inside a UTF-8 sequence (whether the prefix is valid UTF-8 is not checked).
pub fn utf8_prefix_len(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    let mut end = max;
    // A continuation byte (10xxxxxx) at `end` means a character starts before it.
    while end > 0 && bytes[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    end
}

/// Reads an HTTP body, keeping at most `max` bytes. The flag says the body was longer:
/// reading stops at the first chunk past `max` (the rest is never read), so a server
/// that sends without end costs at most `max` bytes and one chunk.
pub async fn read_body_at_most(
    mut response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = max.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The largest prefix of `s` that fits in `max` bytes and ends on a char boundary.
pub fn prefix_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The largest suffix of `s` that fits in `max` bytes and starts on a char boundary.
pub fn suffix_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Binary: a NUL byte in the first 8 KiB, or not UTF-8.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|b| *b == 0) || std::str::from_utf8(bytes).is_err()
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The SHA-256 of `bytes`, as 64 lowercase hex digits: how saki names content it
/// keeps by content (undo's objects, sessions' images).
/// Seconds since the Unix epoch (0 on a clock before it).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(HEX_DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

/// Whether `s` is what [`sha256_hex`] writes: 64 lowercase hex digits and nothing else,
/// so that, read back from a file, it can name a file in a store and never a path.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| HEX_DIGITS.contains(&b))
}

/// Creates `dir` (and missing parents) readable by this user only, and makes an existing
/// `dir` so: for what saki writes about the person's work (sessions, logs).
pub fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Opens `path` for appending, creating it as 0600, and makes an existing file 0600.
pub fn open_private_append(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    // Only a regular file: `/dev/null` or a FIFO named here is not saki's to change.
    let meta = file.metadata()?;
    if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_is_lowercase_and_is_sha256_hex_takes_only_that() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_sha256_hex(&sha256_hex(b"abc")));
        let upper = sha256_hex(b"abc").to_ascii_uppercase();
        assert!(!is_sha256_hex(&upper));
        assert!(!is_sha256_hex(&sha256_hex(b"abc")[..63]));
        assert!(!is_sha256_hex(&format!("{}0", sha256_hex(b"abc"))));
        assert!(!is_sha256_hex(&format!("../{}", &sha256_hex(b"abc")[3..])));
        assert!(!is_sha256_hex(&"g".repeat(64)));
        // 64 bytes, but not 64 characters of ASCII.
        assert!(!is_sha256_hex(&"é".repeat(32)));
    }
}
