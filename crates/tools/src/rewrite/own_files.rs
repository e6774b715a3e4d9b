//! The calls a turn's end makes for a request that creates or moves a file (see
//! `new_files`): the new file's text asked for and written, the moved file written where
//! it goes and then deleted.

use super::new_files::{
    creation_prompt, deleted_files, destination, introduced_paths, moved_file,
    names_a_directory_only, only_deleted_files, paths_added_into_files, read_creation, shown_files,
};
use super::{named_files, shown_path, RewriteEdits, Settled};
use crate::fs::Kind;
use crate::intent::{asks_to_move, Intent};
use crate::ScopeError;
use saki_llm_worker::interceptor::OwnCall;

/// The most bytes of the named files shown with a request for a file's text: each one
/// is read by a small model at 30 to 100 tokens a second.
const CONTEXT_BYTES: usize = 2000;

/// What the files a prompt names were when it was made.
pub(super) struct NamedAtStart {
    /// Those that existed, as shown and as they were (up to [`CONTEXT_BYTES`] in all).
    pub context: Vec<(String, String)>,
    /// Those that existed, resolved.
    pub named: Vec<std::path::PathBuf>,
    /// The paths it introduces that did not exist.
    pub introduced: Vec<String>,
}

/// A file a request moves: as written, resolved and as it is, and where it goes.
struct Move {
    from: String,
    from_resolved: std::path::PathBuf,
    text: String,
    dest: String,
}

/// The most calls one turn makes to move a file: its copy, then the original's delete.
const MOVE_CALLS: u8 = 2;

impl RewriteEdits {
    /// The files `prompt` names that exist, and the paths it introduces that do not.
    pub(super) async fn named_at_start(&self, prompt: &str) -> NamedAtStart {
        let mut context = Vec::new();
        let mut named = Vec::new();
        let mut bytes = 0;
        for word in named_files(prompt) {
            let Some((path, resolved, text)) = self.file(word).await else {
                continue;
            };
            named.push(resolved.clone());
            if bytes + text.len() > CONTEXT_BYTES {
                continue;
            }
            bytes += text.len();
            context.push((shown_path(&self.workspace, &resolved, &path), text));
        }
        let introduced = introduced_paths(prompt)
            .into_iter()
            .filter(|path| self.missing(path))
            .map(str::to_owned)
            .collect();
        NamedAtStart {
            context,
            named,
            introduced,
        }
    }

    /// Whether `path` is inside the workspace and names nothing.
    fn missing(&self, path: &str) -> bool {
        matches!(self.workspace.resolve(path), Err(ScopeError::NotFound(_)))
    }

    /// The other files a request to move something names, shown before the request for
    /// `shown`'s new text: a function's new place needs the text it comes from.
    pub(super) fn context_for(&self, shown: &str, prompt: &str) -> String {
        if !asks_to_move(prompt) {
            return String::new();
        }
        let others: Vec<(String, String)> = self
            .state()
            .context
            .iter()
            .filter(|(path, _)| path != shown)
            .cloned()
            .collect();
        shown_files(&others)
    }

    /// Whether `prompt` asks for a file that did not exist when it was made: the files it
    /// names then are what the new one is made from, not files to rewrite.
    pub(super) fn makes_new_files(&self, prompt: &str) -> bool {
        !self.state().introduced.is_empty() || moved_file(prompt).is_some()
    }

    /// The file `prompt` moves, if it exists, and where it goes (see `moved_file`).
    async fn planned_move(&self, prompt: &str) -> Option<Move> {
        let (from, to) = moved_file(prompt)?;
        let (from, from_resolved, text) = self.file(from).await?;
        let name = from_resolved.file_name()?.to_str()?;
        let to_is_dir = self.workspace.kind(to).await == Some(Kind::Dir);
        if names_a_directory_only(to) && !to_is_dir {
            return None;
        }
        let dest = destination(to, name, to_is_dir);
        Some(Move {
            from,
            from_resolved,
            text,
            dest,
        })
    }

    /// Whether `planned`'s place holds the moved file's text.
    async fn holds(&self, planned: &Move) -> bool {
        self.workspace
            .read_text(&planned.dest, self.max_file_bytes() as u64)
            .await
            .is_some_and(|(_, now)| now == planned.text)
    }

    /// The next call moving the file `prompt` moves: its text written where it goes,
    /// then, once that holds it, the file deleted.
    pub(super) async fn move_call(&self, prompt: &str, intent: Intent) -> Option<OwnCall> {
        if !intent.removal || self.state().move_calls >= MOVE_CALLS {
            return None;
        }
        let planned = self.planned_move(prompt).await?;
        let Move { from, dest, .. } = &planned;
        let call = if self.missing(dest) {
            OwnCall {
                name: "write_file".into(),
                arguments: serde_json::json!({"path": dest, "content": planned.text}).to_string(),
                note: format!(
                    "[saki wrote {from}'s text to {dest}: the request moves {from} there. \
                     saki deletes {from} next.]"
                ),
            }
        } else if self.holds(&planned).await {
            OwnCall {
                name: "delete_file".into(),
                arguments: serde_json::json!({ "path": from }).to_string(),
                note: format!(
                    "[saki deleted {from}: {dest} holds its text, as the request asks. \
                     Tell the person in one sentence what moved.]"
                ),
            }
        } else {
            return None;
        };
        self.state().move_calls += 1;
        self.settle(planned.from_resolved, Settled::Rewritten);
        Some(call)
    }

    /// Why the model's delete of `path` may not run in a turn whose `prompt` moves that
    /// file, while the place it goes does not hold its text: asked to move `notes.txt`
    /// into `docs/`, a 0.5B model deleted it, and its text was gone.
    pub(super) async fn delete_before_move(&self, prompt: &str, path: &str) -> Option<String> {
        let planned = self.planned_move(prompt).await?;
        let (_, resolved, _) = self.file(path).await?;
        if resolved != planned.from_resolved || self.holds(&planned).await {
            return None;
        }
        Some(format!(
            "deleting {} now would lose its text: the request moves it to {}, which does \
             not hold it yet. saki moves it when you answer; answer the person.",
            planned.from, planned.dest
        ))
    }

    /// Why the model's delete of `path` may not run in a turn whose `prompt` names the
    /// files it deletes, and not this one (see [`only_deleted_files`]). A file the request
    /// names without a directory is any file of that name.
    pub(super) fn unasked_deletion(&self, prompt: &str, path: &str) -> Option<String> {
        let asked = only_deleted_files(prompt)?;
        let resolved = self.workspace.resolve(path).ok()?;
        let named = |file: &&str| {
            let bare = file.trim_start_matches("./");
            self.workspace.resolve(bare).is_ok_and(|r| r == resolved)
                || (!bare.contains('/') && resolved.file_name().is_some_and(|name| name == bare))
        };
        if asked.iter().any(named) {
            return None;
        }
        let shown = shown_path(&self.workspace, &resolved, path);
        Some(format!(
            "the request asks to delete {} and not {shown}; leave {shown} as it is.",
            asked.join(", ")
        ))
    }

    /// Why the model's `write_file` of `path`, which does not exist, may not run in a
    /// turn whose `prompt` asks to add that path into another file: asked to "Add .env to
    /// .gitignore", a 0.5B model created `.env` with the `.gitignore`'s lines in it.
    pub(super) fn created_instead_of_added(&self, prompt: &str, path: &str) -> Option<String> {
        let bare = path.trim_start_matches("./");
        let (what, into) = paths_added_into_files(prompt)
            .into_iter()
            .find(|(what, _)| what.trim_start_matches("./") == bare)?;
        if !self.missing(path) {
            return None;
        }
        Some(format!(
            "the request asks to add {what} to {into}, not to create {what}; leave {what} \
             as it is and change {into}."
        ))
    }

    /// Why the model's change of the existing file `resolved` may not run in a turn whose
    /// `prompt` names the files it changes, and not this one: asked "In build.sh, put
    /// the output in build instead of dist.", a 0.5B model edited `src/a.py`. A request
    /// that reaches past the files it names ("… and update all callers", "everywhere it
    /// is used"), or reports a failure whose cause may lie elsewhere ("main.py crashes
    /// with a KeyError"), leaves the model free.
    pub(super) fn unnamed_file(
        &self,
        prompt: &str,
        resolved: &std::path::Path,
        shown: &str,
    ) -> Option<String> {
        // A failure's cause may be in a file the request does not name.
        const FAILING: &[&str] = &["exception", "traceback", "raises", "broken", "bug", "bugs"];
        let reaches = super::checks::tests_are_the_check(prompt)
            || reaches_past_named_files(prompt)
            || crate::intent::lower_words(prompt).iter().any(|w| {
                let w = w.as_str();
                FAILING.contains(&w) || w.ends_with("error")
            });
        let state = self.state();
        if reaches || state.named.is_empty() || state.named.iter().any(|n| n == resolved) {
            return None;
        }
        let named: Vec<&str> = state
            .context
            .iter()
            .map(|(path, _)| path.as_str())
            .collect();
        let named = if named.is_empty() {
            "other files".to_owned()
        } else {
            named.join(", ")
        };
        Some(format!(
            "the request names the files to change ({named}) and not {shown}; leave {shown} \
             as it is and change {named}."
        ))
    }

    /// Why the model's change of the existing file `resolved` may not run in a turn whose
    /// prompt asks for a new file and does not name this one: asked for a `.dockerignore`,
    /// a 0.5B model edited the `Dockerfile` beside it; asked for a `requirements.txt`, it
    /// changed an import in `app.py`.
    pub(super) fn beside_new_file(
        &self,
        resolved: &std::path::Path,
        shown: &str,
    ) -> Option<String> {
        let state = self.state();
        if state.introduced.is_empty() || state.named.iter().any(|n| n == resolved) {
            return None;
        }
        Some(format!(
            "the request asks for a new file ({}) and does not ask to change {shown}; leave \
             {shown} as it is. Create the new file with write_file.",
            state.introduced.join(", ")
        ))
    }

    /// Why the model's change of the existing file `resolved` may not run in a turn whose
    /// `prompt` moves it: the request moves its text as it is (asked to move `notes.txt`,
    /// a 0.5B model edited its one line first).
    pub(super) fn edit_of_moved(
        &self,
        prompt: &str,
        resolved: &std::path::Path,
        shown: &str,
    ) -> Option<String> {
        let (from, _) = moved_file(prompt)?;
        let moved = self.workspace.resolve(from).ok()?;
        (moved == resolved).then(|| {
            format!(
                "the request moves {shown} as it is, and does not ask to change its text; \
                 saki moves it when you answer. Answer the person."
            )
        })
    }

    /// A `delete_file` of the first file `prompt` asks to delete that still exists and
    /// that no call of this turn was made for yet: asked "Delete old_helpers.py, nothing
    /// uses it.", a 0.5B model called a tool named `old_helpers.py`, then tried to edit
    /// `helpers.py`, and the file stayed.
    pub(super) async fn deletion_call(&self, prompt: &str, intent: Intent) -> Option<OwnCall> {
        if !intent.removal {
            return None;
        }
        for path in deleted_files(prompt) {
            let Ok(resolved) = self.workspace.resolve(path) else {
                continue;
            };
            let is_file = self.workspace.kind(path).await == Some(Kind::File);
            if self.settled(&resolved).is_some() || !is_file {
                continue;
            }
            self.settle(resolved, Settled::Rewritten);
            return Some(OwnCall {
                name: "delete_file".into(),
                arguments: serde_json::json!({ "path": path }).to_string(),
                note: format!(
                    "[saki deleted {path}: the request asks for it and the turn had not \
                     deleted it. Tell the person in one sentence what was deleted.]"
                ),
            });
        }
        None
    }

    /// A `write_file` of the first new file `prompt` asks for that is still missing, with
    /// the text the model gives for it: each is asked for once a turn.
    pub(super) async fn creation_call(&self, prompt: &str) -> Option<OwnCall> {
        let (introduced, context) = {
            let state = self.state();
            let left: Vec<String> = state
                .introduced
                .iter()
                .filter(|path| !state.created.contains(path))
                .cloned()
                .collect();
            (left, state.context.clone())
        };
        for path in introduced {
            self.state().created.push(path.clone());
            if !self.missing(&path) {
                continue;
            }
            let Some(answer) = self.answer(&creation_prompt(&context, prompt, &path)).await else {
                continue;
            };
            let Some(text) = read_creation(&answer, &path) else {
                continue;
            };
            return Some(OwnCall {
                name: "write_file".into(),
                arguments: serde_json::json!({"path": path, "content": text}).to_string(),
                note: format!(
                    "[saki created {path}: the request asks for it and the turn had not \
                     written it, so saki asked for its text and wrote it. Tell the person in \
                     one sentence what it holds.]"
                ),
            });
        }
        None
    }
}

/// Words that take a request past the files it names ("… and update all callers",
/// "everywhere it is used").
const REACHING: &[&str] = &[
    "all",
    "every",
    "everywhere",
    "each",
    "other",
    "others",
    "caller",
    "callers",
    "use",
    "uses",
    "usage",
    "usages",
    "used",
    "reference",
    "references",
    "files",
    "project",
    "codebase",
    "repo",
    "repository",
];

/// Whether `prompt` reaches past the files it names (see [`REACHING`]).
pub(super) fn reaches_past_named_files(prompt: &str) -> bool {
    crate::intent::lower_words(prompt)
        .iter()
        .any(|w| REACHING.contains(&w.as_str()))
}
