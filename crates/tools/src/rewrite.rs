//! A small model's change to a small file, made from the file's whole new text.
//!
//! Asked to "Scale the api to 5 replicas in deploy.yaml.", Qwen2.5-Coder-0.5B, with the
//! file read, sends `edit` with `old_string` `api:1.4` and `new_string` `api:1.5`; asked in
//! a plain chat, with the file in a code block and the request after it, for the file's
//! complete new text, it writes `replicas: 5` and keeps the rest. A code model writes
//! files far better than it picks one exact string out of one and escapes another into
//! JSON: on the task suite's tuning half, 7 of 12 change requests came out right written
//! whole, 1 of 12 by the model's next `edit` (see `docs/small-models.md`).
//!
//! So where small models run, a turn that asks for a change and calls `edit` or
//! `write_file` on an existing text file small enough to be written out within an
//! answer gets its arguments replaced ([`ToolAction::Replace`]): one more request, with
//! no tools and no history, asks for that file's new text for the turn's prompt, and the
//! call becomes an `edit` of the whole text to the new text (a `write_file` of the new
//! text). Everything after this interceptor (the change guard, approval, undo) judges
//! the replaced call; its result says what happened. An answer that cannot be used (no
//! complete code block, a fragment, a changed format: see `answer::read_rewrite`) is
//! asked for once more, asking to change nothing else; when that one cannot be used
//! either, the model's own call runs. An answer that leaves the file as it is refuses
//! the call. A file rewritten in a turn is not changed again in it (a small model goes
//! on editing what is done, and undoes it).
//!
//! A request over several files ("Rename greet to welcome, in greetings.py and where
//! app.py uses it") is seldom finished by a small model: it changes one file and
//! answers. So when such a turn ends, each file the prompt names that the turn has not
//! changed is written whole the same way, one per turn end, as a call saki makes itself
//! ([`TurnEndAction::Call`]). A named file the request does not ask to change comes back
//! as it is (the test a fix must pass), and is left alone.
//!
//! A request for a new file or to move one is met at the turn's end too (`new_files`,
//! `own_files`): the new file's text is asked for and written, a moved file is copied to
//! its place and then deleted.

mod answer;
mod blank_lines;
mod checks;
mod from_test;
mod new_files;
mod own_files;
mod placed_line;
mod py_imports;
mod removed_lines;
mod renamed;
mod uncomment;

use crate::intent::{bare_word, changes_files, current_turn, path_word, read_intent, Intent};
use crate::workspace::Workspace;
use saki_llm_client::{
    CancellationToken, Client, Message, Request, ResponseStatus, StopReason, UsageEvent, WireApi,
};
use saki_llm_worker::interceptor::{
    Interceptor, OwnCall, PromptAction, ToolAction, ToolCallInfo, ToolResultInfo, TurnEndAction,
    OWN_CALL_PREFIX,
};
use saki_llm_worker::{BackgroundKind, BackgroundUsage, Item, Responder, ToolResultStatus};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;

use answer::{read_rewrite, Rewrite};

/// The most files a rewrite request lists, and how deep it looks for them: a small model
/// reads a prompt at 30 to 100 tokens a second.
const LISTED_FILES: usize = 30;
const LISTED_DEPTH: usize = 4;

/// How the new text is asked for: the lean chat that measured best (no tools, no rules).
const REWRITE_SYSTEM: &str = "You are a coding assistant.";

/// Bytes of a file per token of the answer that must hold it, counted low (code runs
/// at about 3.5 to 4): a file is rewritten only if its new text fits the answer's bound.
const BYTES_PER_TOKEN: usize = 3;

/// What the rewrite asks for in a turn.
#[derive(Debug, Default)]
struct TurnState {
    prompt: Option<String>,
    intent: Option<Intent>,
    /// Calls replaced, waiting for their results: (call id, file).
    pending: Vec<(String, PathBuf)>,
    /// Files whose new text was asked for in this turn, and what came of it: each is
    /// asked for once (asked again with the same words, greedy sampling answers the same).
    settled: HashMap<PathBuf, Settled>,
    /// The files the prompt names that existed when it was made, as shown and as they
    /// were: what a new file or a moved function is made from.
    context: Vec<(String, String)>,
    /// The files the prompt names that existed when it was made, resolved.
    named: Vec<PathBuf>,
    /// The paths the prompt introduces as new files that did not exist when it was made.
    introduced: Vec<String>,
    /// The new files whose text was asked for in this turn.
    created: Vec<String>,
    /// The calls made in this turn to move the file the prompt moves.
    move_calls: u8,
    /// The line that lists the project's files in a rewrite request, once made.
    files_line: Option<String>,
    /// The files saki renamed the prompt's renamed name in, in this turn: each once.
    renamed: Vec<PathBuf>,
    /// A module written from the test that checks the request, in this turn.
    from_test: Option<from_test::FromTest>,
    /// Whether such a module was asked for in this turn: once a turn.
    from_test_tried: bool,
}

/// What came of asking for a file's new text in a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Written: the file is not changed again in the turn.
    Rewritten,
    /// It came back as it is: the request needs no change to it.
    Unchanged,
    /// Nothing usable came back, or the rewritten call was refused: the model's own
    /// calls of it run.
    Unusable,
}

impl Settled {
    /// What a change the model asks for of a file settled so.
    fn action(self, path: &str, shown: &str) -> ToolAction {
        match self {
            Settled::Rewritten => ToolAction::Deny(format!(
                "{path} was already changed for this request in this turn, as its earlier \
                 result shows; leave it as it is and answer the person."
            )),
            Settled::Unchanged => ToolAction::Deny(unchanged_refusal(shown)),
            Settled::Unusable => ToolAction::Allow,
        }
    }
}

/// The model and bounds of the rewrite request: those of the loop it serves.
#[derive(Debug, Clone)]
pub struct RewriteModel {
    pub client: Client,
    pub model: String,
    pub temperature: Option<f32>,
    pub max_output_tokens: u32,
}

impl RewriteModel {
    /// The answer bound when the loop sets none.
    pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4096;

    /// The rewrite request of a loop on `model` with its sampling and answer bound.
    pub fn new(
        client: Client,
        model: impl Into<String>,
        temperature: Option<f32>,
        max_output_tokens: Option<u32>,
    ) -> Self {
        Self {
            client,
            model: model.into(),
            temperature,
            max_output_tokens: max_output_tokens.unwrap_or(Self::DEFAULT_MAX_OUTPUT_TOKENS),
        }
    }
}

/// Where a rewrite request's tokens are counted: the session's `rewrite`, or the
/// speculation it was made in.
pub type UsageRecorder = Arc<dyn Fn(&UsageEvent, WireApi) + Send + Sync>;

/// Replaces a small model's `edit` and `write_file` of a small file with the file's whole
/// new text (see the module's documentation).
pub struct RewriteEdits {
    workspace: Arc<Workspace>,
    model: RewriteModel,
    usage: Option<UsageRecorder>,
    state: Mutex<TurnState>,
}

impl std::fmt::Debug for RewriteEdits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RewriteEdits")
            .field("model", &self.model.model)
            .finish_non_exhaustive()
    }
}

impl RewriteEdits {
    pub fn new(workspace: Arc<Workspace>, model: RewriteModel) -> Self {
        Self {
            workspace,
            model,
            usage: None,
            state: Mutex::default(),
        }
    }

    /// Counts the rewrite requests' tokens (`background_usage`'s `rewrite`).
    pub fn with_usage(self, usage: BackgroundUsage) -> Self {
        self.with_usage_recorder(Arc::new(move |event, wire| {
            usage.record(BackgroundKind::Rewrite, event, wire)
        }))
    }

    /// Counts the rewrite requests' tokens where `record` says.
    pub fn with_usage_recorder(mut self, record: UsageRecorder) -> Self {
        self.usage = Some(record);
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TurnState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn settled(&self, file: &PathBuf) -> Option<Settled> {
        self.state().settled.get(file).copied()
    }

    fn settle(&self, file: PathBuf, settled: Settled) {
        self.state().settled.insert(file, settled);
    }

    /// The file's new text for `prompt`, or, when there is none to write, how the file
    /// is settled (recorded for the turn).
    async fn ask(
        &self,
        resolved: &std::path::Path,
        shown: &str,
        old: &str,
        prompt: &str,
        intent: Intent,
    ) -> Result<String, Settled> {
        let settled = match self.new_text(shown, old, prompt, intent).await {
            Rewrite::New(new) => return Ok(new),
            Rewrite::Unchanged => Settled::Unchanged,
            Rewrite::Unusable => Settled::Unusable,
        };
        self.settle(resolved.to_path_buf(), settled);
        Err(settled)
    }

    /// What becomes of the model's `delete_file` `call`: refused while it would lose
    /// the text of a file the turn's prompt moves.
    async fn delete_action(&self, call: &ToolCallInfo) -> ToolAction {
        let prompt = self.state().prompt.clone();
        let path = call.input.get("path").and_then(|p| p.as_str());
        let (Some(prompt), Some(path)) = (prompt, path) else {
            return ToolAction::Allow;
        };
        let refusal = match self.unasked_deletion(&prompt, path) {
            Some(why) => Some(why),
            None => self.delete_before_move(&prompt, path).await,
        };
        match refusal {
            Some(why) => ToolAction::Deny(why),
            None => ToolAction::Allow,
        }
    }

    /// `call` (an `edit` or a `write_file`) replaced by one that changes the file `path`
    /// (`resolved`) from `old` to `new` whole, its result awaited to settle the file.
    fn replaced(
        &self,
        call: &ToolCallInfo,
        path: &str,
        resolved: PathBuf,
        (old, new): (&str, &str),
        note: String,
    ) -> ToolAction {
        let arguments = match call.name.as_str() {
            "edit" => serde_json::json!({"path": path, "old_string": old, "new_string": new}),
            _ => serde_json::json!({"path": path, "content": new}),
        };
        self.state()
            .pending
            .push((call.ctx.call_id.clone(), resolved));
        ToolAction::Replace {
            arguments: arguments.to_string(),
            note,
        }
    }

    /// The largest file rewritten, in bytes.
    fn max_file_bytes(&self) -> usize {
        self.model.max_output_tokens as usize * BYTES_PER_TOKEN
    }

    /// The file `path` names, as the call should name it, and its text: as written, or
    /// the file a missing path written as a search prints a line was meant to name
    /// (`settings.py:2:DEBUG = True`). Not a dotfile for a name without its dot: a
    /// `write_file` of `envrc` may be meant to create it, not to change `.envrc`.
    async fn file(&self, path: &str) -> Option<(String, PathBuf, String)> {
        let max = self.max_file_bytes() as u64;
        if let Some((resolved, text)) = self.workspace.read_text(path, max).await {
            return Some((path.to_owned(), resolved, text));
        }
        if !path.contains(':') {
            return None;
        }
        let meant = self.workspace.scope().meant(path)?;
        let (resolved, text) = self.workspace.read_text(&meant, max).await?;
        Some((meant, resolved, text))
    }

    /// What the model gives as the file's new text for `prompt` (a line to uncomment is
    /// uncommented without it: `uncomment`; a line it spells out under a heading is
    /// placed there when its answers cannot be used: `placed_line`; a removal of more than
    /// the request points to is narrowed: `removed_lines`). An answer that cannot
    /// be used is asked for once more, with the words that ask to keep the rest as it is
    /// (greedy sampling gives the same answer to the same words); one that then comes
    /// back unchanged is not read as "nothing to change", since the first one changed it.
    async fn new_text(&self, shown: &str, old: &str, prompt: &str, intent: Intent) -> Rewrite {
        if let Some(new) = uncomment::uncommented(prompt, old) {
            return Rewrite::New(new);
        }
        let context = self.context_for(shown, prompt);
        let files = self.files_line().await;
        let mut asked = Rewrite::Unusable;
        for (attempt, ask) in REWRITE_ASKS.iter().enumerate() {
            let request = format!(
                "{context}{}",
                rewrite_prompt(shown, old, &files, prompt, ask)
            );
            let Some(answer) = self.answer(&request).await else {
                break;
            };
            asked = match read_rewrite(old, &answer, intent, shown) {
                Rewrite::Unusable => continue,
                Rewrite::Unchanged if attempt > 0 => Rewrite::Unusable,
                usable => usable,
            };
            break;
        }
        if let Rewrite::New(new) = &asked {
            if intent.subtractive {
                if let Some(narrowed) = removed_lines::narrowed(prompt, old, new) {
                    return Rewrite::New(narrowed);
                }
            }
            if !blank_lines::asks_about_spacing(prompt) {
                if let Some(kept) = blank_lines::kept_blank_lines(old, new) {
                    return Rewrite::New(kept);
                }
            }
        }
        let missed = asked == Rewrite::Unusable || (asked == Rewrite::Unchanged && intent.additive);
        if missed {
            if let Some(new) = placed_line::with_placed_line(prompt, old) {
                return Rewrite::New(new);
            }
        }
        asked
    }

    /// The line that lists the project's files for a rewrite request, empty for a
    /// project of one file or of more than [`LISTED_FILES`]. Shown the files, the model
    /// writes an import of `lib/utils.py` as `from lib.utils import`, not
    /// `from .utils import`.
    async fn files_line(&self) -> String {
        if let Some(line) = self.state().files_line.clone() {
            return line;
        }
        let root = self.workspace.root().to_path_buf();
        let files = tokio::task::spawn_blocking(move || {
            crate::suggest::workspace_files(&root, LISTED_DEPTH, LISTED_FILES + 1)
        })
        .await
        .unwrap_or_default();
        let line = if (2..=LISTED_FILES).contains(&files.len()) {
            format!("(The project's files: {}.)\n", files.join(", "))
        } else {
            String::new()
        };
        self.state().files_line = Some(line.clone());
        line
    }

    /// The model's complete answer to `user` in a chat with no tools and no history, or
    /// nothing when the request failed or the answer was cut off.
    async fn answer(&self, user: &str) -> Option<String> {
        let request = Request {
            model: self.model.model.clone(),
            system: Some(REWRITE_SYSTEM.to_owned()),
            messages: vec![Message::user_text(user)],
            tools: Vec::new(),
            max_output_tokens: Some(self.model.max_output_tokens),
            temperature: self.model.temperature,
            thinking: None,
            response_schema: None,
            tool_choice: Default::default(),
        };
        let response = Responder::new()
            .respond(&self.model.client, &request, CancellationToken::new())
            .await;
        let response = match response {
            Ok(response) => response,
            Err(e) => {
                tracing::debug!(error = %e, "the rewrite request failed");
                return None;
            }
        };
        if let Some(record) = &self.usage {
            record(&response.usage, self.model.client.config().wire_api);
        }
        let complete = response.status == ResponseStatus::Completed
            && response.stop_reason != Some(StopReason::MaxTokens);
        complete.then(|| response.text())
    }
}

/// What becomes of the model's own `edit` or `write_file` `call` of a file whose text
/// is `old`, when `action` lets it run: it runs with the file's blank lines kept
/// (`blank_lines`) unless `prompt` asks about them.
fn model_call_action(
    call: &ToolCallInfo,
    action: ToolAction,
    old: &str,
    prompt: &str,
) -> ToolAction {
    if action != ToolAction::Allow || blank_lines::asks_about_spacing(prompt) {
        return action;
    }
    let (key, before) = match call.name.as_str() {
        "edit" => (
            "new_string",
            call.input.get("old_string").and_then(|v| v.as_str()),
        ),
        _ => ("content", Some(old)),
    };
    let after = call.input.get(key).and_then(|v| v.as_str());
    let (Some(before), Some(after)) = (before, after) else {
        return action;
    };
    let Some(kept) = blank_lines::kept_blank_lines(before, after) else {
        return action;
    };
    let mut arguments = call.input.clone();
    arguments[key] = serde_json::Value::from(kept);
    ToolAction::Replace {
        arguments: arguments.to_string(),
        note: "[saki kept the blank lines this call took out or put in: the request is not \
               about them]"
            .to_owned(),
    }
}

/// Why a change of a file whose new text came back as it is does not run: the model,
/// shown the file and the request alone, found nothing in it to change (the test a
/// fix is to pass; a file the request only mentions). A small model's own edit of it
/// then undoes what the request relies on.
fn unchanged_refusal(shown: &str) -> String {
    format!(
        "saki asked for {shown}'s whole new text for this request and it came back \
         unchanged, so {shown} stays as it is. If another file must change, change that \
         one; otherwise answer the person."
    )
}

/// What follows the request for a file's new text: first nothing, then, when the first
/// answer cannot be used, the words that on the task suite turned a moved JSON key and
/// a plain file written as JSON into the change asked for (and lost as many as they won
/// when asked first).
const REWRITE_ASKS: [&str; 2] = ["", " Change nothing the request does not ask for."];

/// The request for a file's new text: the file in a code block, the line that lists the
/// project's `files` (measured there: before the file, it turned a `VERSION` file into
/// JSON), then the person's words, then `ask`.
fn rewrite_prompt(shown: &str, old: &str, files: &str, prompt: &str, ask: &str) -> String {
    format!(
        "{}{files}{}\nReply with the complete new content of {shown}, all of it, in one \
         code block.{ask}",
        fenced_file(shown, old),
        prompt.trim()
    )
}

/// `text` shown as the file `shown`: its name, then the text in a code block, then a
/// blank line.
fn fenced_file(shown: &str, text: &str) -> String {
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{shown}:\n```\n{text}{newline}```\n\n")
}

/// The path to show the model: relative to the workspace where it is inside it.
fn shown_path(workspace: &Workspace, resolved: &std::path::Path, written: &str) -> String {
    resolved
        .strip_prefix(workspace.root())
        .ok()
        .and_then(|p| p.to_str())
        .filter(|p| !p.is_empty())
        .unwrap_or(written)
        .to_owned()
}

#[async_trait::async_trait]
impl Interceptor for RewriteEdits {
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        if let Item::User { text } = user {
            let start = self.named_at_start(text).await;
            *self.state() = TurnState {
                prompt: Some(text.clone()),
                intent: Some(read_intent(text)),
                context: start.context,
                named: start.named,
                introduced: start.introduced,
                ..TurnState::default()
            };
        }
        PromptAction::Continue
    }

    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        if call.ctx.call_id.starts_with(OWN_CALL_PREFIX) {
            return ToolAction::Allow;
        }
        if let Some(action) = self.test_change(call).await {
            return action;
        }
        if call.name == "delete_file" {
            return self.delete_action(call).await;
        }
        if !matches!(call.name.as_str(), "edit" | "write_file") {
            return ToolAction::Allow;
        }
        let (prompt, intent) = {
            let state = self.state();
            match (&state.prompt, state.intent) {
                // A turn that asks no change is the change guard's to refuse.
                (Some(prompt), Some(intent)) if intent.change => (prompt.clone(), intent),
                _ => return ToolAction::Allow,
            }
        };
        let Some(path) = call.input.get("path").and_then(|p| p.as_str()) else {
            return ToolAction::Allow;
        };
        if let Some(why) = self.created_instead_of_added(&prompt, path) {
            return ToolAction::Deny(why);
        }
        let Some((path, resolved, old)) = self.file(path).await else {
            return ToolAction::Allow;
        };
        let shown = shown_path(&self.workspace, &resolved, &path);
        let refusal = self
            .beside_new_file(&resolved, &shown)
            .or_else(|| self.edit_of_moved(&prompt, &resolved, &shown))
            .or_else(|| self.unnamed_file(&prompt, &resolved, &shown));
        if let Some(why) = refusal {
            return ToolAction::Deny(why);
        }
        if let Some(settled) = self.settled(&resolved) {
            return model_call_action(call, settled.action(&path, &shown), &old, &prompt);
        }
        if let Some((new, note)) = renamed::swapped(&prompt, &shown, &old) {
            self.state().renamed.push(resolved.clone());
            return self.replaced(call, &path, resolved, (&old, &new), note);
        }
        let new = match self.ask(&resolved, &shown, &old, &prompt, intent).await {
            Ok(new) => new,
            Err(settled) => {
                return model_call_action(call, settled.action(&path, &shown), &old, &prompt)
            }
        };
        self.replaced(
            call,
            &path,
            resolved,
            (&old, &new),
            format!(
                "[saki asked for {shown}'s whole new text for the request and wrote it in \
                 place of this call's arguments]"
            ),
        )
    }

    async fn post_tool_call(&self, result: &ToolResultInfo) {
        let mut state = self.state();
        let Some(at) = state
            .pending
            .iter()
            .position(|(id, _)| *id == result.call.ctx.call_id)
        else {
            return;
        };
        let (_, file) = state.pending.remove(at);
        let settled = match result.status {
            ToolResultStatus::Success => Settled::Rewritten,
            _ => Settled::Unusable,
        };
        state.settled.insert(file, settled);
    }

    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let Some((prompt, turn)) = current_turn(history) else {
            return TurnEndAction::Finish;
        };
        let intent = read_intent(prompt);
        if !intent.change {
            return TurnEndAction::Finish;
        }
        if let Some(call) = self.move_call(prompt, intent).await {
            return TurnEndAction::Call(call);
        }
        if let Some(call) = self.deletion_call(prompt, intent).await {
            return TurnEndAction::Call(call);
        }
        if let Some(call) = self.creation_call(prompt).await {
            return TurnEndAction::Call(call);
        }
        if self.makes_new_files(prompt) {
            // The other files such a request names are what the new ones are made from.
            return TurnEndAction::Finish;
        }
        let changed: Vec<PathBuf> = changed_paths(turn)
            .iter()
            .filter_map(|path| self.workspace.resolve(path).ok())
            .collect();
        let checked_by_tests = checks::tests_are_the_check(prompt);
        // In the prompt's order, the first file whose new text can be used: one call
        // per turn end, and the model answers before the next. After the files the
        // prompt names, those the tests it names import: what they check.
        let mut candidates: Vec<(String, bool)> = named_files(prompt)
            .into_iter()
            .map(|word| (word.to_owned(), false))
            .collect();
        for test in self.named_tests(prompt).await {
            let tested = checks::tested_modules(&test.text, &test.shown);
            candidates.extend(tested.into_iter().map(|module| (module, true)));
        }
        for (word, is_tested) in candidates {
            let Some((path, resolved, old)) = self.file(&word).await else {
                continue;
            };
            if changed.contains(&resolved) || self.settled(&resolved).is_some() {
                continue;
            }
            let shown = shown_path(&self.workspace, &resolved, &path);
            if checked_by_tests && checks::is_test_file(&shown) {
                continue;
            }
            let Ok(new) = self.ask(&resolved, &shown, &old, prompt, intent).await else {
                continue;
            };
            // Counted as rewritten now: the call's result comes after this turn end, and
            // a failed call is not asked for again.
            self.settle(resolved, Settled::Rewritten);
            let why = match is_tested {
                true => format!("a test the request names imports {shown}"),
                false => format!("the request names {shown}"),
            };
            return TurnEndAction::Call(OwnCall {
                name: "edit".into(),
                arguments: serde_json::json!({"path": path, "old_string": old, "new_string": new})
                    .to_string(),
                note: format!(
                    "[saki made this edit: {why} and the turn had not changed it, so saki \
                     asked for its whole new text for the request and wrote it. Tell the \
                     person in one sentence what changed.]"
                ),
            });
        }
        if let Some(call) = self.rename_call(prompt).await {
            return TurnEndAction::Call(call);
        }
        if let Some(call) = self
            .fix_from_test_call(prompt, turn, !changed.is_empty())
            .await
        {
            return TurnEndAction::Call(call);
        }
        TurnEndAction::Finish
    }
}

/// The words of `prompt` that may name files, each once: those written as paths
/// (`deploy.yaml`, `src/app.py`), and names with no dot that are often files' whole
/// names (`VERSION`, `Makefile`, `Dockerfile`), read as files only where they exist;
/// and the ignore file a request to ignore something in git or docker means.
fn named_files(prompt: &str) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    for word in prompt.split_whitespace() {
        let named = path_word(word).or_else(|| {
            let word = bare_word(word);
            let name_like = word.len() > 1
                && word.chars().any(|c| c.is_ascii_uppercase())
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
            name_like.then_some(word)
        });
        if let Some(named) = named.filter(|w| !words.contains(w)) {
            words.push(named);
        }
    }
    if let Some(file) = crate::intent::ignore_file(prompt) {
        if !words.contains(&file) {
            words.push(file);
        }
    }
    words
}

/// The paths, as the model wrote them, of the files the calls of `turn` that succeeded
/// changed.
fn changed_paths(turn: &[Item]) -> Vec<String> {
    let succeeded: Vec<&str> = turn
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult {
                status: ToolResultStatus::Success,
                ctx,
                ..
            } => Some(ctx.call_id.as_str()),
            _ => None,
        })
        .collect();
    turn.iter()
        .filter_map(|item| match item {
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } if changes_files(name) && succeeded.contains(&ctx.call_id.as_str()) => {
                let input = serde_json::from_str::<serde_json::Value>(arguments).ok()?;
                input.get("path")?.as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
