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

/// `old` with the line break after it, when an edit takes out whole lines: `new` is empty
/// and every place `old` stands in `content` is one or more whole lines. Asked to remove a
/// line, models send the line without its break, which would leave a blank line behind.
pub fn whole_line_removal(content: &str, old: &str, new: &str) -> Option<String> {
    if !new.is_empty() || old.is_empty() || old.ends_with('\n') {
        return None;
    }
    let with_break = format!("{old}\n");
    let mut places = content.match_indices(old).peekable();
    places.peek()?;
    places
        .all(|(at, _)| {
            (at == 0 || content[..at].ends_with('\n')) && content[at..].starts_with(&with_break)
        })
        .then_some(with_break)
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

/// `old` → `new` applied to `content` where `old` occurs with other spacing: every sign
/// of `old` in the file in order, whitespace between them free (a model writes
/// `def add(a, b): return a - b` for a definition on two lines). Only spacing may
/// differ, so unlike [`loose_edit`] the match may span lines, and `new` may change
/// any sign. When `new` has as many whitespace-separated pieces as `old`, the file's
/// own spacing between them is kept (its line breaks and indentation); otherwise
/// `new` is re-indented as the file's lines are (`reindented`). `None` unless exactly
/// one place matches.
pub fn spaced_edit(content: &str, old: &str, new: &str) -> Option<LooseEdit> {
    let pieces: Vec<&str> = old.split_whitespace().collect();
    if pieces.len() < 2 {
        return None;
    }
    let last = pieces[pieces.len() - 1];
    let mut found: Option<(Range<usize>, Vec<Range<usize>>)> = None;
    for (start, _) in content.match_indices(pieces[0]) {
        if !word_boundary_before(content, start, pieces[0]) {
            continue;
        }
        let Some(gaps) = spaced_match_at(content, start, &pieces) else {
            continue;
        };
        let end = gaps.last().map_or(start, |g| g.end) + last.len();
        if !word_boundary_after(content, end, last) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some((start..end, gaps));
    }
    let (Range { start, end }, gaps) = found?;
    let new_pieces: Vec<&str> = new.split_whitespace().collect();
    let replacement = if new_pieces.len() == pieces.len() {
        let mut text = String::new();
        for (i, piece) in new_pieces.iter().enumerate() {
            if let Some(gap) = i.checked_sub(1).and_then(|g| gaps.get(g)) {
                let file_gap = &content[gap.clone()];
                // An empty gap between two word characters would merge two words.
                if file_gap.is_empty() && ends_in_word(&text) && starts_with_word(piece) {
                    text.push(' ');
                } else {
                    text.push_str(file_gap);
                }
            }
            text.push_str(piece);
        }
        text
    } else {
        reindented(&content[start..end], old.trim(), new.trim())?
    };
    let mut after = String::with_capacity(content.len() + replacement.len());
    after.push_str(&content[..start]);
    after.push_str(&replacement);
    after.push_str(&content[end..]);
    Some(LooseEdit {
        line: content[..start].matches('\n').count() + 1,
        start,
        matched: content[start..end].to_owned(),
        after,
    })
}

/// `new` for a place in the file (`matched`) that `old` names with other spacing, when
/// they differ in pieces: one line for one, `new` as written; over several, `new`'s lines
/// after the first shifted by the indentation the file's lines have more (or less) than
/// `old`'s, which must be the same shift on every line. `None` when that is not certain
/// (a different line count, a shift that varies, or one `new`'s lines cannot take).
fn reindented(matched: &str, old: &str, new: &str) -> Option<String> {
    let file_lines: Vec<&str> = matched.lines().collect();
    let old_lines: Vec<&str> = old.lines().collect();
    if old_lines.len() == 1 && !new.contains('\n') {
        return Some(new.to_owned());
    }
    if file_lines.len() != old_lines.len() {
        return None;
    }
    let mut shift: Option<Shift> = None;
    for (file, old) in file_lines.iter().zip(&old_lines).skip(1) {
        if old.trim().is_empty() {
            continue;
        }
        let (f, o) = (indent(file), indent(old));
        let this = match (f.strip_prefix(o), o.strip_prefix(f)) {
            (Some(more), _) => Shift::Add(more.to_owned()),
            (None, Some(less)) => Shift::Remove(less.to_owned()),
            (None, None) => return None,
        };
        match &shift {
            Some(seen) if *seen != this => return None,
            _ => shift = Some(this),
        }
    }
    let mut out = String::with_capacity(new.len());
    for (i, line) in new.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = match &shift {
            _ if i == 0 || line.trim().is_empty() => line,
            Some(Shift::Add(more)) => {
                out.push_str(more);
                line
            }
            Some(Shift::Remove(less)) => line.strip_prefix(less.as_str())?,
            None => line,
        };
        out.push_str(line);
    }
    Some(out)
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// How much more, or less, the file's lines are indented than `old_string`'s.
#[derive(Debug, PartialEq, Eq)]
enum Shift {
    Add(String),
    Remove(String),
}

/// The whitespace gaps between `pieces` when they occur in `content` from `start` on,
/// or `None`. A gap may be empty only where no two word characters would meet.
fn spaced_match_at(content: &str, start: usize, pieces: &[&str]) -> Option<Vec<Range<usize>>> {
    let mut at = start + pieces[0].len();
    let mut gaps = Vec::with_capacity(pieces.len() - 1);
    for pair in pieces.windows(2) {
        let rest = &content[at..];
        let gap_len = rest.len() - rest.trim_start().len();
        if gap_len == 0 && ends_in_word(pair[0]) && starts_with_word(pair[1]) {
            return None;
        }
        let next = at + gap_len;
        if !content[next..].starts_with(pair[1]) {
            return None;
        }
        gaps.push(at..next);
        at = next + pair[1].len();
    }
    Some(gaps)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ends_in_word(text: &str) -> bool {
    text.chars().next_back().is_some_and(is_word_char)
}

fn starts_with_word(text: &str) -> bool {
    text.chars().next().is_some_and(is_word_char)
}

/// Whether a match of `piece` at `at` starts a word where `piece` does (`add` must not
/// match inside `readd`).
fn word_boundary_before(content: &str, at: usize, piece: &str) -> bool {
    !(starts_with_word(piece) && ends_in_word(&content[..at]))
}

/// Whether a match ending at `at` with `piece` ends a word where `piece` does.
fn word_boundary_after(content: &str, at: usize, piece: &str) -> bool {
    !(ends_in_word(piece) && starts_with_word(&content[at..]))
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
        let word = is_word_char(c);
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
    fn a_whole_line_taken_out_takes_its_line_break_with_it() {
        let settings = "NAME = 'shop'\nDEBUG = True\nPORT = 8000\n";
        let removal = |old: &str, new: &str| whole_line_removal(settings, old, new);
        assert_eq!(
            removal("DEBUG = True", "").as_deref(),
            Some("DEBUG = True\n")
        );
        assert_eq!(
            removal("NAME = 'shop'\nDEBUG = True", "").as_deref(),
            Some("NAME = 'shop'\nDEBUG = True\n")
        );
        // Part of a line, a replacement, a break already sent, or nothing found: as sent.
        assert_eq!(removal("True", ""), None);
        assert_eq!(removal("DEBUG", ""), None);
        assert_eq!(removal("DEBUG = True", "DEBUG = False"), None);
        assert_eq!(removal("DEBUG = True\n", ""), None);
        assert_eq!(removal("VERBOSE = 1", ""), None);
        // One place that is not a whole line keeps every place as sent.
        assert_eq!(whole_line_removal("x = 1\ny = x = 1\n", "x = 1", ""), None);
        // The last line has no break to take.
        assert_eq!(whole_line_removal("a\nb", "b", ""), None);
    }

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

    const CALC: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";

    #[test]
    fn other_spacing_finds_the_place_and_keeps_the_file_layout() {
        let edit = spaced_edit(
            CALC,
            "def add(a, b): return a - b",
            "def add(a, b): return a + b",
        )
        .unwrap();
        assert_eq!(
            edit.after,
            "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
        );
        assert_eq!(edit.matched, "def add(a, b):\n    return a - b");
        assert_eq!(edit.line, 1);
        // Spacing inside a line, and none where the model put some.
        let edit = spaced_edit("x=a+b\n", "x = a + b", "x = a * b").unwrap();
        assert_eq!(edit.after, "x=a*b\n");
    }

    #[test]
    fn new_text_with_other_pieces_goes_in_as_written() {
        let edit = spaced_edit(
            CALC,
            "def add(a, b): return a - b",
            "def add(a, b): return b + a  # sum",
        )
        .unwrap();
        assert!(edit
            .after
            .starts_with("def add(a, b): return b + a  # sum\n\n\ndef sub"));
    }

    #[test]
    fn new_lines_take_the_files_indentation() {
        let file = "def f(x):\n    if x:\n        y = 1\n    return x\n";
        // The model wrote the block four spaces in, and added a line.
        let edit = spaced_edit(file, "if x:\n    y = 1", "if x:\n    y = 2\n    z = 3").unwrap();
        assert_eq!(
            edit.after,
            "def f(x):\n    if x:\n        y = 2\n        z = 3\n    return x\n"
        );
        // Or further in than the file has it.
        let edit = spaced_edit(
            file,
            "    if x:\n            y = 1",
            "if x:\n            y = 2\n            z = 3",
        )
        .unwrap();
        assert!(
            edit.after
                .contains("    if x:\n        y = 2\n        z = 3\n"),
            "{}",
            edit.after
        );
        // A shift that differs from line to line, or a line count that differs, is no match.
        let uneven = "a:\n  b\n      c\n";
        assert_eq!(spaced_edit(uneven, "a:\n b\n c", "a:\n b\n c\n d"), None);
        assert_eq!(
            spaced_edit(
                CALC,
                "def add(a, b): return a - b",
                "def add(a, b):\n    return a + b  # sum"
            ),
            None
        );
    }

    #[test]
    fn anything_uncertain_is_no_spaced_match() {
        // Two places: `return a - b` is in both functions.
        assert_eq!(spaced_edit(CALC, "return  a - b", "return a + b"), None);
        // One piece alone is a verbatim search, which already failed.
        assert_eq!(spaced_edit(CALC, "nothing", "x"), None);
        // Words do not merge or split: `returna` is not `return a`.
        assert_eq!(
            spaced_edit("returna - b\n", "return a - b", "x y z w"),
            None
        );
        // A match starts and ends on the word boundaries old_string has.
        assert_eq!(
            spaced_edit("readd(a, b)\n", "add( a, b)", "add(b, a)"),
            None
        );
        assert_eq!(spaced_edit("f(a, bc)\n", "f(a, b", "f(a, c"), None);
        // Any other sign is a mismatch.
        assert_eq!(spaced_edit("a = 1\n", "a == 1", "a == 2"), None);
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
            for edit in [loose_edit(&content, &old, &new), spaced_edit(&content, &old, &new)].into_iter().flatten() {
                let at = edit.start;
                proptest::prop_assert_eq!(&content[at..at + edit.matched.len()], &edit.matched);
                proptest::prop_assert!(edit.after.starts_with(&content[..at]));
                let tail = &content[at + edit.matched.len()..];
                proptest::prop_assert!(edit.after.ends_with(tail));
            }
        }
    }
}
