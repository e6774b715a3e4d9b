//! An answer about a named file given without opening it, sent back once where small
//! models run.
//!
//! Asked "How many functions are defined in shapes.py?", a small model sometimes answers
//! at once, with a number it made up. The prompt names a file that exists, and the turn
//! never called a tool: nothing the answer says can come from the file. So such a turn is
//! not ended; the model is told which file it did not read and asked again, once. A turn
//! that read, listed, ran or searched anything is left alone, as is one whose prompt
//! names no file of the workspace.

use crate::intent::{current_turn, path_word};
use crate::workspace::Workspace;
use saki_llm_worker::interceptor::{Interceptor, TurnEndAction};
use saki_llm_worker::Item;
use std::sync::Arc;

/// How a nudge starts (a turn holds at most one).
const NOTE_START: &str = "[You answered without reading ";

/// Sends an answer given without looking back once (see the module's documentation).
#[derive(Debug)]
pub struct UnlookedAnswer {
    workspace: Arc<Workspace>,
}

impl UnlookedAnswer {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }

    /// The first word of `prompt` that names a file of the workspace.
    async fn named_file(&self, prompt: &str) -> Option<String> {
        for word in path_words(prompt) {
            let Ok(path) = self.workspace.resolve(word) else {
                continue;
            };
            let stat = self.workspace.fs().stat(&path).await.ok().flatten();
            if stat.is_some_and(|s| s.kind == crate::fs::Kind::File) {
                return Some(word.to_owned());
            }
        }
        None
    }
}

#[async_trait::async_trait]
impl Interceptor for UnlookedAnswer {
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let Some(prompt) = unlooked_prompt(history) else {
            return TurnEndAction::Finish;
        };
        match self.named_file(prompt).await {
            Some(path) => TurnEndAction::ContinueWithMessages(vec![Item::system(format!(
                "{NOTE_START}{path}. Call read_file on it, then answer from what it holds.]"
            ))]),
            None => TurnEndAction::Finish,
        }
    }
}

/// The prompt of a turn that called no tool and was not sent back already.
fn unlooked_prompt(history: &[Item]) -> Option<&str> {
    let (text, turn) = current_turn(history)?;
    let looked = turn.iter().any(|item| match item {
        Item::ToolCall { .. } => true,
        Item::System { text } => text.starts_with(NOTE_START),
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

    #[test]
    fn path_words_are_the_words_written_like_paths() {
        let words: Vec<&str> =
            path_words("How many functions are in `shapes.py`? See src/lib.rs, .env and e.g. 3.5.")
                .collect();
        assert_eq!(words, ["shapes.py", "src/lib.rs", ".env", "e.g", "3.5"]);
    }

    #[test]
    fn only_a_turn_that_called_nothing_and_was_not_sent_back_is_unlooked() {
        let ctx = saki_llm_worker::tool::ToolExecutionContext {
            call_id: "c".into(),
            batch_id: "b".into(),
            call_index: 0,
        };
        let answered = vec![
            Item::user("How many functions are in shapes.py?"),
            Item::AssistantText { text: "2".into() },
        ];
        assert_eq!(
            unlooked_prompt(&answered),
            Some("How many functions are in shapes.py?")
        );
        let mut sent_back = answered.clone();
        sent_back.push(Item::system(format!("{NOTE_START}shapes.py. …]")));
        sent_back.push(Item::AssistantText { text: "2".into() });
        assert_eq!(unlooked_prompt(&sent_back), None);
        let mut read = vec![Item::user("How many functions are in shapes.py?")];
        read.push(Item::ToolCall {
            name: "ls".into(),
            arguments: "{}".into(),
            signature: None,
            ctx,
        });
        read.push(Item::AssistantText { text: "2".into() });
        assert_eq!(unlooked_prompt(&read), None);
    }
}
