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
//! A question's turn with any call that succeeded is left alone, as is a change's turn
//! with any call at all, or whose prompt names no file (the change guard and the
//! rewrite answer for those).

mod counted;
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
    /// directory the question names, else the whole workspace. Made whether or not the
    /// model looked: it counts wrong what it has read.
    async fn count_call(&self, history: &[Item]) -> Option<OwnCall> {
        let (prompt, turn) = current_turn(history)?;
        if read_intent(prompt).change {
            return None;
        }
        let (pattern, what) = counted::counted(prompt)?;
        let counted_already = turn.iter().any(|item| {
            matches!(item, Item::ToolResult { name, ctx, .. }
                if name == "grep" && ctx.call_id.starts_with(OWN_CALL_PREFIX))
        });
        if counted_already {
            return None;
        }
        let place = match self.named_file(prompt).await {
            Some(file) => Some(file),
            None => self.named_dir(prompt).await,
        };
        let mut arguments = serde_json::json!({ "pattern": pattern });
        if let Some(place) = &place {
            arguments["path"] = serde_json::Value::from(place.as_str());
        }
        let searched = place.as_deref().unwrap_or("the workspace");
        Some(OwnCall {
            name: "grep".into(),
            arguments: arguments.to_string(),
            note: format!(
                "[saki searched {searched} for {what}; the result's last line counts \
                 them. Answer from that count: {}]",
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
        for word in path_words(text) {
            if self.workspace.kind(word).await.is_some() {
                return TurnEndAction::Finish;
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
mod tests {
    use super::*;
    use crate::test_support::workspace_with;
    use saki_llm_worker::tool::ToolExecutionContext;

    fn ctx(call_id: &str) -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: call_id.into(),
            batch_id: "b".into(),
            call_index: 0,
        }
    }

    fn result(call_id: &str, status: ToolResultStatus) -> Item {
        Item::ToolResult {
            name: "read_file".into(),
            status,
            content: "x".into(),
            ctx: ctx(call_id),
        }
    }

    fn answered(prompt: &str, between: Vec<Item>) -> Vec<Item> {
        let mut history = vec![Item::user(prompt)];
        history.extend(between);
        history.push(Item::AssistantText { text: "2".into() });
        history
    }

    /// The file the turn end reads, if it reads one.
    async fn read_at_end(files: &[(&str, &str)], history: &[Item]) -> Option<String> {
        let (_dir, workspace) = workspace_with(files);
        match UnlookedAnswer::new(workspace).on_turn_end(history).await {
            TurnEndAction::Call(call) => {
                assert_eq!(call.name, "read_file");
                let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
                Some(input["path"].as_str().unwrap().to_owned())
            }
            TurnEndAction::Finish => None,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn path_words_are_the_words_written_like_paths() {
        let words: Vec<&str> =
            path_words("How many functions are in `shapes.py`? See src/lib.rs, .env and e.g. 3.5.")
                .collect();
        assert_eq!(words, ["shapes.py", "src/lib.rs", ".env", "e.g", "3.5"]);
    }

    #[test]
    fn a_question_s_own_words_are_searched_for() {
        assert_eq!(
            search_pattern("What is the timeout in the settings?"),
            Some(word_pattern(&["timeout".into(), "settings".into()]))
        );
        assert_eq!(search_pattern("What does this do?"), None);
    }

    #[test]
    fn only_a_turn_with_no_call_that_succeeded_and_no_own_look_is_unlooked() {
        let q = "How many functions are in shapes.py?";
        assert_eq!(unlooked_prompt(&answered(q, vec![])), Some(q));
        let refused = vec![result("c1", ToolResultStatus::Denied)];
        assert_eq!(unlooked_prompt(&answered(q, refused)), Some(q));
        let read = vec![result("c1", ToolResultStatus::Success)];
        assert_eq!(unlooked_prompt(&answered(q, read)), None);
        let own = format!("{OWN_CALL_PREFIX}b1");
        let looked = vec![result(&own, ToolResultStatus::Error)];
        assert_eq!(unlooked_prompt(&answered(q, looked)), None);
        // A change's refused call is the change guard's and the rewrite's to answer.
        let change = "Fix shapes.py.";
        assert_eq!(unlooked_prompt(&answered(change, vec![])), Some(change));
        let refused = vec![result("c1", ToolResultStatus::Denied)];
        assert_eq!(unlooked_prompt(&answered(change, refused)), None);
    }

    #[tokio::test]
    async fn an_unlooked_answer_reads_the_named_file_or_where_the_question_points() {
        let files = [
            ("shapes.py", "def a():\n    pass\n"),
            ("README.md", "# weather\n\nFetches forecasts.\n"),
            ("conf/app/settings.ini", "[net]\ntimeout = 30\n"),
            ("main.py", "print(0)\n"),
        ];
        let refused = || vec![result("c1", ToolResultStatus::Denied)];
        let named = answered("What does shapes.py do?", refused());
        assert_eq!(
            read_at_end(&files, &named).await.as_deref(),
            Some("shapes.py")
        );
        let deep = answered("What is the timeout in the settings?", refused());
        assert_eq!(
            read_at_end(&files, &deep).await.as_deref(),
            Some("conf/app/settings.ini")
        );
        let about = answered("What does this project do?", vec![]);
        assert_eq!(
            read_at_end(&files, &about).await.as_deref(),
            Some("README.md")
        );
        // A change with no file named is the change guard's and the rewrite's.
        let change = answered("Set the timeout to 60.", refused());
        assert_eq!(read_at_end(&files, &change).await, None);
        let run = answered("Run the tests.", vec![]);
        assert_eq!(read_at_end(&files, &run).await, None);
        let looked = answered(
            "What does this project do?",
            vec![result("c1", ToolResultStatus::Success)],
        );
        assert_eq!(read_at_end(&files, &looked).await, None);
    }

    #[tokio::test]
    async fn a_question_about_functions_whose_words_match_nothing_lists_the_definitions() {
        let files = [
            (
                "utils/strings.py",
                "def shout(s):\n    return s.upper()\n\n\ndef backwards(s):\n    return s[::-1]\n",
            ),
            ("app.py", "print(1)\n"),
        ];
        let (_dir, workspace) = workspace_with(&files);
        let unlooked = UnlookedAnswer::new(workspace.clone());
        let history = answered("Which function reverses a string?", vec![]);
        let TurnEndAction::Call(call) = unlooked.on_turn_end(&history).await else {
            panic!("no call");
        };
        assert_eq!(call.name, "grep");
        let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        let pattern = regex::Regex::new(input["pattern"].as_str().unwrap()).unwrap();
        for line in [
            "def backwards(s):",
            "    async def f():",
            "export function go() {",
            "fn main() {",
        ] {
            assert!(pattern.is_match(line), "{line}");
        }
        for line in ["    return s[::-1]", "# define the class", "defaults = 1"] {
            assert!(!pattern.is_match(line), "{line}");
        }
        // A question about something else, with no README: nothing to read.
        let other = answered("What does this do?", vec![]);
        assert!(matches!(
            unlooked.on_turn_end(&other).await,
            TurnEndAction::Finish
        ));
    }

    #[tokio::test]
    async fn a_question_that_asks_how_many_is_counted_once_in_the_place_it_names() {
        let files = [
            (
                "test_math.py",
                "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n",
            ),
            ("src/a.py", "# TODO: one\n"),
            ("README.md", "# x\n"),
        ];
        let (_dir, workspace) = workspace_with(&files);
        let unlooked = UnlookedAnswer::new(workspace);
        let searched = |action: TurnEndAction| match action {
            TurnEndAction::Call(call) if call.name == "grep" => {
                let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
                (
                    input["pattern"].as_str().unwrap().to_owned(),
                    input["path"].clone(),
                )
            }
            other => panic!("{other:?}"),
        };
        // Looked or not, the count is searched for.
        let read = vec![result("c1", ToolResultStatus::Success)];
        let (pattern, path) = searched(
            unlooked
                .on_turn_end(&answered("How many tests are in test_math.py?", read))
                .await,
        );
        assert!(pattern.contains("test"), "{pattern}");
        assert_eq!(path, "test_math.py");
        let (pattern, path) = searched(
            unlooked
                .on_turn_end(&answered(
                    "How many TODO comments are in the src folder?",
                    vec![],
                ))
                .await,
        );
        assert_eq!((pattern.as_str(), path), ("TODO", serde_json::json!("src")));
        // Once: after saki's own search, the answer stands.
        let own = format!("{OWN_CALL_PREFIX}b1");
        let counted = vec![Item::ToolResult {
            name: "grep".into(),
            status: ToolResultStatus::Success,
            content: "[2 matching lines in 1 file]".into(),
            ctx: ctx(&own),
        }];
        let again = unlooked
            .on_turn_end(&answered("How many tests are in test_math.py?", counted))
            .await;
        assert!(matches!(again, TurnEndAction::Finish), "{again:?}");
    }

    #[test]
    fn questions_that_ask_for_a_place_are_known() {
        for q in [
            "Where is the port set?",
            "Tell me where the logger is configured.",
            "Which files import yaml?",
            "In what file is main defined?",
        ] {
            assert!(asks_where(q), "{q}");
        }
        for q in [
            "What is the port?",
            "Which function parses dates?",
            "How many files are there?",
        ] {
            assert!(!asks_where(q), "{q}");
        }
    }

    #[tokio::test]
    async fn a_question_that_asks_which_files_searches_for_its_rarest_word() {
        let files = [
            ("a.py", "import yaml\nyaml.safe_load('x')\n"),
            ("b.py", "import json\n"),
            ("c.py", "import os\nimport yaml\n"),
        ];
        let (_dir, workspace) = workspace_with(&files);
        let history = answered("Which files import yaml?", vec![]);
        let TurnEndAction::Call(call) = UnlookedAnswer::new(workspace.clone())
            .on_turn_end(&history)
            .await
        else {
            panic!("no call");
        };
        assert_eq!(call.name, "grep");
        let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(input["pattern"], word_pattern(&["yaml".into()]));
        assert!(call.note.contains("naming the files"), "{}", call.note);
        // One file read does not answer which files: the search is made all the same,
        // unless the model searched, or saki did.
        let unlooked = UnlookedAnswer::new(workspace);
        let read = answered(
            "Which files import yaml?",
            vec![result("c1", ToolResultStatus::Success)],
        );
        let after_read = unlooked.on_turn_end(&read).await;
        assert!(
            matches!(&after_read, TurnEndAction::Call(call) if call.name == "grep"),
            "{after_read:?}"
        );
        for (name, id) in [
            ("grep", "c1".to_owned()),
            ("read_file", format!("{OWN_CALL_PREFIX}1")),
        ] {
            let searched = answered(
                "Which files import yaml?",
                vec![Item::ToolResult {
                    name: name.into(),
                    status: ToolResultStatus::Success,
                    content: "a.py:1:import yaml".into(),
                    ctx: ctx(&id),
                }],
            );
            let judged = unlooked.on_turn_end(&searched).await;
            assert!(
                !matches!(judged, TurnEndAction::Call(_)),
                "{name}: {judged:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_script_the_request_asks_to_run_is_run_when_the_model_ran_nothing() {
        let files = [("checks.py", "print('1 passed, 1 failed')\n")];
        let (_dir, workspace) = workspace_with(&files);
        let unlooked = UnlookedAnswer::new(workspace);
        let prompt = "Run checks.py and tell me how many checks fail.";
        let read = vec![result("c1", ToolResultStatus::Success)];
        let TurnEndAction::Call(call) = unlooked.on_turn_end(&answered(prompt, read)).await else {
            panic!("not run");
        };
        assert_eq!(call.name, "shell");
        assert_eq!(call.arguments, r#"{"command":"python3 checks.py"}"#);
        let shell = Item::ToolResult {
            name: "shell".into(),
            status: ToolResultStatus::Success,
            content: "1 passed, 1 failed".into(),
            ctx: ctx("c2"),
        };
        let ran = unlooked.on_turn_end(&answered(prompt, vec![shell])).await;
        assert!(matches!(ran, TurnEndAction::Finish), "{ran:?}");
        let missing = unlooked
            .on_turn_end(&answered(
                "Run other.py and tell me what it prints.",
                vec![],
            ))
            .await;
        assert!(
            !matches!(&missing, TurnEndAction::Call(c) if c.name == "shell"),
            "{missing:?}"
        );
        let change = unlooked
            .on_turn_end(&answered("Run checks.py and fix what fails.", vec![]))
            .await;
        assert!(
            !matches!(&change, TurnEndAction::Call(c) if c.name == "shell"),
            "{change:?}"
        );
    }

    #[tokio::test]
    async fn a_where_answer_that_names_no_file_is_asked_for_again() {
        let files = [("conf/app.ini", "[db]\nurl = postgres://db/shop\n")];
        let (_dir, workspace) = workspace_with(&files);
        let unlooked = UnlookedAnswer::new(workspace);
        let looked = || vec![result("c1", ToolResultStatus::Success)];
        let with_answer = |prompt: &str, answer: &str| {
            let mut history = vec![Item::user(prompt)];
            history.extend(looked());
            history.push(Item::AssistantText {
                text: answer.into(),
            });
            history
        };
        let q = "Where is the database URL set?";
        for answer in ["url = postgres://db/shop", "It is set in the config."] {
            let judged = unlooked.on_turn_end(&with_answer(q, answer)).await;
            assert!(
                matches!(judged, TurnEndAction::AskAgain(_)),
                "{answer}: {judged:?}"
            );
        }
        let named = unlooked
            .on_turn_end(&with_answer(q, "In conf/app.ini, as url."))
            .await;
        assert!(matches!(named, TurnEndAction::Finish), "{named:?}");
        let not_where = unlooked
            .on_turn_end(&with_answer(
                "What is the database URL?",
                "postgres://db/shop",
            ))
            .await;
        assert!(matches!(not_where, TurnEndAction::Finish), "{not_where:?}");
    }
}
