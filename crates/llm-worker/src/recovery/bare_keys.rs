//! Keys a model wrote without their quotes, quoted.
//!
//! Small models write a call's later keys as JavaScript does: Qwen2.5-Coder-0.5B ended a
//! turn on `{"name":"edit","arguments":{"path":"greet.py","old_string":"Hello, ",new_string:"Hello, world"}}`,
//! which is not JSON, so the call never ran. A name where a key is due (after `{` or `,`,
//! outside any string) and followed by `:` is quoted; nothing else changes, so a value
//! the model wrote is never altered.

/// `text` with its unquoted keys quoted, or `None` when it has none.
pub(super) fn quote_bare_keys(text: &str) -> Option<String> {
    quoted_with_keys(text).map(|(quoted, _)| quoted)
}

/// The byte offset in the original text of `offset` in its quoted form, given the
/// original offsets of the keys [`quoted_with_keys`] quoted.
pub(super) fn offset_before_quoting(keys: &[usize], offset: usize) -> usize {
    // Each key quoted before `offset` moved what follows it two bytes on.
    let moved = keys
        .iter()
        .enumerate()
        .filter(|(k, start)| **start + 2 * k < offset)
        .count();
    offset - 2 * moved
}

/// The quoted text and the byte offsets in `text` of the keys quoted.
pub(super) fn quoted_with_keys(text: &str) -> Option<(String, Vec<usize>)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut keys = Vec::new();
    let mut out = String::with_capacity(text.len() + 8);
    let (mut in_string, mut escaped, mut key_due) = (false, false, false);
    // The brackets open around this point: a comma starts a key only inside an object.
    let mut open = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            out.push(c);
            i += 1;
            continue;
        }
        if key_due && (c.is_ascii_alphabetic() || c == '_') {
            let end = (i..chars.len())
                .find(|&j| !(chars[j].1.is_ascii_alphanumeric() || chars[j].1 == '_'))
                .unwrap_or(chars.len());
            let colon = (end..chars.len()).find(|&j| !chars[j].1.is_whitespace());
            let word = chars[i..end].iter().map(|(_, c)| c);
            // At the end of the text, the colon may be still to come (a streamed answer).
            if colon.is_none_or(|j| chars[j].1 == ':') {
                keys.push(chars[i].0);
                out.push('"');
                out.extend(word);
                out.push('"');
            } else {
                out.extend(word);
            }
            key_due = false;
            i = end;
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => open.push(c),
            '}' | ']' => {
                open.pop();
            }
            _ => {}
        }
        match c {
            '{' => key_due = true,
            ',' => key_due = open.last() == Some(&'{'),
            c if c.is_whitespace() => {}
            _ => key_due = false,
        }
        if c == '"' {
            key_due = false;
        }
        out.push(c);
        i += 1;
    }
    (!keys.is_empty()).then_some((out, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_without_quotes_are_quoted_and_nothing_else_changes() {
        assert_eq!(
            quote_bare_keys(r#"{"path":"a.py","old_string":"x, y: z",new_string:"w"}"#).as_deref(),
            Some(r#"{"path":"a.py","old_string":"x, y: z","new_string":"w"}"#)
        );
        assert_eq!(
            quote_bare_keys("{name: \"ls\", arguments: {path : \".\"}}").as_deref(),
            Some("{\"name\": \"ls\", \"arguments\": {\"path\" : \".\"}}")
        );
        // Words that are values, or inside strings, stay as they are.
        assert_eq!(
            quote_bare_keys(r#"{"a": [1, true, null], "b": "{c: 1}"}"#),
            None
        );
        assert_eq!(quote_bare_keys(r#"{"a": "say \"x\", k: v"}"#), None);
        assert_eq!(quote_bare_keys("plain words, no: json"), None);
    }

    #[test]
    fn an_offset_in_the_quoted_text_maps_back() {
        let text = r#"{a:1,"b":2,c:3} tail"#;
        let (quoted, keys) = quoted_with_keys(text).unwrap();
        let end = quoted.find('}').unwrap() + 1;
        assert_eq!(
            &text[..offset_before_quoting(&keys, end)],
            r#"{a:1,"b":2,c:3}"#
        );
        assert_eq!(offset_before_quoting(&[], 7), 7);
    }
}
