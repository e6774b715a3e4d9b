//! Paths and `file://` URIs, and 1-based editor columns and LSP's UTF-16 positions.

use lsp_types::Uri;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The `file://` URI of an absolute path.
pub fn file_uri(path: &Path) -> Option<Uri> {
    let url = url::Url::from_file_path(path).ok()?;
    Uri::from_str(url.as_str()).ok()
}

/// The path a `file://` URI names.
pub fn uri_path(uri: &Uri) -> Option<PathBuf> {
    url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()
}

/// The UTF-16 offset LSP wants for the 1-based `column` (in characters) of `line_text`.
pub fn utf16_col(line_text: &str, column: u32) -> u32 {
    let chars = column.saturating_sub(1) as usize;
    line_text
        .chars()
        .take(chars)
        .map(|c| c.len_utf16() as u32)
        .sum()
}

/// The 1-based column (in characters) of the UTF-16 offset `character` in `line_text`.
pub fn char_col(line_text: &str, character: u32) -> u32 {
    let mut units = 0u32;
    let mut col = 1u32;
    for c in line_text.chars() {
        if units >= character {
            break;
        }
        units += c.len_utf16() as u32;
        col += 1;
    }
    col
}

/// Line `line` (0-based) of `text`, without its line end.
pub fn line_of(text: &str, line: u32) -> &str {
    text.lines().nth(line as usize).unwrap_or("")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths_round_trip_through_uris() {
        let path = Path::new("/tmp/a dir/ü.py");
        let uri = file_uri(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/%C3%BC.py");
        assert_eq!(uri_path(&uri).unwrap(), path);
        assert!(file_uri(Path::new("relative.py")).is_none());
    }

    #[test]
    fn columns_count_characters_and_positions_utf16_units() {
        let line = "é😀x = 1";
        // The 4th character, `x`, is 1 + 2 UTF-16 units in.
        assert_eq!(utf16_col(line, 3), 3);
        assert_eq!(char_col(line, 3), 3);
        assert_eq!(utf16_col(line, 1), 0);
        assert_eq!(char_col(line, 0), 1);
        // Past the end of the line: as far as it goes.
        assert_eq!(utf16_col("ab", 10), 2);
        assert_eq!(line_of("a\nb\n", 1), "b");
        assert_eq!(line_of("a", 5), "");
    }
}
