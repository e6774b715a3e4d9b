//! Tool-result text written back into a file.
//!
//! A small model asked to change a file sometimes writes what a tool told it rather than
//! the file's text: `read_file`'s `[2 lines in all]` after the lines it read, or a whole
//! file replaced by `overwrote TODO.md (28 bytes)`. Written, that destroys the file. These
//! notes are saki's own and never part of a file, so a write that would add one is
//! refused with an error the model can act on.
//!
//! A line counts only when it is the whole line (a test that quotes a note inside a
//! string literal is left alone) and when the file does not already hold it (a file that
//! documents the notes can still be edited).

use regex::Regex;
use saki_llm_worker::interceptor::{Interceptor, TurnEndAction};
use saki_llm_worker::{Item, ToolResultStatus};
use std::sync::LazyLock;

/// Lines saki adds to tool results (see `files::render_lines`, `capped`, the loop guard
/// and the argument check in `saki_llm_worker`).
static NOTE_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:\[(?:\d+ lines in all\]",
        r"|\.\.\.truncated: ",
        r"|end of file: ",
        r"|offset \d+ is past the end of this ",
        r"|this call is identical to an earlier one",
        r"|old_string was not in the file verbatim",
        r"|ignored unknown argument",
        // The lines that follow a small model's prompt (`mentions`).
        r"|Lines of the workspace with the request's words)",
        // This module's own refusal, which a model writes back as readily as the rest.
        r"|refused to write \S.*: the text holds `",
        // How a loop-stopped turn's answer request quotes each call (`answer.rs`).
        r"|[A-Za-z_][\w.-]* \{.*\} (?:returned|failed):$)",
    ))
    .ok()
});

/// What a write or an edit says when it is done: a file whose whole text is one of these
/// is an echo of a result.
/// Matched in any case, after a comment marker is taken off, and with the verbs a model
/// rewords them into: `# Overwrote calc.py (63 bytes)` was written into calc.py by a 0.5B
/// model asked what the file does.
static RESULT_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)^(?:(?:created|overwrote|overwritten|wrote|written|deleted|saved|updated",
        r"|edited|modified|changed) \S.* \(\d+ bytes?\)",
        r"|appended a line to \S.*",
        r"|\d+ replacements? in \S.*)\.?$",
    ))
    .ok()
});

/// `line` without a comment marker around it (`#`, `//`, `--`, `;`, `/* */`, `<!-- -->`).
fn uncommented(line: &str) -> &str {
    let mut text = line.trim();
    for open in ["<!--", "/*", "//", "--", "#", ";", "*"] {
        if let Some(rest) = text.strip_prefix(open) {
            text = rest.trim_start();
            break;
        }
    }
    for close in ["-->", "*/"] {
        if let Some(rest) = text.strip_suffix(close) {
            text = rest.trim_end();
            break;
        }
    }
    text
}

/// The first line of `new_text` that is a tool-result note and not already in `before`.
pub fn echoed_note<'a>(new_text: &'a str, before: &str) -> Option<&'a str> {
    let whole = new_text.trim();
    // A whole line of the file, not any substring: a refusal written back quotes the note.
    if RESULT_LINE
        .as_ref()
        .is_some_and(|r| r.is_match(uncommented(whole)))
        && !before.lines().any(|b| b.trim() == whole)
    {
        return Some(whole);
    }
    new_text
        .lines()
        .map(str::trim)
        .find(|line| is_added_note(line, before))
}

/// Whether `line` (trimmed) is a tool-result note that `before` does not already hold.
fn is_added_note(line: &str, before: &str) -> bool {
    NOTE_LINE.as_ref().is_some_and(|note| note.is_match(line))
        && !before.lines().any(|b| b.trim() == line)
}

/// `text` without the lines that are tool-result notes not already in `before`: what a
/// model quoted from a result around the file text it meant.
pub fn without_notes(text: &str, before: &str) -> String {
    text.lines()
        .filter(|line| !is_added_note(line.trim(), before))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The error for a write that would put `note` into `path`.
pub fn echo_error(path: &str, note: &str) -> String {
    format!(
        "refused to write {path}: the text holds `{note}`, which is a note from a tool \
         result, not part of any file. Write only the file's own text."
    )
}

/// Whether every line of `answer` is a note saki adds to tool results (and it has one).
pub fn only_notes(answer: &str) -> bool {
    let mut lines = answer.lines().map(str::trim).filter(|l| !l.is_empty());
    lines.clone().next().is_some() && lines.all(|line| is_added_note(line, ""))
}

/// The shortest answer judged a copy of a refusal: shorter ones ("Done.") may well
/// occur inside one by chance.
const MIN_COPIED_CHARS: usize = 20;

/// Whether `answer` is, word for word, part of what a call of `turn` that did not
/// succeed was told: a refusal or an error is saki's or a tool's text, never an answer.
/// Asked to "run the tests", a 0.5B model whose edit was refused answered with the
/// refusal itself (`denied: edit changes files, and the request asks for no change. …`).
fn repeats_a_failure(answer: &str, turn: &[Item]) -> bool {
    let answer = answer.trim();
    answer.chars().count() >= MIN_COPIED_CHARS
        && turn.iter().any(|item| match item {
            Item::ToolResult {
                status, content, ..
            } => *status != ToolResultStatus::Success && content.contains(answer),
            _ => false,
        })
}

/// An answer that is only a note copied from a tool result, or a copy of what a refused
/// or failed call was told, asked for again where small models run. After reading a
/// file, a 0.5B model asked for the total of a column answered `[4 lines in all]`: the
/// last line it had read. That is never an answer; the turn is asked for one the way a
/// stopped turn is, with the request and the tool results in one message.
#[derive(Debug, Default)]
pub struct NoteAnswer;

#[async_trait::async_trait]
impl Interceptor for NoteAnswer {
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let Some(Item::AssistantText { text }) = history.last() else {
            return TurnEndAction::Finish;
        };
        if only_notes(text) {
            return TurnEndAction::AskAgain(
                "the answer was only a note from a tool result, not an answer".to_owned(),
            );
        }
        let turn = crate::intent::current_turn(history).map_or(&[][..], |(_, turn)| turn);
        if repeats_a_failure(text, turn) {
            return TurnEndAction::AskAgain(
                "the answer repeated what a refused or failed call was told, not an answer"
                    .to_owned(),
            );
        }
        TurnEndAction::Finish
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_results_written_back_are_found() {
        let read = "write tests\n[2 lines in all]";
        assert_eq!(echoed_note(read, "# TODO\n"), Some("[2 lines in all]"));
        assert_eq!(
            echoed_note("overwrote TODO.md (28 bytes)", "x"),
            Some("overwrote TODO.md (28 bytes)")
        );
        assert_eq!(
            echoed_note("appended a line to TODO.md\n", ""),
            Some("appended a line to TODO.md")
        );
        let paged = "x = 1\n[...truncated: showing lines 2-2 of 3; use offset=3 to read more]";
        assert!(echoed_note(paged, "").is_some());
        assert!(echoed_note("}\n[end of file: line 3 is the last]", "").is_some());
        // How a loop-stopped turn's answer request quotes a call.
        let quoted = "read_file {\"path\":\"requirements.txt\"} returned:\nflask\n";
        assert!(echoed_note(quoted, "").is_some());
    }

    #[test]
    fn an_answer_of_notes_alone_is_none() {
        assert!(only_notes("[4 lines in all]"));
        assert!(only_notes(
            "\n[4 lines in all]\n\n[end of file: line 4 is the last]\n"
        ));
        assert!(only_notes("read_file {\"path\":\"a\"} returned:"));
        assert!(!only_notes("The total is 40.\n[4 lines in all]"));
        assert!(!only_notes("Created hello.txt (11 bytes)"));
        assert!(!only_notes(""));
        assert!(!only_notes("  \n"));
    }

    #[tokio::test]
    async fn the_turn_is_asked_again_only_for_such_an_answer() {
        let answer = |text: &str| {
            vec![
                Item::user("What is the total?"),
                Item::AssistantText { text: text.into() },
            ]
        };
        let judged = NoteAnswer.on_turn_end(&answer("[4 lines in all]")).await;
        assert!(matches!(judged, TurnEndAction::AskAgain(_)), "{judged:?}");
        let judged = NoteAnswer.on_turn_end(&answer("40")).await;
        assert_eq!(judged, TurnEndAction::Finish);
        let judged = NoteAnswer.on_turn_end(&[Item::user("x")]).await;
        assert_eq!(judged, TurnEndAction::Finish);
    }

    #[tokio::test]
    async fn an_answer_that_copies_a_refusal_is_asked_for_again() {
        let refusal = "denied: edit changes files, and the request asks for no change. \
                       Leave the files as they are and answer in text from what you have read.";
        let turn = |status: ToolResultStatus, answer: &str| {
            let ctx = saki_llm_worker::ToolExecutionContext {
                call_id: "c".into(),
                batch_id: "b".into(),
                call_index: 0,
            };
            vec![
                Item::user("run the tests"),
                Item::ToolResult {
                    name: "edit".into(),
                    content: format!("[this call is identical to an earlier one]\n{refusal}"),
                    status,
                    ctx,
                },
                Item::AssistantText {
                    text: answer.into(),
                },
            ]
        };
        let judged = NoteAnswer
            .on_turn_end(&turn(ToolResultStatus::Denied, &format!(" {refusal}\n")))
            .await;
        assert!(matches!(judged, TurnEndAction::AskAgain(_)), "{judged:?}");
        // What a successful call returned may be the answer (a line of the file read).
        let judged = NoteAnswer
            .on_turn_end(&turn(ToolResultStatus::Success, refusal))
            .await;
        assert_eq!(judged, TurnEndAction::Finish);
        // A short answer may occur in a refusal by chance; another answer is an answer.
        for answer in ["denied", "The tests could not be run here."] {
            let judged = NoteAnswer
                .on_turn_end(&turn(ToolResultStatus::Denied, answer))
                .await;
            assert_eq!(judged, TurnEndAction::Finish, "{answer}");
        }
    }

    #[test]
    fn notes_are_taken_out_of_quoted_text_unless_the_file_holds_them() {
        let quoted = "edit {\"path\":\"a\"} failed:\nx = 1\n[1 lines in all]";
        assert_eq!(without_notes(quoted, ""), "x = 1");
        assert_eq!(
            without_notes("x = 1\n[1 lines in all]", "[1 lines in all]\n"),
            "x = 1\n[1 lines in all]"
        );
        assert_eq!(without_notes("a {b} returned: x", ""), "a {b} returned: x");
    }

    #[test]
    fn ordinary_text_and_notes_the_file_already_has_are_left_alone() {
        assert_eq!(echoed_note("# TODO\n- buy milk\n", "# TODO\n"), None);
        // Quoted inside a line, as a test of saki would.
        assert_eq!(
            echoed_note(r#"assert_eq!(out, "a\n[3 lines in all]");"#, ""),
            None
        );
        assert_eq!(echoed_note("[link]: https://example.com", ""), None);
        assert_eq!(
            echoed_note("created the parser (12 bytes)", ""),
            Some("created the parser (12 bytes)")
        );
        let doc = "Output ends with:\n[12 lines in all]\n";
        assert_eq!(
            echoed_note("Output ends with:\n[12 lines in all]\nmore\n", doc),
            None
        );
        // A file that is more than the result line is a file.
        assert_eq!(echoed_note("created x (1 bytes)\nand more", ""), None);
        assert_eq!(
            echoed_note(
                "overwrote TODO.md (28 bytes)",
                "log:\noverwrote TODO.md (28 bytes)\n"
            ),
            None
        );
    }

    /// Seen in the UI with Qwen2.5-Coder-0.5B asked what a function does.
    #[test]
    fn a_result_line_reworded_or_commented_is_found() {
        for echo in [
            "# Overwrote calc.py (63 bytes)",
            "// Wrote calc.py (63 bytes).",
            "<!-- updated README.md (10 bytes) -->",
            "OVERWROTE calc.py (1 byte)",
            "-- Saved schema.sql (120 bytes)",
        ] {
            assert_eq!(echoed_note(echo, "def add(a, b):\n"), Some(echo), "{echo}");
        }
        // A comment of the program's own that merely mentions bytes is a file.
        assert_eq!(echoed_note("# buffer of 64 bytes (per line)", ""), None);
        assert_eq!(echoed_note("# wrote this in 2020\nx = 1\n", ""), None);
    }

    /// Seen with Qwen2.5-Coder-0.5B: the refusal written as the file, then the result
    /// line, which the refusal (now the file) quotes.
    #[test]
    fn a_refusal_written_back_and_a_note_the_file_only_quotes_are_found() {
        let refusal = echo_error("README.md", "overwrote README.md (57 bytes)");
        assert!(echoed_note(&refusal, "The colour of the sky.\n").is_some());
        assert_eq!(
            echoed_note(
                "overwrote README.md (167 bytes)",
                &echo_error("README.md", "overwrote README.md (167 bytes)")
            ),
            Some("overwrote README.md (167 bytes)")
        );
    }
}
