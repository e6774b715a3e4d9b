//! An answer given without looking at the workspace, sent back once where small models
//! run, with what it should have looked at in front of the model.
//!
//! Asked "How many functions are defined in shapes.py?", a small model sometimes answers
//! at once, with a number it made up; asked "What is the timeout in the settings?", it
//! calls an edit that is refused and answers with the value it tried to write. No call
//! of such a turn succeeded: nothing the answer says can come from the files. So the
//! turn is not ended; saki makes the call the model skipped itself
//! ([`TurnEndAction::Call`]), once, and the model answers again with its result in
//! front of it (a stopped turn's answer is asked for with the tool results, so a note
//! asking the model to read would not be followed):
//! - the prompt names a file of the workspace: it is read;
//! - otherwise, for a question: the file where the question's own words
//!   (`timeout|settings`) occur most is read, or, when they match nothing, or too much
//!   to point anywhere: for a question about functions or classes ("Which function
//!   reverses a string?", the function being `backwards`), the lines that define them
//!   are searched for; for any other, the README is read;
//! - but a question that asks where something is, or which files do something, is a
//!   search: the workspace is searched for the question's word found in the fewest
//!   files ("Which files import requests?" searches for `requests`, not `import`), so
//!   every file it is in is in front of the model, by path.
//!
//! And a question that asks where, answered after looking with no file named at all
//! ("Where is the database URL set?" answered with the line that sets it), is asked for
//! once more, with the reason ([`TurnEndAction::AskAgain`]): the place is the answer.
//!
//! A question that asks how many tests, functions, classes or TODO comments there are
//! gets, once, whether or not the model looked, a search for the lines that define them
//! (`counted`), in the file or directory it names: the model counts wrong what it has
//! read, and copies the count the search ends on.
//!
//! A request for what a directory holds gets, once, its listing (`listed`), unless the
//! model listed it: one file read is not the answer.
//!
//! A question's turn with any call that succeeded is left alone, as is a change's turn
//! with any call at all, or whose prompt names no file (the change guard and the
//! rewrite answer for those).

mod counted;
mod listed;
pub(crate) mod ran;

use crate::intent::{
    asks_a_question, bare_word, current_turn, lower_words, path_word, read_intent,
};
use crate::mentions::{distinctive_words, search_workspace, word_pattern};
use crate::workspace::Workspace;
use saki_llm_worker::interceptor::{
    Interceptor, LoopStopAction, OwnCall, TurnEndAction, OWN_CALL_PREFIX,
};
use saki_llm_worker::{Item, ToolResultStatus};
use std::sync::Arc;

/// Sends an answer given without looking back once (see the module's documentation).
#[derive(Debug)]
pub struct UnlookedAnswer {
    workspace: Arc<Workspace>,
}

/// Matching lines of the question's words past which they point nowhere (the README is
/// read instead).
const MAX_USEFUL_MATCHES: usize = 40;

impl UnlookedAnswer {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }

    /// The first word of `prompt` that names a file of the workspace.
    async fn named_file(&self, prompt: &str) -> Option<String> {
        for word in path_words(prompt) {
            if self.is_file(word).await {
                return Some(word.to_owned());
            }
        }
        None
    }

    async fn is_file(&self, path: &str) -> bool {
        self.workspace.kind(path).await == Some(crate::fs::Kind::File)
    }

    /// Each file with lines matching `pattern` (ignoring case) and how many, in the
    /// search's order (by path), when the pattern matches some lines and not so many
    /// that they point nowhere.
    async fn matched_files(&self, pattern: String) -> Option<Vec<(String, usize)>> {
        let found = search_workspace(&self.workspace, pattern, MAX_USEFUL_MATCHES).await?;
        if found.total > MAX_USEFUL_MATCHES {
            return None;
        }
        let mut counts: Vec<(String, usize)> = Vec::new();
        for (path, _, _) in &found.matches {
            match counts.iter_mut().find(|(p, _)| p == path) {
                Some((_, n)) => *n += 1,
                None => counts.push((path.clone(), 1)),
            }
        }
        Some(counts)
    }

    /// The file with the most lines matching `pattern` (see [`Self::matched_files`]):
    /// the first of the most matched.
    async fn most_matched_file(&self, pattern: String) -> Option<String> {
        let counts = self.matched_files(pattern).await?;
        let most = counts.iter().map(|(_, n)| *n).max()?;
        counts.into_iter().find(|(_, n)| *n == most).map(|(p, _)| p)
    }

    /// Where the answer to the question `prompt` is looked for: the file where its own
    /// words occur most; else, for a question about the code's functions or classes,
    /// their definitions; else the README.
    async fn file_for_answer(&self, prompt: &str) -> Option<Look> {
        if let Some(pattern) = search_pattern(prompt) {
            if let Some(path) = self.most_matched_file(pattern).await {
                return Some(Look::File(path));
            }
        }
        if asks_about_definitions(prompt) {
            return Some(Look::Definitions);
        }
        for readme in ["README.md", "README", "README.rst", "README.txt"] {
            if self.is_file(readme).await {
                return Some(Look::File(readme.to_owned()));
            }
        }
        None
    }

    /// The search for the answer to a question that asks where: its word found in the
    /// fewest files (at least one; a word matching too many lines points nowhere).
    /// `why` starts the note: why saki searched.
    async fn search_for_place(&self, prompt: &str, why: &str) -> Option<OwnCall> {
        let mut best: Option<(usize, String)> = None;
        for word in distinctive_words(prompt) {
            let pattern = word_pattern(std::slice::from_ref(&word));
            let Some(files) = self.matched_files(pattern).await else {
                continue;
            };
            let count = files.len();
            if count > 0 && best.as_ref().is_none_or(|(fewest, _)| count < *fewest) {
                best = Some((count, word));
            }
        }
        let (_, word) = best?;
        Some(OwnCall {
            name: "grep".into(),
            arguments: serde_json::json!({
                "pattern": word_pattern(std::slice::from_ref(&word)),
                "case_insensitive": true,
            })
            .to_string(),
            note: format!(
                "[{why}, so saki searched the workspace for {word}. Answer from what it \
                 found, naming the files: {}]",
                prompt.trim()
            ),
        })
    }

    /// The first word of `prompt` that names a directory of the workspace ("in the src
    /// folder").
    async fn named_dir(&self, prompt: &str) -> Option<String> {
        for word in prompt.split_whitespace().map(bare_word) {
            let word = word.trim_end_matches('/');
            if !word.is_empty()
                && word != "."
                && self.workspace.kind(word).await == Some(crate::fs::Kind::Dir)
            {
                return Some(word.to_owned());
            }
        }
        None
    }

    /// For a question that asks how many tests, functions, classes or TODO comments
    /// there are, once a turn: the search that counts them (`counted`), in the file or
    /// directory the question names, else the whole workspace; for one that asks how
    /// many files (of a kind) there are, the `glob` that finds them. Made whether or not
    /// the model looked: it counts wrong what it has read.
    async fn count_call(&self, history: &[Item]) -> Option<OwnCall> {
        let (prompt, turn) = current_turn(history)?;
        if read_intent(prompt).change {
            return None;
        }
        let counted_already = turn.iter().any(|item| {
            matches!(item, Item::ToolResult { name, ctx, .. }
                if (name == "grep" || name == "glob") && ctx.call_id.starts_with(OWN_CALL_PREFIX))
        });
        if counted_already {
            return None;
        }
        let counted = counted::counted(prompt);
        let (tool, pattern) = match counted {
            Some((pattern, _)) => ("grep", pattern.to_owned()),
            None => ("glob", counted::counted_files(prompt)?),
        };
        // Definitions are counted in a file too; files only in a directory.
        let named_file = match counted {
            Some(_) => self.named_file(prompt).await,
            None => None,
        };
        let place = match named_file {
            Some(file) => Some(file),
            None => self.named_dir(prompt).await,
        };
        let mut arguments = serde_json::json!({ "pattern": pattern });
        if let Some(place) = &place {
            arguments["path"] = serde_json::Value::from(place.as_str());
        }
        let searched = place.as_deref().unwrap_or("the workspace");
        let found = match counted {
            Some((_, what)) => format!("searched {searched} for {what}"),
            None => format!("listed the files matching {pattern} in {searched}"),
        };
        Some(OwnCall {
            name: tool.into(),
            arguments: arguments.to_string(),
            note: format!(
                "[saki {found}; the result's last line counts them. Answer from that count: \
                 {}]",
                prompt.trim()
            ),
        })
    }

    /// For a request that asks for something to be run and reported on, asking for no
    /// change ("Run checks.py and tell me how many checks fail."), once a turn: the run
    /// (`ran`), when the model ran nothing. An answer from the script's text is what it
    /// looks like it prints, not what it prints.
    async fn run_call(&self, history: &[Item]) -> Option<OwnCall> {
        let (prompt, turn) = current_turn(history)?;
        if read_intent(prompt).change {
            return None;
        }
        let ran = saki_or_model_made(turn, &["shell"]);
        if ran {
            return None;
        }
        let command = match ran::asked_to_run(prompt)? {
            ran::Asked::Command(command) => command.to_owned(),
            ran::Asked::Script(path) if self.is_file(path).await => ran::script_command(path)?,
            ran::Asked::Script(_) => return None,
        };
        Some(OwnCall {
            name: "shell".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            note: format!(
                "[The request asks for `{command}` to be run, so saki ran it. Answer from \
                 its output: {}]",
                prompt.trim()
            ),
        })
    }

    /// For a question that asks which files do something ("Which files have TODO
    /// comments?"), once a turn: the search for it ([`Self::search_for_place`]), made
    /// whether or not the model looked, unless the model searched itself. The answer is
    /// a set of files, and one file read cannot give it: the model names the one it
    /// read.
    async fn files_call(&self, history: &[Item]) -> Option<OwnCall> {
        let (prompt, turn) = current_turn(history)?;
        if !asks_a_question(prompt) || read_intent(prompt).change || !asks_which_files(prompt) {
            return None;
        }
        let searched = saki_or_model_made(turn, &["grep", "glob", "shell"]);
        if searched {
            return None;
        }
        self.search_for_place(prompt, "One file read cannot say which files")
            .await
    }

    /// A question that asks where, answered with no file of the workspace named: asked
    /// again, once.
    async fn placeless_answer(&self, history: &[Item]) -> TurnEndAction {
        let (Some((prompt, _)), Some(Item::AssistantText { text })) =
            (current_turn(history), history.last())
        else {
            return TurnEndAction::Finish;
        };
        if !asks_for_a_place(prompt) {
            return TurnEndAction::Finish;
        }
        // Files of a directory the question names may be named as its entries.
        let dir = self.named_dir(prompt).await;
        for word in path_words(text) {
            let in_dir = dir.as_ref().map(|dir| format!("{dir}/{word}"));
            for path in std::iter::once(word).chain(in_dir.as_deref()) {
                if self.workspace.kind(path).await.is_some() {
                    return TurnEndAction::Finish;
                }
            }
        }
        TurnEndAction::AskAgain(
            "the question asks where, and the answer names no file; say which file, by its \
             path"
                .to_owned(),
        )
    }
}

/// How the answer to a question that asks where is asked for after a stop.
const PLACE_INSTRUCTION: &str = "Using the tool results, write the answer to the request, \
     naming the file or files by their paths. Do not call tools. Do not repeat the request.";

/// Whether `prompt` is a question, asking for no change, whose answer is a place.
fn asks_for_a_place(prompt: &str) -> bool {
    asks_a_question(prompt) && !read_intent(prompt).change && asks_where(prompt)
}

/// Whether `prompt` asks where something is, or which file: its answer is a place.
fn asks_where(prompt: &str) -> bool {
    let words = lower_words(prompt);
    words.iter().any(|w| w == "where")
        || words.windows(2).any(|w| {
            matches!(w[0].as_str(), "which" | "what") && matches!(w[1].as_str(), "file" | "files")
        })
}

/// Whether `turn` holds a call saki made itself, or a call of one of `tools` that
/// succeeded: what saki would do for the model is done.
fn saki_or_model_made(turn: &[Item], tools: &[&str]) -> bool {
    turn.iter().any(|item| match item {
        Item::ToolResult {
            name, status, ctx, ..
        } => {
            ctx.call_id.starts_with(OWN_CALL_PREFIX)
                || (*status == ToolResultStatus::Success && tools.contains(&name.as_str()))
        }
        _ => false,
    })
}

/// Whether `prompt` asks which files (more than one may be the answer).
fn asks_which_files(prompt: &str) -> bool {
    lower_words(prompt)
        .windows(2)
        .any(|w| matches!(w[0].as_str(), "which" | "what") && w[1] == "files")
}

/// Where the answer to a question is looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Look {
    File(String),
    /// The definitions of the workspace's functions and classes.
    Definitions,
}

/// Words that ask about the code's named parts.
const DEFINITION_WORDS: &[&str] = &[
    "function",
    "functions",
    "method",
    "methods",
    "class",
    "classes",
];

/// Whether `prompt` asks about the code's functions or classes ("Which function reverses
/// a string?"): when its other words match nothing (the function is `backwards`), the
/// names of what the code defines are where the answer is.
fn asks_about_definitions(prompt: &str) -> bool {
    lower_words(prompt)
        .iter()
        .any(|word| DEFINITION_WORDS.contains(&word.as_str()))
}

/// The search for the definitions of the workspace's functions and classes.
fn definitions_call(prompt: &str) -> OwnCall {
    OwnCall {
        name: "grep".into(),
        arguments: serde_json::json!({ "pattern": counted::definitions() }).to_string(),
        note: format!(
            "[The answer was given without looking, so saki listed the functions and \
             classes the workspace defines. Answer from what it found, naming the one meant: \
             {}]",
            prompt.trim()
        ),
    }
}

/// The call that reads `path` for the answer to `prompt`.
fn read_call(path: &str, prompt: &str) -> OwnCall {
    OwnCall {
        name: "read_file".into(),
        arguments: serde_json::json!({ "path": path }).to_string(),
        note: format!(
            "[The answer was given without reading any file, so saki read {path}. Answer \
             from what it holds: {}]",
            prompt.trim()
        ),
    }
}

/// The question's own words ([`distinctive_words`]) as one pattern, when it has any.
fn search_pattern(prompt: &str) -> Option<String> {
    let words = distinctive_words(prompt);
    (!words.is_empty()).then(|| word_pattern(&words))
}

#[async_trait::async_trait]
impl Interceptor for UnlookedAnswer {
    /// A question that asks where is answered, after a stop, by the file's path.
    async fn on_loop_stop(&self, history: &[Item]) -> LoopStopAction {
        match current_turn(history) {
            Some((prompt, _)) if asks_for_a_place(prompt) => {
                LoopStopAction::AnswerWith(PLACE_INSTRUCTION.to_owned())
            }
            _ => LoopStopAction::Answer,
        }
    }

    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        if let Some(call) = self.count_call(history).await {
            return TurnEndAction::Call(call);
        }
        if let Some(call) = self.listing_call(history).await {
            return TurnEndAction::Call(call);
        }
        if let Some(call) = self.files_call(history).await {
            return TurnEndAction::Call(call);
        }
        if let Some(call) = self.run_call(history).await {
            return TurnEndAction::Call(call);
        }
        let Some(prompt) = unlooked_prompt(history) else {
            return self.placeless_answer(history).await;
        };
        if let Some(path) = self.named_file(prompt).await {
            return TurnEndAction::Call(read_call(&path, prompt));
        }
        if read_intent(prompt).change || !asks_a_question(prompt) {
            return TurnEndAction::Finish;
        }
        if asks_where(prompt) {
            if let Some(call) = self
                .search_for_place(prompt, "The answer was given without looking")
                .await
            {
                return TurnEndAction::Call(call);
            }
        }
        match self.file_for_answer(prompt).await {
            Some(Look::File(path)) => TurnEndAction::Call(read_call(&path, prompt)),
            Some(Look::Definitions) => TurnEndAction::Call(definitions_call(prompt)),
            None => TurnEndAction::Finish,
        }
    }
}

/// The prompt of a turn that did not look, where saki has not looked already: a
/// question's turn with no call that succeeded, a change's turn with no call at all (its
/// refused calls are the change guard's and the rewrite's to answer).
fn unlooked_prompt(history: &[Item]) -> Option<&str> {
    let (text, turn) = current_turn(history)?;
    let question = !read_intent(text).change;
    let looked = turn.iter().any(|item| match item {
        Item::ToolResult { status, ctx, .. } => {
            *status == ToolResultStatus::Success
                || ctx.call_id.starts_with(OWN_CALL_PREFIX)
                || !question
        }
        _ => false,
    });
    (!looked).then_some(text)
}

/// Words of `prompt` written like paths ([`path_word`]).
fn path_words(prompt: &str) -> impl Iterator<Item = &str> {
    prompt.split_whitespace().filter_map(path_word)
}

#[cfg(test)]
mod tests;
