//! An edit that writes next to its match what is already there.
//!
//! An `edit` whose `new_string` is `old_string` with text added before or after it, at a
//! place where the file already has that text on those sides, writes the text twice:
//! `__pycache__` → `__pycache__/` on a line that reads `__pycache__/` leaves
//! `__pycache__//`, and an edit that already landed (`'Ann'` → `'Hello, Ann!'`), sent again
//! after the file changed, leaves `'Hello, Hello, Ann!'`. Models do both when they
//! believe the file lacks what it has; the loop guard does not see the second case, since
//! the file changed in between. Whitespace alone is not counted (a blank line added
//! after a line is an edit people ask for), and the edit may still be made on purpose
//! with an `old_string` that takes in the text beside it.

/// Whether the edit of the one place `old` stands in `content` into `new` would write
/// twice what it adds: `new` is `old` with text added before it, after it or both, the
/// added text is not only whitespace, and the file already has each added piece on its
/// side of the match.
pub fn doubles_text(content: &str, old: &str, new: &str) -> bool {
    if old.is_empty() {
        return false;
    }
    let (Some(at), Some(inner)) = (content.find(old), new.find(old)) else {
        return false;
    };
    let (before, after) = (&content[..at], &content[at + old.len()..]);
    let (head, tail) = (&new[..inner], &new[inner + old.len()..]);
    let added = !(head.trim().is_empty() && tail.trim().is_empty());
    added && before.ends_with(head) && after.starts_with(tail)
}

/// The refusal for an edit of `path` into `new` that would write text twice.
pub fn doubled_error(path: &str, new: &str) -> String {
    let shown: String = new.chars().take(80).collect();
    format!(
        "not changed: {path} already reads {shown:?} there, so this edit would write what it \
         adds twice. If that was the change, it is made. To add it again anyway, include the \
         text beside old_string in old_string."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_already_beside_the_match_is_doubled() {
        assert!(doubles_text(
            "__pycache__/\n",
            "__pycache__",
            "__pycache__/"
        ));
        assert!(doubles_text(
            "print(greet('Hello, Ann!'))\n",
            "Ann",
            "Hello, Ann!"
        ));
        assert!(doubles_text("class A:\n", "clas", "class"));
    }

    #[test]
    fn real_insertions_are_not() {
        // The text added is not there yet, or only part of it is.
        assert!(!doubles_text(
            "__pycache__\n",
            "__pycache__",
            "__pycache__/"
        ));
        assert!(!doubles_text("greet('Ann')\n", "Ann", "Hello, Ann"));
        assert!(!doubles_text("greet('Ann!')\n", "Ann", "Hello, Ann!"));
        // Whitespace: a blank line after a line.
        assert!(!doubles_text("a\nb\n", "a", "a\n"));
        assert!(!doubles_text("a\n  b\n", "b", "  b"));
        // A replacement, an append, a removal.
        assert!(!doubles_text("x = 1\n", "x = 1", "x = 2"));
        assert!(!doubles_text("x\n", "", "x"));
        assert!(!doubles_text("xy\n", "xy", "x"));
        // old_string not in the file: the edit fails otherwise.
        assert!(!doubles_text("abc\n", "zz", "zzc"));
    }

    #[test]
    fn the_refusal_says_what_and_how_to_do_it_anyway() {
        let e = doubled_error(".gitignore", "__pycache__/");
        assert!(
            e.contains(".gitignore already reads \"__pycache__/\" there"),
            "{e}"
        );
        assert!(
            e.contains("include the text beside old_string in old_string"),
            "{e}"
        );
    }
}
