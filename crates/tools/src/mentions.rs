//! Where the prompt's words occur, shown with the prompt where small models run.
//!
//! Asked "What currency does the shop use?" in a tree where the answer sits in
//! `src/shop/config.py`, a small model answers at once with a currency it made up; asked
//! "Set LIMIT to 25." it lists the root and says it is done. A strong model greps; a small
//! one rarely thinks to. So saki greps for it: the prompt's distinctive words (not
//! function words, not the words of a file name, not numbers) are searched for in the
//! workspace as whole words or words of a snake_case name, ignoring case, and the lines
//! found follow the prompt as a note, `path:line:text` as the grep tool shows them. A word
//! found in more than a few files points nowhere, unless a few lines define it (see
//! [`definition_pattern`]); otherwise it is left out, so in a large tree the note is
//! often absent. The search is the grep tool's own (`.gitignore` respected, dotfiles
//! searched, `.git` skipped, links not followed), over the session's file view, in one
//! walk for all the words (and one more for the common words' definitions), and gets
//! [`SEARCH_BUDGET`] in all.

use crate::fs::GrepQuery;
use crate::grep::{Found, Match};
use crate::intent::path_word;
use crate::workspace::Workspace;
use saki_llm_worker::interceptor::{Interceptor, PromptAction};
use saki_llm_worker::Item;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Words searched for at most (the first ones of the prompt).
const MAX_WORDS: usize = 6;
/// A word found in more files than this points nowhere in particular.
const MAX_FILES_PER_WORD: usize = 3;
/// A word on more lines than this is too common to show.
const MAX_LINES_PER_WORD: usize = 12;
/// Definitions of a common word looked at at most, per word.
const DEFINITIONS_SEARCHED: usize = 4 * MAX_LINES_PER_WORD;
/// Lines shown in all.
const MAX_LINES: usize = 8;
/// Characters of a line shown.
const MAX_LINE_CHARS: usize = 120;
/// The searches' time in all: in a tree too large to search in it, there is no note
/// (the prompt is not held up for long).
const SEARCH_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// How the note starts; it is a note, not the person's words (see `echo`).
pub const NOTE_START: &str = "[Lines of the workspace with the request's words";

/// Words too common in requests to point at anything.
#[rustfmt::skip]
const FUNCTION_WORDS: &[&str] = &[
    "the", "and", "for", "with", "what", "which", "where", "when", "who", "how", "why",
    "does", "did", "are", "was", "were", "has", "have", "had", "that", "this", "these",
    "those", "from", "into", "onto", "use", "uses", "used", "using", "file", "files",
    "line", "lines", "make", "set", "add", "change", "fix", "remove", "delete", "rename",
    "update", "bump", "show", "tell", "find", "list", "count", "many", "much", "there",
    "their", "they", "them", "then", "than", "can", "could", "should", "would", "will",
    "not", "but", "all", "any", "each", "every", "some", "one", "two", "new", "old", "its",
    "you", "your", "our", "please", "also", "only", "just", "instead", "doesn", "isn",
    "didn", "aren", "won", "don", "here", "want", "need", "like", "about", "after",
    "before", "out", "get", "put", "give", "write", "read", "run", "runs", "call", "calls",
    "called", "return", "returns", "defined", "define", "code", "bug", "error", "fails",
    "failing", "works", "work", "something", "else", "other", "same", "more", "most",
    "less", "again", "now", "still", "yet", "too", "very", "way", "thing", "things",
    "doing", "done", "sure", "okay", "thanks", "thank", "right", "wrong", "print", "prints",
    "say", "says", "top", "end", "start", "first", "last", "next", "over", "under",
    "between", "without", "within", "per", "via", "being", "been", "upon", "let", "lets",
    "see", "look", "check", "keep", "take", "move", "copy", "open", "create", "text",
    "word", "words", "number", "numbers", "value", "values", "total", "sum",
];

/// Adds the lines where the prompt's words occur after the prompt (see the module's
/// documentation).
#[derive(Debug)]
pub struct PromptMentions {
    workspace: Arc<Workspace>,
}

impl PromptMentions {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }

    /// The lines of the workspace that `pattern` matches (any case), in one search,
    /// up to `max` of them.
    async fn search(&self, pattern: String, max: usize) -> Option<Vec<Match>> {
        Some(
            search_workspace(&self.workspace, pattern, max)
                .await?
                .matches,
        )
    }

    /// The note for `prompt`, or `None` when none of its words points anywhere.
    pub async fn note(&self, prompt: &str) -> Option<String> {
        let words = distinctive_words(prompt);
        if words.is_empty() {
            return None;
        }
        // One line more than a word may have: a word on more lines is seen to be.
        let found = self
            .search(word_pattern(&words), MAX_LINES_PER_WORD * words.len() + 1)
            .await?;
        // The rarest words first: they point most precisely. A word on too many lines or
        // in too many files points nowhere, unless few of those lines define it.
        let mut by_rarity: Vec<(usize, String, Vec<Match>)> = Vec::new();
        let mut common = Vec::new();
        for word in words {
            match pointing(matching(&found, &word_pattern(std::slice::from_ref(&word)))) {
                Pointing::Few(files, lines) => by_rarity.push((files, word, lines)),
                Pointing::Many(_) => common.push(word),
                Pointing::None => {}
            }
        }
        if !common.is_empty() {
            let defining = self
                .search(
                    definition_pattern(&common),
                    DEFINITIONS_SEARCHED * common.len(),
                )
                .await
                .unwrap_or_default();
            for word in common {
                let pattern = definition_pattern(std::slice::from_ref(&word));
                // Too many definitions: the ones at the top level of their files, if few.
                let few = match pointing(matching(&defining, &pattern)) {
                    Pointing::Many(lines) => pointing(
                        lines
                            .into_iter()
                            .filter(|(_, _, text)| !text.starts_with(char::is_whitespace))
                            .collect(),
                    ),
                    other => other,
                };
                if let Pointing::Few(files, lines) = few {
                    by_rarity.push((files, word, lines));
                }
            }
        }
        by_rarity.sort_by_key(|(files, _, _)| *files);
        let mut shown: BTreeMap<(String, u64), String> = BTreeMap::new();
        let mut found_words = Vec::new();
        for (_, word, lines) in by_rarity {
            let mut added = false;
            for (path, number, text) in lines {
                if shown.len() >= MAX_LINES {
                    break;
                }
                let text: String = text.trim().chars().take(MAX_LINE_CHARS).collect();
                added |= shown.insert((path, number), text).is_none();
            }
            if added {
                found_words.push(word);
            }
        }
        if shown.is_empty() {
            return None;
        }
        let lines: Vec<String> = shown
            .into_iter()
            .map(|((path, number), text)| format!("{path}:{number}:{text}"))
            .collect();
        Some(format!(
            "{NOTE_START} ({}):\n{}]",
            found_words.join(", "),
            lines.join("\n")
        ))
    }
}

/// How many lines one word picks out of a search.
enum Pointing {
    None,
    /// Few enough to point somewhere: the number of files, and the lines.
    Few(usize, Vec<Match>),
    /// On too many lines or in too many files.
    Many(Vec<Match>),
}

/// The lines of `found` that `pattern` matches, any case.
fn matching(found: &[Match], pattern: &str) -> Vec<Match> {
    let Ok(pattern) = regex::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
    else {
        return Vec::new();
    };
    found
        .iter()
        .filter(|(_, _, text)| pattern.is_match(text))
        .cloned()
        .collect()
}

fn pointing(lines: Vec<Match>) -> Pointing {
    let files = lines
        .iter()
        .map(|(p, _, _)| p)
        .collect::<BTreeSet<_>>()
        .len();
    if lines.is_empty() {
        Pointing::None
    } else if lines.len() <= MAX_LINES_PER_WORD && files <= MAX_FILES_PER_WORD {
        Pointing::Few(files, lines)
    } else {
        Pointing::Many(lines)
    }
}

#[async_trait::async_trait]
impl Interceptor for PromptMentions {
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        let Item::User { text } = user else {
            return PromptAction::Continue;
        };
        let note = tokio::time::timeout(SEARCH_BUDGET, self.note(text)).await;
        match note.ok().flatten() {
            Some(note) => PromptAction::ContinueWith(vec![Item::system(note)]),
            None => PromptAction::Continue,
        }
    }
}

/// A pattern for the lines that define any of `words`, indented one level at most: a
/// key or name at the start of the line that is the word or has it as a part
/// (`version`, `__version__`, `DATABASE_URL`, `requires-python`, `"version"`), then `=`
/// or `:`; or a declaration of that name (`class Signer(object):`, `pub fn parse(`,
/// `export const LIMIT =`). Asked to bump "the version", a common word in any project,
/// the one line that sets it is what points somewhere; asked what the Signer class does,
/// the line that declares it. When even those are too many, the ones not indented are.
fn definition_pattern(words: &[String]) -> String {
    let words = alternatives(words);
    format!(
        r#"^[ \t]{{0,4}}(?:["']?(?:[\w.-]*[_.-])?(?:{words})(?:[_.-][\w.-]*)?["']?[ \t]*[:=](?:[^=\n]|$)|(?:{DECLARATION_PREFIX})*{DECLARATION_KEYWORD}[ \t]+(?:{words})\b)"#
    )
}

/// Words that may come before a declaration's keyword (`pub async fn`, `export default
/// class`).
const DECLARATION_PREFIX: &str = r"(?:export|default|pub(?:\([\w ]*\))?|async|static|public|private|protected|abstract|final|unsafe)[ \t]+";
/// Keywords that declare a name, in the languages people mostly ask about.
const DECLARATION_KEYWORD: &str =
    r"(?:class|def|fn|struct|enum|trait|interface|function|func|type|const|let|var|mod|module)";

/// The lines of `workspace` that `pattern` matches (any case), in one search, up to
/// `max` of them, with how many match in all.
pub(crate) async fn search_workspace(
    workspace: &Workspace,
    pattern: String,
    max: usize,
) -> Option<Found> {
    let query = GrepQuery {
        pattern,
        glob: None,
        case_insensitive: true,
        max,
        shown_root: workspace.root().to_path_buf(),
    };
    workspace.fs().grep(workspace.root(), &query).await.ok()
}

/// A pattern for any of `words` as a whole word or a word of a snake_case name; the
/// search and the sorting of its lines by word use the same one.
pub(crate) fn word_pattern(words: &[String]) -> String {
    format!(r"(?:\b|_)(?:{})(?:\b|_)", alternatives(words))
}

/// `words` as a regular expression's alternatives, each matched as written.
fn alternatives(words: &[String]) -> String {
    let escaped: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
    escaped.join("|")
}

/// Endings of file names people name in requests, lower-cased, without the dot.
#[rustfmt::skip]
const FILE_ENDINGS: &[&str] = &[
    "py", "pyi", "ipynb", "txt", "md", "rst", "json", "jsonl", "toml", "yaml", "yml", "ini",
    "cfg", "conf", "env", "csv", "tsv", "xml", "html", "htm", "css", "scss", "js", "mjs",
    "cjs", "jsx", "ts", "tsx", "vue", "svelte", "rs", "go", "java", "kt", "kts", "scala",
    "c", "h", "cc", "cpp", "hpp", "cs", "rb", "php", "pl", "lua", "swift", "dart", "ex",
    "exs", "erl", "hs", "ml", "r", "sh", "bash", "zsh", "fish", "ps1", "bat", "sql", "proto",
    "lock", "log", "mk", "cmake", "gradle", "tf", "in", "pdf", "png", "jpg", "jpeg", "gif",
    "svg", "webp", "zip", "gz", "tar", "whl", "bin", "so", "o", "a", "dll", "exe", "gguf",
    "bak", "orig", "tmp", "dockerfile",
];

/// Whether `word` (lower-case, with or without its dot) is an ending of file names
/// people name ([`FILE_ENDINGS`]).
pub(crate) fn is_file_ending(word: &str) -> bool {
    FILE_ENDINGS.contains(&word.trim_start_matches('.'))
}

/// Whether a word written like a path is a name in code instead (`Session.send`,
/// `os.path.join`): no `/`, no leading dot, and its last part is a name, not a file's
/// ending. Its words are then searched for: asked "What does Session.send do?", a small
/// model with no note answered that it does nothing.
fn code_reference(word: &str) -> bool {
    !word.contains('/')
        && !word.starts_with('.')
        && word.rsplit_once('.').is_some_and(|(stem, ending)| {
            !stem.is_empty()
                && ending.starts_with(char::is_alphabetic)
                && !FILE_ENDINGS.contains(&ending.to_ascii_lowercase().as_str())
        })
}

/// The words of `prompt` worth searching for, in order, each once: names and words of
/// three letters or more that start with a letter, leaving out function words and the
/// words that are part of a file's name (`settings.py`, `src/app`); a name in code
/// written with dots (`Session.send`) gives its words.
pub(crate) fn distinctive_words(prompt: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    prompt
        .split_whitespace()
        .filter(|w| path_word(w).is_none_or(code_reference))
        .flat_map(|w| w.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|w| {
            w.chars().count() >= 3
                && w.chars().next().is_some_and(char::is_alphabetic)
                && !FUNCTION_WORDS.contains(&w.to_lowercase().as_str())
        })
        .filter(|w| seen.insert(w.to_lowercase()))
        .take(MAX_WORDS)
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
#[path = "mentions_tests.rs"]
mod tests;
