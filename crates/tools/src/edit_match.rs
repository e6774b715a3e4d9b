//! The edit tool's second chance: an `old_string` that is not in the file verbatim but
//! names one place in it word for word, written with other punctuation or spacing.
//!
//! Models of every size write `port=8080` for `"port": 8080`, drop a quote, or put one
//! space where the file has two. When the words of `old_string` (runs of letters, digits
//! and `_`) occur in the file as consecutive words at exactly one place, and `new_string`
//! has as many words, the edit changes the differing words at that place and leaves the
//! file's own punctuation and spacing alone. Between the words, only spacing, quotes
//! and a key-value sign (`=` for `:`) may differ; any other sign carries meaning. Anything less certain (no place, several
//! places, a different word count, a match spanning more lines than `old_string` does)
//! is no match, and the edit fails as before.

use std::ops::Range;

/// One loose match, applied: the new file text and what was changed, for the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LooseEdit {
    pub after: String,
    /// The text that matched, as it stood in the file.
    pub matched: String,
    /// Where it starts, in bytes.
    pub start: usize,
    /// 1-based line of the match.
    pub line: usize,
}

/// `old` → `new` applied to `content` by words, or `None` when that is not certain.
pub fn loose_edit(content: &str, old: &str, new: &str) -> Option<LooseEdit> {
    let old_words = words(old);
    let new_words = words(new);
    if old_words.is_empty() || old_words.len() != new_words.len() {
        return None;
    }
    let old_texts: Vec<&str> = old_words.iter().map(|r| &old[r.clone()]).collect();
    let new_texts: Vec<&str> = new_words.iter().map(|r| &new[r.clone()]).collect();
    if old_texts == new_texts {
        return None;
    }
    let old_newlines = old.matches('\n').count();
    let file_words = words(content);
    let mut found: Option<usize> = None;
    for start in 0..file_words.len() {
        let Some(window) = file_words.get(start..start + old_words.len()) else {
            break;
        };
        let same = window
            .iter()
            .zip(&old_texts)
            .all(|(r, w)| &content[r.clone()] == *w)
            && window.windows(2).zip(old_words.windows(2)).all(|(f, o)| {
                same_separator(&content[f[0].end..f[1].start], &old[o[0].end..o[1].start])
            });
        let span = window[0].start..window[window.len() - 1].end;
        if same && content[span].matches('\n').count() <= old_newlines {
            if found.is_some() {
                return None;
            }
            found = Some(start);
        }
    }
    let start = found?;
    let window = &file_words[start..start + old_words.len()];
    let mut after = String::with_capacity(content.len() + new.len());
    let mut at = 0;
    for (range, replacement) in window.iter().zip(&new_texts) {
        after.push_str(&content[at..range.start]);
        after.push_str(replacement);
        at = range.end;
    }
    after.push_str(&content[at..]);
    let span = window[0].start..window[window.len() - 1].end;
    Some(LooseEdit {
        line: content[..span.start].matches('\n').count() + 1,
        start: span.start,
        matched: content[span].to_owned(),
        after,
    })
}

/// Whether two runs of text between words differ only in spacing and quotes, or are
/// both a key-value sign (`port=8080` for `"port": 8080`). Other signs carry meaning:
/// `x = 1` must not match `x != 1`.
fn same_separator(file: &str, old: &str) -> bool {
    let bare = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '`'))
            .collect()
    };
    let (file, old) = (bare(file), bare(old));
    file == old || (matches!(file.as_str(), "=" | ":") && matches!(old.as_str(), "=" | ":"))
}

/// Byte ranges of the words of `text`: maximal runs of alphanumeric characters and `_`.
fn words(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let word = c.is_alphanumeric() || c == '_';
        match (word, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(s..text.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "{\n  \"name\": \"app\",\n  \"port\": 8080\n}\n";

    #[test]
    fn other_punctuation_and_spacing_still_name_the_place() {
        let edit = loose_edit(CONFIG, "port=8080", "port=9090").unwrap();
        assert_eq!(edit.after, "{\n  \"name\": \"app\",\n  \"port\": 9090\n}\n");
        assert_eq!(edit.matched, "port\": 8080");
        assert_eq!(edit.line, 3);
        let ini = "debug  =  false\nverbose = true\n";
        let edit = loose_edit(ini, "debug = false", "debug = true").unwrap();
        assert_eq!(edit.after, "debug  =  true\nverbose = true\n");
    }

    #[test]
    fn anything_uncertain_is_no_match() {
        // Two places.
        assert_eq!(loose_edit("a = 1\na = 1\n", "a=1", "a=2"), None);
        // A word count that differs.
        assert_eq!(loose_edit(CONFIG, "port=8080", "port = 90 90"), None);
        // Words that are not consecutive in the file.
        assert_eq!(loose_edit(CONFIG, "name 8080", "name 9090"), None);
        // No words, or nothing that changes a word.
        assert_eq!(loose_edit(CONFIG, "{", "["), None);
        assert_eq!(loose_edit(CONFIG, "port=8080", "port: 8080"), None);
        // A match across lines that old_string keeps on one.
        assert_eq!(loose_edit("port\n8080\n", "port 8080", "port 9090"), None);
        // Signs other than spacing, quotes and `=`/`:` must be the same.
        assert_eq!(loose_edit("if x != 1 {}\n", "x = 1", "x = 2"), None);
        assert_eq!(loose_edit("a - b\n", "a + b", "a + c"), None);
        // A word is whole: `port` does not match inside `ports` or `import`.
        assert_eq!(loose_edit("ports = 1\n", "port = 1", "port = 2"), None);
    }

    #[test]
    fn a_match_may_span_the_lines_old_string_spans() {
        let text = "fn a() {\n    1\n}\n";
        let edit = loose_edit(text, "fn a() {\n 1", "fn a() {\n 2").unwrap();
        assert_eq!(edit.after, "fn a() {\n    2\n}\n");
    }

    #[test]
    fn words_are_unicode_aware() {
        let edit = loose_edit("größe: 1\n", "größe=1", "größe=2").unwrap();
        assert_eq!(edit.after, "größe: 2\n");
    }

    proptest::proptest! {
        /// Whatever the text, a loose edit never panics, and when it applies, the file
        /// before and after the place it names is kept byte for byte.
        #[test]
        fn hostile_text_never_breaks_it(
            content in "[a-c0-9 =:!\"\n\u{e9}]{0,60}",
            old in "[a-c0-9 =:!\"\u{e9}]{0,12}",
            new in "[a-c0-9 =:!\"\u{e9}]{0,12}",
        ) {
            if let Some(edit) = loose_edit(&content, &old, &new) {
                let at = edit.start;
                proptest::prop_assert_eq!(&content[at..at + edit.matched.len()], &edit.matched);
                proptest::prop_assert!(edit.after.starts_with(&content[..at]));
                let tail = &content[at + edit.matched.len()..];
                proptest::prop_assert!(edit.after.ends_with(tail));
            }
        }
    }
}
