//! A name a request renames everywhere, done without the model.
//!
//! Asked "Rename MAX_USERS to MAX_MEMBERS everywhere.", Qwen2.5-Coder-0.5B changed
//! `config.py`, which defines it, and left `app.py`, which imports it, failing to
//! import. Renaming a name is mechanical: where the request renames a name of code
//! ("rename X to Y", X and Y written as identifiers), each file it names that still
//! holds X as a whole word at the turn's end gets it replaced by Y, one file per turn
//! end; and every file of the workspace that holds it when the request names no file or
//! reaches past the files it names ("everywhere", "all uses"). A name that could be a
//! word of prose or markup (`title`, `greet`) is renamed only in files of code: in
//! `index.html`, `<title>` is a tag.

use super::own_files::reaches_past_named_files;
use super::{shown_path, RewriteEdits};
use crate::intent::bare_word;
use crate::mentions::{search_workspace, word_pattern};
use saki_llm_worker::interceptor::OwnCall;

/// The most lines of a name's uses searched for: past them, a name is not one to rename
/// file by file.
const MAX_USES: usize = 400;

impl RewriteEdits {
    /// The edit that renames the name `prompt` renames in the next file still holding
    /// it, among the files the request reaches (see the module's documentation); each
    /// file once a turn.
    pub(super) async fn rename_call(&self, prompt: &str) -> Option<OwnCall> {
        let (from, to) = renamed_name(prompt)?;
        let named: Vec<String> = {
            let state = self.state();
            let root = self.workspace.root();
            state
                .named
                .iter()
                .filter_map(|p| p.strip_prefix(root).ok()?.to_str().map(str::to_owned))
                .collect()
        };
        let paths: Vec<String> = if !named.is_empty() && !reaches_past_named_files(prompt) {
            named
        } else {
            let pattern = word_pattern(&[from.to_owned()]);
            let found = search_workspace(&self.workspace, pattern, MAX_USES).await?;
            if found.total > MAX_USES {
                return None;
            }
            let mut paths: Vec<String> = found.matches.into_iter().map(|(p, _, _)| p).collect();
            paths.dedup();
            paths
        };
        let any_file = written_as_code(from);
        for path in paths {
            if !(any_file || is_code_file(&path)) {
                continue;
            }
            let Some((path, resolved, old)) = self.file(&path).await else {
                continue;
            };
            if self.state().renamed.contains(&resolved) {
                continue;
            }
            let Some(new) = renamed_text(&old, from, to) else {
                continue;
            };
            let shown = shown_path(&self.workspace, &resolved, &path);
            self.state().renamed.push(resolved);
            return Some(OwnCall {
                name: "edit".into(),
                arguments: serde_json::json!({"path": path, "old_string": old, "new_string": new})
                    .to_string(),
                note: format!(
                    "[saki made this edit: the request renames {from} to {to}, and {shown} \
                     still used {from}. Tell the person in one sentence what changed.]"
                ),
            });
        }
        None
    }
}

/// Words that ask for a rename.
const RENAMING: &[&str] = &["rename", "renames"];

/// Words that may come between that word and the name ("rename the constant X").
const KINDS: &[&str] = &[
    "the",
    "function",
    "method",
    "class",
    "variable",
    "var",
    "constant",
    "const",
    "field",
    "parameter",
    "param",
    "argument",
    "setting",
    "key",
    "type",
    "name",
];

/// The name `prompt` renames and its new name, as written: "rename [the kind] X to|as Y"
/// with both written as identifiers and different.
pub(super) fn renamed_name(prompt: &str) -> Option<(&str, &str)> {
    let words: Vec<&str> = prompt.split_whitespace().collect();
    words.iter().enumerate().find_map(|(at, word)| {
        if !RENAMING.contains(&bare_word(word).to_ascii_lowercase().as_str()) {
            return None;
        }
        let mut rest = words[at + 1..]
            .iter()
            .skip_while(|w| KINDS.contains(&bare_word(w).to_ascii_lowercase().as_str()));
        let from = identifier(rest.next()?)?;
        let to_word = bare_word(rest.next()?).to_ascii_lowercase();
        if to_word != "to" && to_word != "as" {
            return None;
        }
        let to = identifier(rest.next()?)?;
        (from != to).then_some((from, to))
    })
}

/// Whether `name` could only be a name of code (`MAX_USERS`, `fetchData`, `v2`), not
/// a word of prose or markup too (`title`, `greet`).
fn written_as_code(name: &str) -> bool {
    name.contains('_')
        || name.chars().any(|c| c.is_ascii_digit())
        || name.chars().skip(1).any(|c| c.is_ascii_uppercase())
}

/// Extensions of files whose words are code: a plain word (`title`) is renamed only in
/// them, not in Markdown, HTML or text, where it is as likely prose or a tag.
const CODE_EXTENSIONS: &[&str] = &[
    "py", "js", "mjs", "cjs", "jsx", "ts", "tsx", "rs", "go", "rb", "java", "kt", "c", "h", "cc",
    "cpp", "hpp", "cs", "php", "swift", "scala", "sh", "bash", "lua", "pl",
];

fn is_code_file(path: &str) -> bool {
    path.rsplit_once('.')
        .is_some_and(|(_, ext)| CODE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// `word` without quotes or closing marks, when it is a name of code: a letter or `_`,
/// then letters, digits or `_`, at least two characters.
fn identifier(word: &str) -> Option<&str> {
    let word = bare_word(word).trim_end_matches("()");
    let mut chars = word.chars();
    let first = chars.next()?;
    let is_name = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && word.len() >= 2;
    is_name.then_some(word)
}

/// `text` with each whole-word `from` (not part of a longer name) replaced by `to`;
/// nothing when it holds none.
pub(super) fn renamed_text(text: &str, from: &str, to: &str) -> Option<String> {
    if from.is_empty() {
        return None;
    }
    let is_name_char = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut replaced = false;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(is_name_char) || after.is_some_and(is_name_char) {
            out.push_str(from);
        } else {
            out.push_str(to);
            replaced = true;
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    replaced.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_renamed_to_another_is_read() {
        assert_eq!(
            renamed_name("Rename MAX_USERS to MAX_MEMBERS everywhere."),
            Some(("MAX_USERS", "MAX_MEMBERS"))
        );
        assert_eq!(
            renamed_name("Please rename the function `fetch()` to `fetch_data` in all files"),
            Some(("fetch", "fetch_data"))
        );
        for prompt in [
            "Rename config.yml to config.yaml.",
            "Rename it.",
            "Rename x to x.",
            "Rename the button label to Save changes",
            "What does rename do?",
        ] {
            assert_eq!(renamed_name(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn a_plain_word_is_a_name_only_in_code() {
        assert!(written_as_code("MAX_USERS") && written_as_code("fetchData"));
        assert!(!written_as_code("title") && !written_as_code("Greet"));
        assert!(is_code_file("src/app.py") && !is_code_file("index.html"));
    }

    #[test]
    fn only_whole_names_are_replaced() {
        let text = "from config import MAX_USERS\nMAX_USERS_X = MAX_USERS + 1  # MAX_USERS\n";
        assert_eq!(
            renamed_text(text, "MAX_USERS", "MAX_MEMBERS").as_deref(),
            Some("from config import MAX_MEMBERS\nMAX_USERS_X = MAX_MEMBERS + 1  # MAX_MEMBERS\n")
        );
        assert_eq!(renamed_text("MAX_USERS_X = 1\n", "MAX_USERS", "M"), None);
        assert_eq!(
            renamed_text("é fetch(é)", "fetch", "get").as_deref(),
            Some("é get(é)")
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_renamed_without_a_panic(
            prompt in "(rename |the |to |a_b |\\PC){0,12}",
            text in "(a_b|ab|_|é|\\PC){0,24}",
        ) {
            let _ = renamed_name(&prompt);
            let _ = renamed_text(&text, "a_b", "c");
        }
    }
}
