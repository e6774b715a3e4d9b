//! A request for what a directory holds, answered from its listing.
//!
//! Asked "What files are in src?", Qwen2.5-Coder-0.5B called a tool named `src`, then
//! read `src/a.py` and answered with that one file. A listing is the whole answer, and
//! one file read is not: a request that asks for no change and for the files of a
//! directory it names ("List the files in the docs directory.", "What's in config/?"),
//! or for the files of the project ("List the files."), gets, once a turn, an `ls` of that directory made by saki, unless the model listed,
//! globbed or ran something that succeeded. A request with other words of its own
//! ("Which files in src have TODO comments?") asks for a search, not a listing.

use super::{saki_or_model_made, UnlookedAnswer};
use crate::intent::{current_turn, lower_words, read_intent};
use crate::mentions::distinctive_words;
use saki_llm_worker::interceptor::OwnCall;
use saki_llm_worker::Item;

/// Words that ask what a directory holds.
const LISTING: &[&str] = &[
    "list", "files", "contents", "ls", "entries", "inside", "holds",
];

/// Words a listing request may have besides those and the directory's name.
const ABOUT_A_DIRECTORY: &[&str] = &[
    "directory",
    "directories",
    "folder",
    "folders",
    "dir",
    "contain",
    "contains",
    "containing",
    "names",
    "name",
    "please",
    "project",
    "repo",
    "repository",
    "workspace",
    "root",
    "current",
];

impl UnlookedAnswer {
    /// The listing of the directory `history`'s request asks about (see the module's
    /// documentation).
    pub(super) async fn listing_call(&self, history: &[Item]) -> Option<OwnCall> {
        let (prompt, turn) = current_turn(history)?;
        if read_intent(prompt).change || !asks_for_a_listing(prompt) {
            return None;
        }
        if saki_or_model_made(turn, &["ls", "glob", "shell"]) {
            return None;
        }
        let dir = match self.named_dir(prompt).await {
            Some(dir) => dir,
            None if names_a_listing(prompt) => ".".to_owned(),
            None => return None,
        };
        if has_other_words(prompt, &dir) {
            return None;
        }
        Some(OwnCall {
            name: "ls".into(),
            arguments: serde_json::json!({ "path": dir }).to_string(),
            note: format!(
                "[saki listed {dir}. Answer from the listing, naming every entry in it: {}]",
                prompt.trim()
            ),
        })
    }
}

/// Whether `prompt` has a word that asks what a directory holds.
fn asks_for_a_listing(prompt: &str) -> bool {
    names_a_listing(prompt)
        || lower_words(prompt)
            .windows(2)
            .any(|w| w == ["what", "s"] || w == ["what", "is"])
}

/// Whether `prompt` has a word that asks what a directory holds even when it names
/// none ("List the files.", "What files are in this project?"): the workspace's root.
fn names_a_listing(prompt: &str) -> bool {
    lower_words(prompt)
        .iter()
        .any(|w| LISTING.contains(&w.as_str()))
}

/// Whether `prompt` has words of its own besides the directory `dir` and words about
/// directories: then it asks about some of the files, not for all of them.
fn has_other_words(prompt: &str, dir: &str) -> bool {
    let dir_words = lower_words(dir);
    distinctive_words(prompt).iter().any(|word| {
        let word = word.to_lowercase();
        let word = word.as_str();
        !dir_words.iter().any(|w| w == word)
            && !LISTING.contains(&word)
            && !ABOUT_A_DIRECTORY.contains(&word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_for_a_directorys_files_are_read() {
        for (prompt, dir) in [
            ("What files are in src?", "src"),
            ("List the files in the docs directory.", "docs"),
            ("What's in the config/ folder?", "config/"),
            ("Show me the contents of src/app", "src/app"),
        ] {
            assert!(asks_for_a_listing(prompt), "{prompt}");
            assert!(!has_other_words(prompt, dir), "{prompt}");
        }
        assert!(has_other_words(
            "Which files in src have TODO comments?",
            "src"
        ));
        assert!(!asks_for_a_listing("How does src/app.py start the server?"));
        assert!(names_a_listing("What files are in this project?"));
        assert!(!has_other_words("What files are in this project?", "."));
        assert!(!names_a_listing("What's new?"));
    }
}
