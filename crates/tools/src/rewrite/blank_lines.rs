//! The blank lines of a file, kept through a change that is not about them.
//!
//! Asked to change a URL in `client.py`, Qwen2.5-Coder-0.5B wrote the file back with
//! one blank line where there were two before a function, in its whole new text and in
//! its own edits alike: a change the person did not ask for, and one a review shows
//! among the one they did. So where a request says nothing of spacing or format, a part
//! of the change that only takes blank lines out or puts them in is undone, and a part
//! that changes lines keeps the old blank lines around the new ones when it changes
//! as many lines as were there.

use similar::DiffTag;

/// Words that make blank lines part of what a request asks about.
const SPACING: &[&str] = &[
    "blank",
    "empty",
    "spacing",
    "space",
    "spaces",
    "whitespace",
    "format",
    "formatting",
    "reformat",
    "pep8",
    "pep",
    "lint",
    "style",
    "indent",
    "indentation",
    "newline",
    "newlines",
    "tidy",
    "prettier",
    "black",
];

/// Whether `prompt` asks about blank lines or the file's layout.
pub(super) fn asks_about_spacing(prompt: &str) -> bool {
    crate::intent::lower_words(prompt)
        .iter()
        .any(|w| SPACING.contains(&w.as_str()))
}

fn blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// A text's lines that are not blank, each with the blank lines right before it, and
/// the blank lines it ends with.
struct Layout<'a> {
    lines: Vec<&'a str>,
    blanks_before: Vec<Vec<&'a str>>,
    trailing: Vec<&'a str>,
}

fn layout(text: &str) -> Layout<'_> {
    let mut out = Layout {
        lines: Vec::new(),
        blanks_before: Vec::new(),
        trailing: Vec::new(),
    };
    for line in text.split_inclusive('\n') {
        if blank(line) {
            out.trailing.push(line);
        } else {
            out.lines.push(line);
            out.blanks_before.push(std::mem::take(&mut out.trailing));
        }
    }
    out
}

/// `new` with the blank lines of `old` kept (see the module's documentation): the lines
/// that are not blank are compared, and each one both texts hold, or that replaces one
/// of as many, right after a line that is kept the same way, gets the blank lines it
/// had before it in `old`; any other line keeps those `new` gives it (the line before
/// it in `old` is gone, or it is new). Nothing when that is `new` as it is.
pub(super) fn kept_blank_lines(old: &str, new: &str) -> Option<String> {
    let (before, after) = (layout(old), layout(new));
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &before.lines,
        &after.lines,
        Some(std::time::Instant::now() + std::time::Duration::from_millis(200)),
    );
    let mut out = String::with_capacity(new.len());
    // The last line written, as (its line in `old`, in `new`) when it was kept.
    let mut last_kept: Option<(usize, usize)> = None;
    let mut wrote_any = false;
    for op in ops {
        let (from, to) = (op.old_range(), op.new_range());
        let positional =
            matches!(op.tag(), DiffTag::Equal | DiffTag::Replace) && from.len() == to.len();
        for (n, at) in to.enumerate() {
            let was = from.start + n;
            let follows_kept = match last_kept {
                Some((old_at, new_at)) => old_at + 1 == was && new_at + 1 == at,
                None => was == 0 && at == 0 && !wrote_any,
            };
            let blanks = match positional && follows_kept {
                true => &before.blanks_before[was],
                false => &after.blanks_before[at],
            };
            blanks.iter().for_each(|line| out.push_str(line));
            out.push_str(after.lines[at]);
            last_kept = positional.then_some((was, at));
            wrote_any = true;
        }
    }
    let ends_as_before = match last_kept {
        Some((old_at, new_at)) => {
            old_at + 1 == before.lines.len() && new_at + 1 == after.lines.len()
        }
        None => before.lines.is_empty() && after.lines.is_empty(),
    };
    let trailing = match ends_as_before {
        true => &before.trailing,
        false => &after.trailing,
    };
    trailing.iter().for_each(|line| out.push_str(line));
    (out != new).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_dropped_or_added_beside_a_change_come_back_as_they_were() {
        let old = "import x\n\nBASE = 'a'\n\n\ndef get():\n    return BASE\n";
        let new = "import x\n\nBASE = 'b'\n\ndef get():\n    return BASE\n";
        assert_eq!(
            kept_blank_lines(old, new).as_deref(),
            Some("import x\n\nBASE = 'b'\n\n\ndef get():\n    return BASE\n")
        );
        let added = "import x\n\n\nBASE = 'b'\n\n\ndef get():\n\n    return BASE\n";
        assert_eq!(
            kept_blank_lines(old, added).as_deref(),
            Some("import x\n\nBASE = 'b'\n\n\ndef get():\n    return BASE\n")
        );
        // Blank lines swapped within a changed part keep the old layout.
        assert_eq!(
            kept_blank_lines("a = 1\n\nb = 2\n", "a = 3\nb = 4\n").as_deref(),
            Some("a = 3\n\nb = 4\n")
        );
    }

    #[test]
    fn a_change_with_its_own_blank_lines_stands() {
        let old = "a = 1\n\n\ndef f():\n    pass\n";
        let with_function = "a = 1\n\n\ndef g():\n    pass\n\n\ndef f():\n    pass\n";
        assert_eq!(kept_blank_lines(old, with_function), None);
        let without_function = "a = 1\n";
        assert_eq!(kept_blank_lines(old, without_function), None);
        // The blank lines before a line whose line before is gone went with it.
        let first_gone = "def f():\n    pass\n\n\na = 1\n";
        assert_eq!(kept_blank_lines(first_gone, "a = 1\n"), None);
        assert_eq!(kept_blank_lines("a = 1\n\n\n", "a = 1\n\nb = 2\n"), None);
        assert_eq!(kept_blank_lines(old, old), None);
        assert!(asks_about_spacing("Remove the blank lines in a.py."));
        assert!(!asks_about_spacing("Change the URL in client.py."));
    }

    proptest::proptest! {
        #[test]
        fn any_texts_are_compared_without_a_panic(
            old in "(a\n|\n|b = 1\n| \n|\\PC){0,12}",
            new in "(a\n|\n|b = 2\n| \n|\\PC){0,12}",
        ) {
            let _ = kept_blank_lines(&old, &new);
        }
    }
}
