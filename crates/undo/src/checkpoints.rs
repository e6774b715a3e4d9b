//! [`Checkpoints`]: the handle a session holds. As an [`Interceptor`] (installed last,
//! so it sees only calls that will run) it numbers turns and catches every change a
//! tool call makes; the engine calls it around accepted speculations, at each turn's
//! end, and for undo, redo and rewind. All file-system work runs on tokio's blocking
//! pool.

use super::ops::{self, Outcome, Summary};
use super::tracker::Tracker;
use super::{UndoError, UndoLimits};
use saki_llm_worker::interceptor::{
    Interceptor, PromptAction, ToolAction, ToolCallInfo, ToolResultInfo,
};
use saki_llm_worker::Item;
use saki_shell_safety::{classify, Safety};
use saki_tools::Workspace;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use super::tracker::TurnReport;

/// Built-in tools that change no file (nothing to do for them).
const READ_ONLY: &[&str] = &[
    "read_file",
    "ls",
    "glob",
    "grep",
    "web_fetch",
    "update_plan",
    "plan",
];
/// Built-in tools that write the one file their `path` names.
const FILE_TOOLS: &[&str] = &["write_file", "edit", "delete_file"];

#[derive(Clone)]
pub struct Checkpoints {
    tracker: Arc<Mutex<Tracker>>,
}

/// What a call needs from the tracker.
enum Need {
    Nothing,
    File(String),
    /// A shell command that is not proven read-only (its text), or an unknown tool
    /// (its name).
    Scan {
        tool: String,
        command: Option<String>,
    },
}

fn need(call: &ToolCallInfo) -> Need {
    let name = call.name.as_str();
    if READ_ONLY.contains(&name) {
        return Need::Nothing;
    }
    if FILE_TOOLS.contains(&name) {
        return match call.input.get("path").and_then(|p| p.as_str()) {
            Some(path) => Need::File(path.to_owned()),
            None => Need::Nothing,
        };
    }
    if name == "shell" {
        let command = call
            .input
            .get("command")
            .and_then(|c| c.as_str())
            .unwrap_or("");
        // A command proven read-only changes nothing: no scan at all.
        if classify(command) == Safety::ReadOnly {
            return Need::Nothing;
        }
        return Need::Scan {
            tool: call.name.clone(),
            command: Some(command.to_owned()),
        };
    }
    Need::Scan {
        tool: call.name.clone(),
        command: None,
    }
}

impl Checkpoints {
    /// Checkpoints for `workspace`, kept in `dir` (`<data dir>/undo`); `None` limits:
    /// off.
    pub fn new(workspace: Arc<Workspace>, dir: PathBuf, limits: Option<UndoLimits>) -> Self {
        Self {
            tracker: Arc::new(Mutex::new(Tracker::new(workspace, dir, limits))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Tracker> {
        lock(&self.tracker)
    }

    /// Runs `work` on the blocking pool with the tracker; `None` when the pool is gone.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Tracker) -> T + Send + 'static,
    ) -> Option<T> {
        let tracker = self.tracker.clone();
        let job = tokio::task::spawn_blocking(move || work(&mut lock(&tracker)));
        match job.await {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!(error = %e, "an undo checkpoint task failed");
                None
            }
        }
    }

    /// Walks the workspace after every batch instead of trusting inotify (for file
    /// systems whose changes inotify does not see, such as network mounts, and to
    /// measure the walk).
    pub fn walk_always(&self) {
        self.lock().walk_always();
    }

    pub fn set_limits(&self, limits: Option<UndoLimits>) {
        self.lock().set_limits(limits);
    }

    pub fn is_on(&self) -> bool {
        self.lock().on()
    }

    /// The session whose journal checkpoints go to, and how many prompts it has
    /// committed so far (a resumed session goes on counting).
    pub fn set_session(&self, id: Option<&str>, turns: u64) {
        self.lock().set_session(id, turns);
    }

    pub fn session(&self) -> Option<String> {
        self.lock().session().map(str::to_owned)
    }

    pub fn turns(&self) -> u64 {
        self.lock().turns
    }

    /// After a rewind: the conversation holds `turns` prompts now.
    pub fn set_turns(&self, turns: u64) {
        self.lock().turns = turns;
    }

    /// Reads the workspace into the shadow in the background (the first time in a
    /// workspace this copies every file the scan covers), so the first shell call does
    /// not wait for it. Returns the thread that reads, for a caller that must know when
    /// the shadow is in place (tests); `None` when there is nothing to read or the thread
    /// could not start.
    pub fn warm(&self) -> Option<std::thread::JoinHandle<()>> {
        let inputs = self.lock().warm_inputs()?;
        let tracker = self.tracker.clone();
        // Read without the lock: a turn (its prompt, its file tools, its end) does not
        // wait for it; only a shell call that comes first reads the workspace itself.
        let spawned = std::thread::Builder::new()
            .name("saki-undo-warm".into())
            .spawn(move || {
                let warmed = inputs.build();
                lock(&tracker).install(warmed);
            });
        match spawned {
            Ok(thread) => Some(thread),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start reading the workspace for undo");
                self.lock().cancel_warm();
                None
            }
        }
    }

    /// A turn that does not pass through the Worker's prompt (an accepted speculation)
    /// begins.
    pub fn begin_turn(&self, prompt: &str) {
        self.lock().begin(prompt);
    }

    /// The turn begun by [`Checkpoints::begin_turn`] committed nothing after all.
    pub fn abandon_turn(&self) {
        self.lock().abandon();
    }

    /// Before-images of workspace-relative paths about to be written.
    pub fn before_paths(&self, paths: &[String]) {
        self.lock().before_paths(paths);
    }

    pub fn after_paths(&self, paths: &[String]) {
        self.lock().after_paths(paths);
    }

    /// Seals the turn's checkpoint: what it changed and what people should know.
    pub async fn end_turn(&self) -> Option<TurnReport> {
        self.blocking(Tracker::end).await.flatten()
    }

    /// Takes back the last `turns` checkpoints of this session.
    pub async fn undo(&self, turns: usize, force: bool) -> Result<Outcome, UndoError> {
        self.edit(move |t, j| ops::undo(t.root(), t.objects(), j, turns, force))
            .await
    }

    /// Takes back every checkpoint from turn `turn` on (`Ok(None)`: none changed files).
    pub async fn undo_from(&self, turn: u64, force: bool) -> Result<Option<Outcome>, UndoError> {
        self.edit(move |t, j| ops::undo_from(t.root(), t.objects(), j, turn, force))
            .await
    }

    pub async fn redo(&self, force: bool) -> Result<Outcome, UndoError> {
        self.edit(move |t, j| ops::redo(t.root(), t.objects(), j, force))
            .await
    }

    /// Runs an undo or redo on the session's journal; the paths it wrote go into the
    /// shadow.
    async fn edit<T: Restores + Send + 'static>(
        &self,
        work: impl FnOnce(&Tracker, &mut super::Journal) -> Result<T, UndoError> + Send + 'static,
    ) -> Result<T, UndoError> {
        self.blocking(move |tracker| {
            if !tracker.on() {
                return Err(UndoError::Off);
            }
            let mut journal = tracker.journal.take().ok_or(UndoError::NothingToUndo)?;
            let result = work(tracker, &mut journal);
            tracker.journal = Some(journal);
            if let Ok(value) = &result {
                tracker.restored(&value.paths());
                tracker.save_shadow();
            }
            result
        })
        .await
        .unwrap_or(Err(UndoError::Off))
    }

    /// This session's checkpoints, oldest first.
    pub fn summaries(&self) -> Vec<Summary> {
        self.lock()
            .journal
            .as_ref()
            .map(ops::summaries)
            .unwrap_or_default()
    }
}

/// Results that wrote paths.
pub trait Restores {
    fn paths(&self) -> Vec<String>;
}

impl Restores for Outcome {
    fn paths(&self) -> Vec<String> {
        self.restored.clone()
    }
}

impl Restores for Option<Outcome> {
    fn paths(&self) -> Vec<String> {
        self.as_ref().map(Outcome::paths).unwrap_or_default()
    }
}

fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait::async_trait]
impl Interceptor for Checkpoints {
    /// Installed last, so no later interceptor can cancel the prompt: it is committed,
    /// and its turn begins. The person's changes since the last scan are read in the
    /// background while the model thinks.
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        let Item::User { text } = user else {
            return PromptAction::Continue;
        };
        let text = text.clone();
        let tracker = self.tracker.clone();
        self.blocking(move |t| t.begin(&text)).await;
        let spawned = std::thread::Builder::new()
            .name("saki-undo-scan".into())
            .spawn(move || lock(&tracker).refresh_for_turn());
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "the turn's first scan waits for its first call");
        }
        PromptAction::Continue
    }

    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        let batch = call.ctx.batch_id.clone();
        match need(call) {
            Need::Nothing => {}
            Need::File(path) => {
                self.blocking(move |t| t.before_tool(&batch, &path)).await;
            }
            Need::Scan { tool, command } => {
                self.blocking(move |t| t.batch_starts(&batch, &tool, command.as_deref()))
                    .await;
            }
        }
        // A checkpoint never stops a call: what it could not save, the turn says.
        ToolAction::Allow
    }

    async fn post_tool_call(&self, result: &ToolResultInfo) {
        let batch = result.call.ctx.batch_id.clone();
        match need(&result.call) {
            Need::Nothing => {}
            Need::File(path) => {
                self.blocking(move |t| t.after_tool(&path)).await;
            }
            Need::Scan { .. } => {
                self.blocking(move |t| t.batch_ends(&batch)).await;
            }
        }
    }
}
