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
//!   to point anywhere, the README.
//!
//! A question's turn with any call that succeeded is left alone, as is a change's turn
//! with any call at all, or whose prompt names no file (the change guard and the
//! rewrite answer for those).

use crate::intent::{asks_a_question, current_turn, path_word, read_intent};
use crate::mentions::{distinctive_words, search_workspace, word_pattern};
use crate::workspace::Workspace;
use saki_llm_worker::interceptor::{Interceptor, OwnCall, TurnEndAction, OWN_CALL_PREFIX};
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

    /// The file with the most lines matching `pattern` (ignoring case), when the
    /// pattern matches some lines and not so many that they point nowhere.
    async fn most_matched_file(&self, pattern: String) -> Option<String> {
        let found = search_workspace(&self.workspace, pattern, MAX_USEFUL_MATCHES).await?;
        if found.total > MAX_USEFUL_MATCHES {
            return None;
        }
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for (path, _, _) in &found.matches {
            match counts.iter_mut().find(|(p, _)| p == path) {
                Some((_, n)) => *n += 1,
                None => counts.push((path, 1)),
            }
        }
        // The first of the most matched, in the search's order (by path).
        let most = counts.iter().map(|(_, n)| *n).max()?;
        counts
            .iter()
            .find(|(_, n)| *n == most)
            .map(|(p, _)| (*p).to_owned())
    }

    /// The file to read for the answer to the question `prompt`: where its own words
    /// occur most, else the README.
    async fn file_for_answer(&self, prompt: &str) -> Option<String> {
        if let Some(pattern) = search_pattern(prompt) {
            if let Some(path) = self.most_matched_file(pattern).await {
                return Some(path);
            }
        }
        for readme in ["README.md", "README", "README.rst", "README.txt"] {
            if self.is_file(readme).await {
                return Some(readme.to_owned());
            }
        }
        None
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
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let Some(prompt) = unlooked_prompt(history) else {
            return TurnEndAction::Finish;
        };
        if let Some(path) = self.named_file(prompt).await {
            return TurnEndAction::Call(read_call(&path, prompt));
        }
        if read_intent(prompt).change || !asks_a_question(prompt) {
            return TurnEndAction::Finish;
        }
        match self.file_for_answer(prompt).await {
            Some(path) => TurnEndAction::Call(read_call(&path, prompt)),
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
        let named = answered("How many functions are in shapes.py?", refused());
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
}
