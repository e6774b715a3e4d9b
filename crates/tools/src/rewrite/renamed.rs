//! A name a request renames everywhere, or a word it replaces, done without the model.
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
//!
//! Replacing a word is as mechanical: asked "Replace teh with the in notes.md, keeping
//! the capital at the start.", the model gave the file back unchanged. "replace [every]
//! X with|by Y" (each a word or a quoted phrase; an unquoted Y ends the sentence or comes
//! before "in", "everywhere", …) is done the same way: in prose, markup and data files,
//! where `Teh` becomes `The` and `TEH` becomes `THE` too; in files of code only when
//! both are quoted, names of code or numbers ("Replace the print with logging" asks for
//! calls rewritten, and `logging(x)` would not run).
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
        let (from, to, swap) = swap_in(prompt)?;
        let (from, to) = (from.as_str(), to.as_str());
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
        for path in paths {
            if !swap.fits(from, &path) {
                continue;
            }
            let Some((path, resolved, old)) = self.file(&path).await else {
                continue;
            };
            if self.state().renamed.contains(&resolved) {
                continue;
            }
            let Some(new) = swap.text(&old, from, to, &path) else {
                continue;
            };
            let shown = shown_path(&self.workspace, &resolved, &path);
            self.state().renamed.push(resolved);
            return Some(OwnCall {
                name: "edit".into(),
                arguments: serde_json::json!({"path": path, "old_string": old, "new_string": new})
                    .to_string(),
                note: format!(
                    "[saki made this edit: the request {verb} {from} {by} {to}, and {shown} \
                     still had {from}. Tell the person in one sentence what changed.]",
                    verb = swap.verb(),
                    by = swap.by(),
                ),
            });
        }
        None
    }
}

/// What `prompt` swaps: a name renamed, or a word replaced, with the new one.
fn swap_in(prompt: &str) -> Option<(String, String, Swap)> {
    match renamed_name(prompt) {
        Some((from, to)) => Some((from.to_owned(), to.to_owned(), Swap::Rename)),
        None => {
            let (from, to, quoted) = replaced_words(prompt)?;
            let in_code = fit_for_code(&from, &to, quoted);
            Some((from, to, Swap::Replace { in_code }))
        }
    }
}

/// `old`, the text of `path`, with the swap `prompt` asks for made, and the note for the
/// model: what a model's own edit of the file in such a turn becomes. Asked "Rename the
/// variable n to total in sum.py.", a 0.5B model edited one line of the three that use
/// it, and the whole new text it was asked for then dropped the file's last line.
pub(super) fn swapped(prompt: &str, path: &str, old: &str) -> Option<(String, String)> {
    let (from, to, swap) = swap_in(prompt)?;
    if !swap.fits(&from, path) {
        return None;
    }
    let new = swap.text(old, &from, &to, path)?;
    let note = format!(
        "[saki made this edit in place of the call: the request {verb} {from} {by} {to} in \
         all of {path}. Tell the person in one sentence what changed.]",
        verb = swap.verb(),
        by = swap.by(),
    );
    Some((new, note))
}

/// A name renamed, or a word replaced.
#[derive(Debug, Clone, Copy)]
enum Swap {
    Rename,
    /// `in_code`: whether it may be made in files of code too (see `fit_for_code`).
    Replace {
        in_code: bool,
    },
}

impl Swap {
    /// Whether the swap of `from` is made in the file `path`: a rename in code, or
    /// anywhere for a name written as code; a replacement outside code, or anywhere
    /// when fit for code.
    fn fits(self, from: &str, path: &str) -> bool {
        match self {
            Swap::Rename => written_as_code(from) || is_code_file(path),
            Swap::Replace { in_code } => in_code || !is_code_file(path),
        }
    }

    /// `old`, the text of `path`, with the swap made; nothing when it holds no `from`.
    fn text(self, old: &str, from: &str, to: &str, path: &str) -> Option<String> {
        match self {
            Swap::Rename => renamed_text(old, from, to),
            Swap::Replace { .. } => replaced_text(old, from, to, !is_code_file(path)),
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Swap::Rename => "renames",
            Swap::Replace { .. } => "replaces",
        }
    }

    fn by(self) -> &'static str {
        match self {
            Swap::Rename => "to",
            Swap::Replace { .. } => "with",
        }
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
    replaced_whole(text, &[(from.to_owned(), to.to_owned())])
}

/// `text` with each whole-word `from` replaced by `to`; where `any_case` and `from` is
/// lower-case, its capitalised and upper-case forms too, by `to` in the same form.
fn replaced_text(text: &str, from: &str, to: &str, any_case: bool) -> Option<String> {
    let mut pairs = vec![(from.to_owned(), to.to_owned())];
    if any_case && from.chars().any(char::is_alphabetic) && from == from.to_lowercase() {
        pairs.push((capitalised(from), capitalised(to)));
        if from.chars().count() > 1 {
            pairs.push((from.to_uppercase(), to.to_uppercase()));
        }
        pairs.dedup();
    }
    replaced_whole(text, &pairs)
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `text` with each whole occurrence of a pair's first text replaced by its second,
/// the earliest first; nothing when none was. An occurrence is whole when no letter,
/// digit or `_` continues a name across its edges.
fn replaced_whole(text: &str, pairs: &[(String, String)]) -> Option<String> {
    let is_name_char = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut replaced = false;
    loop {
        let next = pairs
            .iter()
            .filter(|(from, _)| !from.is_empty())
            .filter_map(|(from, to)| rest.find(from.as_str()).map(|at| (at, from, to)))
            .min_by_key(|(at, from, _)| (*at, usize::MAX - from.len()));
        let Some((at, from, to)) = next else {
            break;
        };
        let joins_before = from.starts_with(is_name_char)
            && rest[..at].chars().next_back().is_some_and(is_name_char);
        let joins_after = from.ends_with(is_name_char)
            && rest[at + from.len()..]
                .chars()
                .next()
                .is_some_and(is_name_char);
        out.push_str(&rest[..at]);
        if joins_before || joins_after {
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

/// Words that ask for a replacement.
const REPLACING: &[&str] = &["replace", "replaces"];

/// Words that may come between that word and what is replaced ("replace every 'x'").
const OCCURRENCES: &[&str] = &[
    "every",
    "all",
    "each",
    "any",
    "the",
    "occurrences",
    "occurrence",
    "instances",
    "instance",
    "of",
    "word",
    "words",
    "string",
    "text",
    "mentions",
    "uses",
];

/// Words after an unquoted replacement that show it is whole ("with the in notes.md").
const AFTER_REPLACEMENT: &[&str] = &[
    "in",
    "everywhere",
    "across",
    "throughout",
    "within",
    "inside",
    "on",
    "and",
    "keeping",
    "but",
    "for",
    "so",
    "please",
    "of",
    "at",
    "too",
];

/// Whether a replacement of `from` by `to` may be made in files of code too: both
/// quoted in the request, both names written as code, or both numbers. "Replace the
/// print with logging" names a rewrite of the calls, not a word to swap: `logging(x)`
/// would not run.
fn fit_for_code(from: &str, to: &str, quoted: bool) -> bool {
    let number = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == '.');
    quoted || (written_as_code(from) && written_as_code(to)) || (number(from) && number(to))
}

/// What `prompt` replaces and with what: "replace [every] X with|by Y" (see the
/// module's documentation), and whether both were quoted.
pub(super) fn replaced_words(prompt: &str) -> Option<(String, String, bool)> {
    if !crate::intent::read_intent(prompt).change {
        return None;
    }
    let mut offset = 0;
    for word in prompt.split_inclusive(char::is_whitespace) {
        offset += word.len();
        if !REPLACING.contains(&bare_word(word.trim()).to_ascii_lowercase().as_str()) {
            continue;
        }
        let mut rest = prompt[offset..].trim_start();
        while let Some((first, after)) = split_word(rest) {
            if !OCCURRENCES.contains(&first.to_ascii_lowercase().as_str()) {
                break;
            }
            rest = after;
        }
        let (from, after) = phrase(rest)?;
        let (by, after) = split_word(after)?;
        if !matches!(by.to_ascii_lowercase().as_str(), "with" | "by") {
            continue;
        }
        let (to, after) = phrase(after)?;
        let whole = to.closed
            || after.is_empty()
            || split_word(after).is_some_and(|(next, _)| {
                AFTER_REPLACEMENT.contains(&next.to_ascii_lowercase().as_str())
            });
        if whole && from.text != to.text && !from.text.is_empty() && !to.text.is_empty() {
            let quoted = from.quoted && to.quoted;
            return Some((from.text.to_owned(), to.text.to_owned(), quoted));
        }
    }
    None
}

/// The first word of `text` (blanks around it dropped) and the text after it.
fn split_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    Some((&text[..end], text[end..].trim_start()))
}

/// A phrase of a request: a quoted one or one word.
struct Phrase<'a> {
    /// Without its quotes or closing marks.
    text: &'a str,
    quoted: bool,
    /// Whether it is quoted or closes a clause (`the,`, `color.`): nothing after it
    /// belongs to it.
    closed: bool,
}

/// The phrase `text` starts with (`'…'`, `"…"`, `` `…` ``, or one word) and the text
/// after it.
fn phrase(text: &str) -> Option<(Phrase<'_>, &str)> {
    let text = text.trim_start();
    let quote = text.chars().next()?;
    if matches!(quote, '\'' | '"' | '`') {
        let inner = &text[1..];
        let end = inner.find(quote)?;
        let after = inner[end + 1..].trim_start_matches([',', '.', ';']);
        let text = &inner[..end];
        return Some((
            Phrase {
                text,
                quoted: true,
                closed: true,
            },
            after,
        ));
    }
    let word_end = text.find(char::is_whitespace).unwrap_or(text.len());
    let word = &text[..word_end];
    let closed = word.ends_with(['.', ',', ';', ':', '!', '?']);
    let phrase = Phrase {
        text: bare_word(word),
        quoted: false,
        closed,
    };
    Some((phrase, &text[word_end..]))
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
    fn a_models_edit_in_a_swap_becomes_the_swap_of_the_whole_file() {
        let app = "from greetings import greet\n\nprint(greet('Ann'))\n";
        let prompt = "Rename the function greet to welcome, in greetings.py and app.py.";
        let (new, note) = swapped(prompt, "app.py", app).unwrap();
        assert_eq!(
            new,
            app.replace("greet(", "welcome(")
                .replace("import greet", "import welcome")
        );
        assert!(
            note.contains("renames greet to welcome in all of app.py"),
            "{note}"
        );
        // A plain word is renamed only in code; a file without it is no swap.
        assert_eq!(swapped(prompt, "notes.md", "greet Ann\n"), None);
        assert_eq!(swapped(prompt, "b.py", "x = 1\n"), None);
        assert_eq!(swapped("Fix app.py.", "app.py", app), None);
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

    #[test]
    fn a_word_replaced_with_another_is_read() {
        let read = |prompt| replaced_words(prompt).map(|(from, to, _)| (from, to));
        let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(
            read("Replace teh with the in notes.md, keeping the capital at the start."),
            pair("teh", "the")
        );
        assert_eq!(
            read("In README.md, replace every 'colour' with 'color'."),
            pair("colour", "color")
        );
        assert_eq!(
            read("replace all occurrences of \"Hello world\" by \"Hi\" everywhere"),
            pair("Hello world", "Hi")
        );
        assert_eq!(
            read("Replace localhost with db.local."),
            pair("localhost", "db.local")
        );
        for prompt in [
            "Replace the print with a log call.",
            "Replace the old greeting with Hi in hello.py",
            "Replace x with x.",
            "Replace it",
            "How do I replace a with b?",
        ] {
            assert_eq!(read(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn only_quoted_words_names_of_code_or_numbers_are_replaced_in_code() {
        let fit = |prompt| {
            let (from, to, quoted) = replaced_words(prompt).unwrap();
            fit_for_code(&from, &to, quoted)
        };
        assert!(fit("Replace 'print' with 'log' in main.py."));
        assert!(fit("Replace MAX_USERS with MAX_MEMBERS."));
        assert!(fit("Replace 8080 with 9090 in server.py"));
        assert!(!fit("Replace print with logging in main.py."));
        assert!(!fit("Replace teh with the in notes.md."));
    }

    #[test]
    fn a_replaced_word_keeps_its_capital_outside_code() {
        let text = "Teh meeting.\nBring teh slides, TEH end, tehx.\n";
        assert_eq!(
            replaced_text(text, "teh", "the", true).as_deref(),
            Some("The meeting.\nBring the slides, THE end, tehx.\n")
        );
        assert_eq!(
            replaced_text(text, "teh", "the", false).as_deref(),
            Some("Teh meeting.\nBring the slides, TEH end, tehx.\n")
        );
        assert_eq!(
            replaced_text("see .env here", ".env", ".env.example", true).as_deref(),
            Some("see .env.example here")
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_renamed_without_a_panic(
            prompt in "(rename |replace |with |\"|'|the |to |a_b |\\PC){0,12}",
            text in "(a_b|ab|_|é|\\PC){0,24}",
        ) {
            let _ = renamed_name(&prompt);
            let _ = replaced_words(&prompt);
            let _ = replaced_text(&text, "a_b", "c", true);
            let _ = renamed_text(&text, "a_b", "c");
        }
    }
}
