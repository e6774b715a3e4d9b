//! Untrusted text made safe to print on a terminal.
//!
//! Model output, tool output, file contents and names, provider error messages and a
//! repository's config all reach the terminal. Raw, an escape sequence in them can write
//! the clipboard (OSC 52), clear the screen, move the cursor to overwrite what the person
//! reads, or retitle the window; bidi overrides can make text read differently from what
//! it is. [`sanitize`] maps every such character to a visible stand-in, one character at a
//! time, so it needs no state: an escape sequence split across two streamed pieces is
//! neutralised all the same.
//!
//! Kept: `\n`, `\t` and all printable text (any script, emoji). Changed: C0 controls and
//! DEL become their Unicode control pictures (ESC shows as `␛`), C1 controls (U+0080 to
//! U+009F, where U+009B is a one-byte CSI) and the bidi embedding, override and isolate
//! characters (U+202A to U+202E, U+2066 to U+2069) become `�`. `\r` is dropped, so `\r\n`
//! is a newline and a lone `\r` cannot return to the start of a line to overwrite it.
//! Colours saki adds itself are added after this, around sanitised text.

use std::borrow::Cow;

fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn stand_in(c: char) -> Option<char> {
    match c {
        '\r' => None,
        '\u{7f}' => Some('\u{2421}'),
        c if (c as u32) < 0x20 => char::from_u32(0x2400 + c as u32),
        _ => Some('\u{FFFD}'),
    }
}

/// `text` with terminal control characters made visible (see the module docs).
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .filter_map(|c| if is_unsafe(c) { stand_in(c) } else { Some(c) })
            .collect(),
    )
}

/// [`sanitize`] into an owned string, in place.
pub fn sanitize_in_place(text: &mut String) {
    if let Cow::Owned(clean) = sanitize(text) {
        *text = clean;
    }
}

/// Every string in a JSON value (keys too), sanitised in place.
pub fn sanitize_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => sanitize_in_place(s),
        Value::Array(items) => items.iter_mut().for_each(sanitize_json),
        Value::Object(map) => {
            let entries: Vec<(String, Value)> = std::mem::take(map)
                .into_iter()
                .map(|(mut k, mut v)| {
                    sanitize_in_place(&mut k);
                    sanitize_json(&mut v);
                    (k, v)
                })
                .collect();
            map.extend(entries);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_neutralised() {
        let osc52 = "copy\x1b]52;c;cm0gLXJmIH4=\x07done";
        let clean = sanitize(osc52);
        assert!(!clean.contains('\x1b') && !clean.contains('\x07'));
        assert_eq!(clean, "copy\u{241B}]52;c;cm0gLXJmIH4=\u{2407}done");
        assert_eq!(sanitize("\x1b[2J\x1b[H"), "\u{241B}[2J\u{241B}[H");
        assert_eq!(sanitize("a\u{9b}31mb"), "a\u{FFFD}31mb", "C1 CSI");
        assert_eq!(sanitize("x\u{7f}"), "x\u{2421}");
    }

    #[test]
    fn a_sequence_split_between_pieces_stays_neutralised() {
        let pieces = ["hello \x1b", "[2J world"];
        let joined: String = pieces.iter().map(|p| sanitize(p).into_owned()).collect();
        assert_eq!(joined, sanitize("hello \x1b[2J world"));
        assert!(!joined.contains('\x1b'));
    }

    #[test]
    fn text_newlines_tabs_and_any_script_are_kept() {
        for text in [
            "plain",
            "tab\there\nnew line",
            "日本語 テキスト",
            "emoji 🦀👍🏽",
            "",
        ] {
            assert!(matches!(sanitize(text), Cow::Borrowed(_)), "{text}");
        }
        assert_eq!(sanitize("a\r\nb"), "a\nb");
        assert_eq!(
            sanitize("progress 10%\rprogress 90%"),
            "progress 10%progress 90%"
        );
    }

    #[test]
    fn bidi_overrides_are_made_visible() {
        assert_eq!(sanitize("abc\u{202E}fed"), "abc\u{FFFD}fed");
        assert_eq!(sanitize("\u{2066}x\u{2069}"), "\u{FFFD}x\u{FFFD}");
    }

    #[test]
    fn json_strings_and_keys() {
        let mut v = serde_json::json!({"cmd\x1b": ["echo \x1b[31m"], "n": 1});
        sanitize_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"cmd\u{241B}": ["echo \u{241B}[31m"], "n": 1})
        );
    }
}
