//! Changes nobody asked for, refused where small models run.
//!
//! A small model calls the tools it is shown, whether the request needs them or not:
//! asked "What does add in calc.py do?", a 0.5B model wrote calc.py three times; asked to
//! change one line, one deleted the whole file. Undo restores both, but only when the
//! person notices. So for these models a turn's prompt decides what its calls may do:
//!
//! - a prompt that asks for no change (a question, or a request to read, run or explain)
//!   gets no file written, edited or deleted;
//! - a file is deleted only when the prompt asks for something to go (delete, remove,
//!   move, rename, clean up, ...);
//! - a prompt that asks only to add (add, append, insert, include) gets no edit that
//!   takes text out: asked to add a dependency, a 0.5B model replaced the one already
//!   listed; asked to add a section, it replaced the paragraph above it.
//!
//! Why the prompt and not the call: the call is what the model got wrong, and only the
//! person's words say what was wanted. Why only small models: a larger model that fixes
//! what a question revealed, or deletes a file while moving code, usually means it; the
//! person's approval mode governs those. The reading errs towards allowing: any word that
//! could ask for a change outside a question lets the turn change files, so a refusal
//! happens only when no part of the prompt asks for one.

use saki_llm_worker::interceptor::{
    Interceptor, LoopStopAction, PromptAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use saki_llm_worker::{Item, ToolResultStatus};
use std::sync::Mutex;

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intent {
    /// Some sentence asks for a change to files.
    pub change: bool,
    /// Some sentence asks for a file to be removed, moved or renamed.
    pub removal: bool,
    /// Some sentence asks for something, a file or a part of one, to be removed, moved
    /// or renamed.
    pub reshapes: bool,
    /// Every sentence that asks for a change asks only to add something.
    pub additive: bool,
    /// Every sentence that asks for a change asks only for something to be taken out.
    pub subtractive: bool,
}

/// Stems of words that ask for a change. A missing one refuses a wanted change; a false
/// match lets a question's turn change files, and asks a stopped turn for an edit. So
/// verbs whose stems also open nouns of code talk (`handler`, `export`, `limit`) are
/// left out.
const CHANGE_STEMS: &[&str] = &[
    "add",
    "append",
    "adjust",
    "apply",
    "bump",
    "chang",
    "capitaliz",
    "clean",
    "comment",
    "convert",
    "copy",
    "correct",
    "creat",
    "decreas",
    "dedent",
    "delet",
    "disabl",
    "discard",
    "drop",
    "duplicat",
    "edit",
    "enabl",
    "enforc",
    "eras",
    "extract",
    "fill",
    "fix",
    "format",
    "generat",
    "giv",
    "get rid",
    "implement",
    "improv",
    "includ",
    "increas",
    "initiali",
    "insert",
    "instal",
    "introduc",
    "lower",
    "make",
    "mark",
    "merg",
    "modif",
    "mov",
    "optimi",
    "patch",
    "prepend",
    "prun",
    "purg",
    "put",
    "rais",
    "refactor",
    "reformat",
    "reorder",
    "remov",
    "renam",
    "repair",
    "replac",
    "restor",
    "revert",
    "rewrit",
    "rm",
    "sav",
    "scal",
    "set",
    "shorten",
    "simplif",
    "sort",
    "split",
    "store",
    "swap",
    "switch",
    "take",
    "translat",
    "tweak",
    "toggl",
    "turn",
    "uncomment",
    "undo",
    "unlink",
    "updat",
    "upgrad",
    "downgrad",
    "wip",
    "writ",
    "wrot",
    "chmod",
    "touch",
    "mkdir",
];

/// Stems of words that ask to look at files, not to change them. A sentence about a
/// file that has none of these and no change word, in a prompt with no question, asks
/// for a change in other words: "In script.py, only call main() when the file is run
/// directly."; "report.py crashes with a KeyError." (the words of a clause that opens
/// with `when`, `where`, ... are left out first, see `without_embedded_questions`).
const LOOKING_STEMS: &[&str] = &[
    "analy",
    "cat",
    "check",
    "compar",
    "count",
    "describ",
    "display",
    "explain",
    "execut",
    "find",
    "grep",
    "inspect",
    "know",
    "list",
    "locat",
    "look",
    "open",
    "print",
    "read",
    "review",
    "run",
    "search",
    "see",
    "show",
    "summar",
    "tell",
    "test",
    "understand",
    "verif",
    "view",
];

/// What may follow a stem of three letters or fewer.
const SHORT_ENDINGS: &[&str] = &["", "s", "e", "es", "ed", "d", "ing", "ting", "ding"];

/// Stems that ask for something to go (a file may then be deleted).
const REMOVAL_STEMS: &[&str] = &[
    "delet", "remov", "rm", "eras", "unlink", "get rid", "clean", "drop", "purg", "wip", "discard",
    "prun", "mov", "renam",
];

/// Stems that ask only for something to be added.
const ADDITION_STEMS: &[&str] = &["add", "append", "prepend", "insert", "includ"];

/// Stems that ask only for something to be taken out (not moved or renamed).
const TAKING_STEMS: &[&str] = &[
    "delet", "remov", "eras", "get rid", "drop", "purg", "discard", "prun", "take",
];

/// Stems of the parts of a file a removal may name instead of the file itself.
const PART_STEMS: &[&str] = &[
    "line",
    "row",
    "column",
    "entr",
    "key",
    "field",
    "valu",
    "word",
    "comment",
    "section",
    "paragraph",
    "heading",
    "function",
    "method",
    "class",
    "import",
    "statement",
    "block",
    "setting",
    "option",
    "dependenc",
    "element",
    "variabl",
    "paramet",
    "argument",
    "test case",
    "rule",
    "header",
    "occurrence",
];

/// `sentence` without the words that name files (`items.json`, `src/line.rs`): a part
/// word in a file's name does not make the file a part.
/// Words that open a question inside a sentence ("explain what add does").
const EMBEDDED_OPENERS: &[&str] = &[
    "what", "which", "how", "where", "why", "when", "whether", "who", "whose",
];

/// Words that end such a question: the next clause of the sentence.
const CLAUSE_BREAKS: &[&str] = &["and", "then"];

/// `sentence` without the questions inside it: from a question word that does not open
/// the sentence to the next `and`, `then` or comma. Their words ask nothing of the
/// files: "Read calc.py and explain what add does" asks for no change, though `add` is a
/// change word, nor does "Explain how to sort the list"; "Find where the port is set,
/// then change it" still asks for one.
fn without_embedded_questions(sentence: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut inside = false;
    for (at, token) in sentence.split_whitespace().enumerate() {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        if inside && CLAUSE_BREAKS.contains(&word) {
            inside = false;
        }
        if !inside && at > 0 && EMBEDDED_OPENERS.contains(&word) {
            inside = true;
        }
        if !inside {
            kept.push(token);
        }
        if inside && token.ends_with(',') {
            inside = false;
        }
    }
    kept.join(" ")
}

/// Change words that, followed by `me` or `us`, ask to be told something ("give me an
/// overview").
const TELLING_WORDS: &[&str] = &["give", "gives"];

/// `sentence` without a change word that asks to be told something instead.
fn without_asks_to_be_told(sentence: &str) -> String {
    let tokens: Vec<&str> = sentence.split_whitespace().collect();
    tokens
        .iter()
        .enumerate()
        .filter(|(at, token)| {
            let to = tokens.get(at + 1).map(|t| bare_word(t));
            !(TELLING_WORDS.contains(&bare_word(token)) && matches!(to, Some("me" | "us")))
        })
        .map(|(_, token)| *token)
        .collect::<Vec<_>>()
        .join(" ")
}

fn without_paths(sentence: &str) -> String {
    sentence
        .split_whitespace()
        .filter(|w| path_word(w).is_none())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The ignore file a request to ignore something in git or docker means ("Ignore the
/// dist folder in git." is a change of `.gitignore`), when some sentence that is not a
/// question asks that.
pub(crate) fn ignore_file(prompt: &str) -> Option<&'static str> {
    sentences(prompt).iter().find_map(|sentence| {
        if is_question(sentence) || !mentions(sentence, &["ignor"]) {
            return None;
        }
        let words = lower_words(sentence);
        if words.iter().any(|w| w == "git") {
            Some(".gitignore")
        } else if words.iter().any(|w| w == "docker") {
            Some(".dockerignore")
        } else {
            None
        }
    })
}

/// Whether a word of `sentence` that asks for something to go ([`REMOVAL_STEMS`]) has
/// a path for its object, with at most `the`/`file` between ("delete the file tmp.log",
/// "rename helpers.py to …").
fn removes_a_named_file(sentence: &str) -> bool {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    words.iter().enumerate().any(|(at, word)| {
        let verb = bare_word(word).to_lowercase();
        let removes = REMOVAL_STEMS
            .iter()
            .any(|stem| !stem.contains(' ') && verb.starts_with(stem));
        removes
            && words[at + 1..]
                .iter()
                .find(|w| !matches!(bare_word(w), "the" | "file"))
                .is_some_and(|object| path_word(object).is_some())
    })
}

/// `word` as a path when it is written like one: with a `/`, or a dot inside or in front
/// (`shapes.py`, `.env`), taken out of the quotes and closing marks around it
/// (`` `shapes.py`? `` and `"calc.py".`).
pub(crate) fn path_word(word: &str) -> Option<&str> {
    let word = bare_word(word);
    (word.len() > 1 && (word.contains('/') || word.contains('.'))).then_some(word)
}

/// `word` out of the quotes, brackets and closing marks around it (`` `VERSION`. `` is
/// `VERSION`).
pub(crate) fn bare_word(word: &str) -> &str {
    const AROUND: [char; 13] = [
        '`', '"', '\'', '(', ')', '[', ']', '<', '>', ',', ';', ':', '!',
    ];
    word.trim_matches(AROUND)
        .trim_end_matches(['.', '?'])
        .trim_matches(AROUND)
}

/// The prompt of the turn `history` ends in, and that turn's items from its prompt on.
pub(crate) fn current_turn(history: &[Item]) -> Option<(&str, &[Item])> {
    let start = history
        .iter()
        .rposition(|item| matches!(item, Item::User { .. }))?;
    match &history[start] {
        Item::User { text } => Some((text, &history[start..])),
        _ => None,
    }
}

/// Words that open a question about how things are (`can`, `could`, `would`, `will` and
/// `please` open requests instead: "Can you fix it?").
const QUESTION_OPENERS: &[&str] = &[
    "what", "which", "where", "who", "whom", "whose", "why", "how", "when", "does", "do", "did",
    "is", "are", "was", "were", "has", "have", "had", "should",
];

/// Reads what `prompt` asks for.
pub fn read_intent(prompt: &str) -> Intent {
    let mut intent = Intent {
        change: false,
        removal: false,
        reshapes: false,
        additive: false,
        subtractive: false,
    };
    let mut other_change = false;
    let mut not_taking = false;
    let questions = asks_a_question(prompt);
    for sentence in sentences(prompt) {
        if is_question(&sentence) {
            continue;
        }
        let names_a_file = sentence.split_whitespace().any(|w| path_word(w).is_some());
        let file_goes = removes_a_named_file(&sentence);
        // A file's name asks nothing: `changelog.md` is not "change", `setup.py` not "set".
        let sentence = without_paths(&without_asks_to_be_told(&without_embedded_questions(
            &sentence,
        )));
        if !mentions(&sentence, CHANGE_STEMS) && ignore_file(&sentence).is_none() {
            if names_a_file && !questions && !mentions(&sentence, LOOKING_STEMS) {
                intent.change = true;
                other_change = true;
                not_taking = true;
            }
            continue;
        }
        intent.change = true;
        let reshapes = mentions(&sentence, REMOVAL_STEMS);
        intent.reshapes |= reshapes;
        // "Remove the DEBUG line" asks for a line to go, not the file.
        // … unless its verb's object is a file ("Rename helpers.py to utils.py and update
        // the import in main.py.").
        intent.removal |= reshapes && (file_goes || !mentions(&sentence, PART_STEMS));
        if asks_only_to_add(&sentence) {
            intent.additive = true;
        } else {
            other_change = true;
        }
        if asks_only(&sentence, TAKING_STEMS) {
            intent.subtractive = true;
        } else {
            not_taking = true;
        }
    }
    intent.additive &= !other_change;
    intent.subtractive &= !not_taking;
    intent
}

/// How many words of `prompt` ask for something to go ([`REMOVAL_STEMS`]).
pub(crate) fn removal_words(prompt: &str) -> usize {
    let lower = prompt.to_lowercase();
    let words = words(&lower);
    (0..words.len())
        .filter(|&at| REMOVAL_STEMS.iter().any(|stem| stem_at(&words, at, stem)))
        .count()
}

/// Whether `word` is a word that asks for a change.
pub(crate) fn change_word(word: &str) -> bool {
    mentions(word, CHANGE_STEMS)
}

/// Whether the change words of `sentence` are all among `stems`.
fn asks_only(sentence: &str, stems: &[&str]) -> bool {
    let others: Vec<&str> = CHANGE_STEMS
        .iter()
        .filter(|stem| !stems.contains(stem))
        .copied()
        .collect();
    mentions(sentence, stems) && !mentions(sentence, &others)
}

/// Whether the change `sentence` asks for is only an addition: an addition stem, no other
/// change stem (any other word that may ask for a change makes it a change of any kind),
/// and no number right after `add` ("add 1 to the version" is arithmetic).
fn asks_only_to_add(sentence: &str) -> bool {
    let words = words(sentence);
    let arithmetic = words.windows(2).any(|w| {
        w[0].starts_with("add") && w[1].chars().next().is_some_and(|c| c.is_ascii_digit())
    });
    asks_only(sentence, ADDITION_STEMS) && !arithmetic
}

/// Whether every character of `old` stays, in order, in `new`: `new` only adds to `old`
/// (`def greet(name):` → `def greet(name='world'):`).
fn only_adds(old: &str, new: &str) -> bool {
    let mut kept = new.chars();
    old.chars().all(|c| kept.any(|n| n == c))
}

/// Whether replacing `old` by `new` goes against `intent`: the request asks only to add
/// and `new` drops some of `old`, or only to take out and `new` keeps all of it.
pub(crate) fn against_intent(intent: Intent, old: &str, new: &str) -> bool {
    let keeps_all = only_adds(old.trim_end(), new);
    (intent.additive && !keeps_all) || (intent.subtractive && keeps_all)
}

/// The prompt's sentences, lower-cased, each with its closing mark. Dots inside a word
/// (`calc.py`, `3.14`) do not end a sentence.
fn sentences(prompt: &str) -> Vec<String> {
    let lower = prompt.to_lowercase();
    let chars: Vec<char> = lower.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        current.push(c);
        let next_blank = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        if matches!(c, '?' | '!' | '\n') || (matches!(c, '.' | ';') && next_blank) {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The words of `text`, lower-cased: its runs of letters and digits.
pub(crate) fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn words(sentence: &str) -> Vec<&str> {
    sentence
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether some sentence of `prompt` is a question ("What is the timeout?"; not "Run
/// the tests.").
pub(crate) fn asks_a_question(prompt: &str) -> bool {
    sentences(prompt)
        .iter()
        .any(|s| is_question(s) || s.trim_end().ends_with('?'))
}

/// Whether some sentence of `prompt` that is not a question asks for something to be
/// moved ("Move helper from a.py to b.py"): its new place needs the text it comes from.
pub(crate) fn asks_to_move(prompt: &str) -> bool {
    sentences(prompt)
        .iter()
        .any(|s| !is_question(s) && mentions(s, &["mov"]))
}

fn is_question(sentence: &str) -> bool {
    let words = words(sentence);
    words
        .first()
        .is_some_and(|first| QUESTION_OPENERS.contains(first))
}

/// Whether a word of `sentence` starts with one of `stems` (two-word stems match two
/// words in a row).
fn mentions(sentence: &str, stems: &[&str]) -> bool {
    let words = words(sentence);
    (0..words.len()).any(|at| stems.iter().any(|stem| stem_at(&words, at, stem)))
}

/// Whether `words[at]` (and the word after it, for a stem of two words) is `stem`.
fn stem_at(words: &[&str], at: usize, stem: &str) -> bool {
    let word = words[at];
    match stem.split_once(' ') {
        Some((first, second)) => {
            word == first && words.get(at + 1).is_some_and(|w| w.starts_with(second))
        }
        // Short stems take only inflections: `set`, `sets`, `setting`, but not
        // `settings.py`'s first word, which names a file.
        None if stem.len() <= 3 => word
            .strip_prefix(stem)
            .is_some_and(|rest| SHORT_ENDINGS.contains(&rest)),
        None => word.starts_with(stem),
    }
}

/// Tools that change files, by what they can do.
pub(crate) fn changes_files(name: &str) -> bool {
    matches!(name, "write_file" | "edit" | "delete_file")
}

/// Refuses, for the turn whose prompt it read, the calls that prompt did not ask for
/// (see the module's documentation).
#[derive(Debug, Default)]
pub struct ChangeGuard {
    intent: Mutex<Option<Intent>>,
    /// The text of each file the turn read whole, by the path the model wrote: what a
    /// `write_file` over it must keep when the request asks only to add.
    read: Mutex<Vec<(String, String)>>,
}

impl ChangeGuard {
    pub fn new() -> Self {
        Self::default()
    }

    /// What this turn's prompt asks for, once it has been read.
    fn read(&self) -> Option<Intent> {
        self.intent.lock().ok().and_then(|i| *i)
    }

    /// Why `name` may not run in a turn that asks for `intent`, if it may not.
    pub fn refusal(intent: Intent, name: &str) -> Option<String> {
        if !changes_files(name) {
            return None;
        }
        if !intent.change {
            return Some(format!(
                "{name} changes files, and the request asks for no change. Leave \
                 the files as they are and answer in text from what you have read."
            ));
        }
        if name == "delete_file" && !intent.removal {
            return Some(
                "the request does not ask to delete a file. To take lines out of a \
                 file, call edit with those lines as old_string and the text without them as \
                 new_string."
                    .to_owned(),
            );
        }
        None
    }

    /// The text the turn read of `path`, whole.
    fn text_read(&self, path: &str) -> Option<String> {
        let read = self.read.lock().ok()?;
        read.iter()
            .rev()
            .find(|(p, _)| p == path)
            .map(|(_, text)| text.clone())
    }

    /// Why a `write_file` with `input` may not run in a turn that asks for `intent`, over
    /// a file the turn read: when the turn asks only to add and the new text drops some
    /// of the file, or only to take out and the new text keeps all of it.
    fn write_against_intent(&self, intent: Intent, input: &serde_json::Value) -> Option<String> {
        if !intent.additive && !intent.subtractive {
            return None;
        }
        let old = self.text_read(input.get("path")?.as_str()?)?;
        let new = input.get("content")?.as_str()?;
        if !against_intent(intent, &old, new) {
            return None;
        }
        Some(if intent.additive {
            "the request asks to add, and this text leaves out some of what the file \
             holds. Write the file's whole text as it is, with the addition."
                .to_owned()
        } else {
            TAKES_NOTHING_OUT.to_owned()
        })
    }

    /// Why an `edit` with `input` may not run in a turn that asks only for something to be
    /// taken out, when the edit takes nothing out (asked to remove a line, a 0.5B model
    /// appended `DEBUG = False` after `DEBUG = True`).
    pub fn addition_in_removal(intent: Intent, input: &serde_json::Value) -> Option<String> {
        if !intent.subtractive {
            return None;
        }
        let old = input.get("old_string")?.as_str()?;
        let new = input.get("new_string")?.as_str()?;
        (old.is_empty() || only_adds(old, new)).then(|| TAKES_NOTHING_OUT.to_owned())
    }

    /// Why an `edit` with `input` may not run in a turn that asks for `intent`, when the
    /// turn asks only to add and the edit takes text out.
    pub fn removal_in_addition(intent: Intent, input: &serde_json::Value) -> Option<String> {
        if !intent.additive {
            return None;
        }
        let old = input.get("old_string")?.as_str()?;
        let new = input.get("new_string")?.as_str()?;
        if old.is_empty() || only_adds(old, new) {
            return None;
        }
        let shown: String = old.chars().take(80).collect();
        Some(format!(
            "the request asks to add, and this edit would take out text of the \
             file ({shown:?}). Keep old_string's text in new_string and add to it, or send an \
             empty old_string to add new_string as a line at the end of the file."
        ))
    }
}

/// The refusal of a change that takes nothing out, in a turn that asks only for
/// something to be taken out.
const TAKES_NOTHING_OUT: &str = "the request asks to take something out, and this change \
     takes nothing out of the file. Put the lines to remove in old_string and leave them out \
     of new_string.";

/// What a stopped turn is asked for before its answer when its prompt asked for a change
/// and none was made.
pub const CHANGE_INSTRUCTION: &str =
    "Using the tool results, make the change the request asks for now, with one edit call.";

/// Whether a `read_file` result shows a whole file: no page cut, not a directory's
/// entries.
fn whole_file(content: &str) -> bool {
    let first = content.lines().next().unwrap_or("");
    let directory = first.starts_with('[') && first.ends_with("its entries:]");
    !directory && !content.contains("[...truncated")
}

/// What a stopped turn that made the change it was asked for is asked for instead of the
/// usual answer: asked only for "the answer", a small model that had bumped a version
/// explained how to bump it, as if nothing were done. It asks what the results show, not
/// that the request is done (the change made may not be the one asked for), and about the
/// edit, not "which files": asked that, the model listed every file of the prompt.
pub const MADE_INSTRUCTION: &str = "Using the tool results, say in one sentence what the \
     edit changed. Do not explain how to make the change. Do not call tools.";

/// Whether a call of a tool that changes files succeeded in `turn`.
fn changed_files(turn: &[Item]) -> bool {
    turn.iter().any(|item| {
        matches!(item, Item::ToolResult { name, status: ToolResultStatus::Success, .. }
            if changes_files(name))
    })
}

#[async_trait::async_trait]
impl Interceptor for ChangeGuard {
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        if let Item::User { text } = user {
            if let Ok(mut intent) = self.intent.lock() {
                *intent = Some(read_intent(text));
            }
            if let Ok(mut read) = self.read.lock() {
                read.clear();
            }
        }
        PromptAction::Continue
    }

    /// A small model stopped looping on a change request has usually read what it needed
    /// and then described the change instead of making it (asked to give an argument a
    /// default, it read the file twice and answered that the default was set). Its last
    /// request then asks for the change, with the request and what the tools returned in
    /// one message, before it answers. One that made a change is asked to say what it
    /// changed ([`MADE_INSTRUCTION`]).
    async fn on_loop_stop(&self, history: &[Item]) -> LoopStopAction {
        let asked_change = self.read().is_some_and(|i| i.change);
        match current_turn(history) {
            Some((_, turn)) if asked_change && !changed_files(turn) => LoopStopAction::Call {
                tools: vec!["edit".to_owned()],
                instruction: CHANGE_INSTRUCTION.to_owned(),
            },
            Some(_) if asked_change => LoopStopAction::AnswerWith(MADE_INSTRUCTION.to_owned()),
            _ => LoopStopAction::Answer,
        }
    }

    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        let intent = self.read();
        // No prompt read (a turn that started otherwise): nothing to judge by.
        let refusal = intent.and_then(|intent| {
            Self::refusal(intent, &call.name).or_else(|| match call.name.as_str() {
                "edit" => Self::removal_in_addition(intent, &call.input)
                    .or_else(|| Self::addition_in_removal(intent, &call.input)),
                "write_file" => self.write_against_intent(intent, &call.input),
                _ => None,
            })
        });
        match refusal {
            Some(why) => {
                tracing::debug!(tool = %call.name, "a change the prompt did not ask for");
                ToolAction::Deny(why)
            }
            None => ToolAction::Allow,
        }
    }

    async fn post_tool_call(&self, result: &ToolResultInfo) {
        let from_start = result
            .call
            .input
            .get("offset")
            .and_then(serde_json::Value::as_u64)
            .is_none_or(|offset| offset <= 1);
        let path = result.call.input.get("path").and_then(|p| p.as_str());
        if result.call.name != "read_file"
            || result.status != ToolResultStatus::Success
            || !from_start
            || !whole_file(&result.content)
        {
            return;
        }
        if let (Some(path), Ok(mut read)) = (path, self.read.lock()) {
            // Without the notes read_file adds (`[3 lines in all]`), as the echo check reads them.
            read.push((
                path.to_owned(),
                crate::echo::without_notes(&result.content, ""),
            ));
        }
    }
}

#[cfg(test)]
#[path = "intent_tests.rs"]
mod tests;
