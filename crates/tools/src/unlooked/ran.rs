//! A request to run something and report on it, and the command that runs it.
//!
//! Asked "Run checks.py and tell me how many checks fail.", Qwen2.5-Coder-0.5B called an
//! invented tool, then read the file and answered "3 passed, 0 failed": what the code
//! looked like it would print, not what it printed. The request says what to run, so
//! the command is read from it: a script of the workspace after `run` or `execute`
//! (with the interpreter its extension names), or a command written in backticks
//! there.

use crate::intent::{bare_word, path_word};

/// Words that ask for what follows them to be run.
const RUNNING: &[&str] = &["run", "execute"];

/// Words that may come between such a word and what it runs.
const BEFORE: &[&str] = &["the", "script", "program", "file", "command"];

/// The interpreter for a script, by its extension.
const INTERPRETERS: &[(&str, &str)] = &[
    ("py", "python3"),
    ("sh", "sh"),
    ("bash", "bash"),
    ("js", "node"),
    ("mjs", "node"),
    ("cjs", "node"),
    ("rb", "ruby"),
    ("pl", "perl"),
];

/// What `prompt` asks to run: a command written in backticks right after a word that
/// asks for a run, or else the script named there, as written (its existence is the
/// caller's to check).
pub(super) enum Asked<'a> {
    Command(&'a str),
    Script(&'a str),
}

/// See [`Asked`].
pub(super) fn asked_to_run(prompt: &str) -> Option<Asked<'_>> {
    let mut rest = prompt;
    while let Some((word_end, after)) = next_word(rest) {
        let word = bare_word(rest[..word_end].trim_start()).to_ascii_lowercase();
        rest = after;
        if !RUNNING.contains(&word.as_str()) {
            continue;
        }
        let trimmed = rest.trim_start();
        if let Some(quoted) = trimmed.strip_prefix('`') {
            if let Some((command, _)) = quoted.split_once('`') {
                if !command.trim().is_empty() && !command.contains('\n') {
                    return Some(Asked::Command(command.trim()));
                }
            }
        }
        let target = trimmed
            .split_whitespace()
            .find(|w| !BEFORE.contains(&bare_word(w).to_ascii_lowercase().as_str()))?;
        if let Some(path) = path_word(target).filter(|p| interpreter(p).is_some()) {
            return Some(Asked::Script(path));
        }
    }
    None
}

/// The command that runs the script `path`.
pub(crate) fn script_command(path: &str) -> Option<String> {
    Some(format!("{} {}", interpreter(path)?, quoted_path(path)))
}

/// `path` as one word of a shell command: single-quoted unless it is plain, and never
/// read as an option (`-c.py` is `./-c.py`).
pub(crate) fn quoted_path(path: &str) -> String {
    let path = match path.starts_with('-') {
        true => format!("./{path}"),
        false => path.to_owned(),
    };
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    match plain {
        true => path,
        false => format!("'{}'", path.replace('\'', r"'\''")),
    }
}

fn interpreter(path: &str) -> Option<&'static str> {
    let (_, extension) = path.rsplit_once('.')?;
    INTERPRETERS
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(extension))
        .map(|(_, interpreter)| *interpreter)
}

/// The end of the first word of `text` and the text after it.
fn next_word(text: &str) -> Option<(usize, &str)> {
    let start = text.len() - text.trim_start().len();
    let word = &text[start..];
    if word.is_empty() {
        return None;
    }
    let end = word.find(char::is_whitespace).unwrap_or(word.len());
    Some((start + end, &word[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(prompt: &str) -> Option<String> {
        asked_to_run(prompt).map(|asked| match asked {
            Asked::Command(c) => format!("command {c}"),
            Asked::Script(s) => format!("script {s}"),
        })
    }

    #[test]
    fn the_script_or_command_after_run_is_what_to_run() {
        assert_eq!(
            read("Run checks.py and tell me how many checks fail.").as_deref(),
            Some("script checks.py")
        );
        assert_eq!(
            read("Please execute the script tools/build.sh, what does it print?").as_deref(),
            Some("script tools/build.sh")
        );
        assert_eq!(
            read("run `make test -k fast` and say what failed").as_deref(),
            Some("command make test -k fast")
        );
        assert_eq!(
            script_command("a b.py").as_deref(),
            Some("python3 'a b.py'")
        );
        assert_eq!(script_command("src/x.js").as_deref(), Some("node src/x.js"));
        assert_eq!(script_command("-c.py").as_deref(), Some("python3 ./-c.py"));
        assert_eq!(
            script_command("a';rm x.sh").as_deref(),
            Some(r"sh 'a'\'';rm x.sh'")
        );
    }

    #[test]
    fn a_run_of_something_else_is_not_read() {
        for prompt in [
            "What does run() in app.py do?",
            "Run the tests.",
            "Which function runs first in main.py?",
            "Run notes.txt",
            "run `` now",
        ] {
            assert!(read(prompt).is_none(), "{prompt}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_prompt_is_read_without_a_panic(prompt in "(run |execute |`|the |a\\.py |\\PC){0,16}") {
            let _ = asked_to_run(&prompt);
        }
    }
}
