//! A removal that takes out more than the request points to, narrowed to what it does.
//!
//! Asked "Remove the debug print from main.py.", with `print('debug:', x)` and, two
//! lines on, `print(x)` in it, Qwen2.5-Coder-0.5B wrote the file back without either.
//! When a request only takes something out and the model's new text is the old one with
//! whole lines gone, those lines fall into runs (lines next to each other go together: a
//! function goes with its body). Each run is scored by the request's words found in it
//! (their first letters, as for a line to uncomment). When one run scores more than
//! every other, only that run goes; the other runs, which the words point to less, stay.
//! One run, ties, and any answer that changed a line rather than dropping it are left
//! as the model wrote them.

use super::uncomment::{stems_in, word_stems};

/// Words that ask for the removal rather than say what goes.
const ASKING: &[&str] = &["remov", "delet", "drop", "line", "take", "get", "rid"];

/// `new` narrowed to the one run of removed lines that `prompt` points to, when `new` is
/// `old` with lines removed in more than one run and one run scores highest (see the
/// module's documentation).
pub(super) fn narrowed(prompt: &str, old: &str, new: &str) -> Option<String> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let runs = removed_runs(&old_lines, new)?;
    if runs.len() < 2 {
        return None;
    }
    let stems = word_stems(prompt, ASKING);
    let scores: Vec<usize> = runs
        .iter()
        .map(|run| run.clone().map(|at| stems_in(&stems, old_lines[at])).sum())
        .collect();
    let best = *scores.iter().max()?;
    let mut at_best = scores.iter().enumerate().filter(|(_, s)| **s == best);
    let (Some((chosen, _)), None) = (at_best.next(), at_best.next()) else {
        return None;
    };
    if best == 0 {
        return None;
    }
    let gone = &runs[chosen];
    let kept: String = old_lines
        .iter()
        .enumerate()
        .filter(|(at, _)| !gone.contains(at))
        .map(|(_, line)| *line)
        .collect();
    Some(kept)
}

/// The runs of `old_lines` (as ranges of their indices) that `new` leaves out, when
/// `new` is those lines with some left out and nothing else changed.
fn removed_runs(old_lines: &[&str], new: &str) -> Option<Vec<std::ops::Range<usize>>> {
    let mut new_lines = new.split_inclusive('\n').peekable();
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (at, line) in old_lines.iter().enumerate() {
        if new_lines.peek() == Some(line) {
            new_lines.next();
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.end == at => run.end = at + 1,
            _ => runs.push(at..at + 1),
        }
    }
    new_lines.next().is_none().then_some(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_run_the_words_point_to_is_removed() {
        let old = "x = 41\nprint('debug:', x)\nx += 1\nprint(x)\n";
        assert_eq!(
            narrowed(
                "Remove the debug print from main.py.",
                old,
                "x = 41\nx += 1\n"
            )
            .as_deref(),
            Some("x = 41\nx += 1\nprint(x)\n")
        );
        // A stray blank line dropped elsewhere comes back.
        let spaced = "DEBUG = True\nPORT = 1\n\n\ndef f():\n    pass\n";
        assert_eq!(
            narrowed(
                "Remove the DEBUG setting.",
                spaced,
                "PORT = 1\n\ndef f():\n    pass\n"
            )
            .as_deref(),
            Some("PORT = 1\n\n\ndef f():\n    pass\n")
        );
    }

    #[test]
    fn one_run_ties_and_changed_lines_stay_as_the_model_wrote_them() {
        let function = "def debug():\n    print(1)\n\nx = 1\n";
        assert_eq!(
            narrowed("Remove the debug function.", function, "x = 1\n"),
            None
        );
        let prints = "print(1)\nx = 1\nprint(2)\n";
        assert_eq!(narrowed("Remove the print calls.", prints, "x = 1\n"), None);
        let changed = "a = f(1, timeout=3)\nb = 2\nc = 3\n";
        assert_eq!(
            narrowed("Remove the timeout argument.", changed, "a = f(1)\n"),
            None
        );
        assert_eq!(narrowed("Remove b and c.", changed, "b = 2\n"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_request_and_texts_are_read_without_a_panic(
            prompt in "(remove |debug |print |\\PC){0,12}",
            old in "(print\\(1\\)\n|x = 1\n|\n|\\PC){0,12}",
            new in "(print\\(1\\)\n|x = 1\n|\n|\\PC){0,8}",
        ) {
            let _ = narrowed(&prompt, &old, &new);
        }
    }
}
