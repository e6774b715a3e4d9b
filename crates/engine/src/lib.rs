//! saki-engine: the spec's Pod as one type. An [`Engine`] owns a session — the Worker and
//! its history, the session log, `@path` resolution, the interceptors (in their one
//! correct order), compaction and reading ahead — and carries out a front end's
//! [`Action`]s one at a time, reporting everything as [`EngineEvent`]s. `saki exec`,
//! `exec --follow-ups` and the interactive UI are front ends over it: they render events
//! and answer approvals. While a turn runs it still listens, so Cancel stops it and a
//! mode change applies at once. See README.md.

mod ask;
mod bridge;
mod commands;
mod delegation;
pub mod describe;
mod plan;
mod prewarm;
pub mod protocol;
mod queue;
mod read_ahead;
mod recorder;
mod session;
mod sessions;
pub mod slash;
mod start;
mod subagent;
mod turn;
mod undo;

#[cfg(any(test, feature = "test-support"))]
pub mod harness;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_delegation;
#[cfg(test)]
mod tests_lsp;
#[cfg(test)]
mod tests_read_ahead;
#[cfg(test)]
mod tests_subagent_turn;
#[cfg(test)]
mod tests_undo;
#[cfg(test)]
mod tests_usage;

pub use delegation::Delegation;
pub use prewarm::is_local;
pub use protocol::TurnEntry;
pub use protocol::{
    Action, Alert, ApprovalRequest, Attachment, EngineEvent, Level, NoSuggestion, SessionEntry,
    SpecOutcome, SpecState, SpeculationEnded, Status, TurnEnd,
};
pub use protocol::{
    Approval, ApprovalMode, ClientError, Item, Plan, PlanStep, ReadAheadStats, StepStatus,
    StopReason, SuppressReason, TextBlockEvent, ThinkingBlockEvent, ToolCallInfo,
    ToolExecutionContext, ToolResultStatus, TurnOutcome, TurnStatus, UsageEvent, WireApi,
    WorkerEvent,
};
pub use protocol::{QuestionKind, QuestionRequest, SubagentEvent, LEAVE_PLAN_OPTIONS};
pub use recorder::{FailureReporter, Recorder};
/// Where a session's file tools read and write: a front end may give a session its own
/// (an editor's buffers), through [`Parts::workspace`]'s `set_fs`.
pub mod fs {
    pub use saki_llm_worker::ToolError;
    pub use saki_tools::fs::*;
    pub use saki_tools::image::is_image_name;
}

/// What front ends render beside events, under the engine's name: a front end depends
/// on this crate alone.
pub use saki_llm_worker::pricing;
pub use saki_llm_worker::{BackgroundUsage, TokenCount};
pub use saki_tools::sanitize;
/// The suggestion a front end shows: its state machine and how it was accepted.
pub mod suggestion {
    pub use saki_read_ahead::{Accept, AcceptMethod, Phase, SuggestionState};
}

/// A fresh session id, for a front end that names a session before its first prompt
/// ([`Engine::preset_session_id`]).
pub fn new_session_id() -> String {
    SessionStore::new_id()
}
pub use session::{continue_session, Opened, Resume};
pub use sessions::ago;
pub use start::{
    load_session, open_log, recover_killed_writes, session_store, start, ExitCode, LocalModel,
    ServerQuery, SessionConfig, SessionSpec, ShellSpec, Start, StartError, Started,
};
pub use start::{local_server, mcp};
pub use turn::{outcome_note, turn_note};

use bridge::{RecorderSlot, UiSender};
use read_ahead::ReadAhead;
use saki_llm_client::{CancellationToken, Client};
use saki_llm_worker::hook::{HookInterceptor, Hooks};
use saki_llm_worker::{SharedTools, ToolServer, Worker, WorkerConfig};
use saki_pod::commands::CustomCommand;
use saki_pod::{CompactionSettings, Compactor, FsView, PodInterceptor, SessionStore};
use saki_read_ahead::{CacheSafeStore, TurnUsage};
use saki_sandbox::{SandboxMode, SandboxStatus};
use saki_tools::{ApprovalPolicy, Approver, McpLookup, SessionGrants, SharedMode, Workspace};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// What one model choice means for a session: everything the engine takes from config.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: String,
    /// The Worker's model and request knobs (`worker.model` is the session's model).
    pub worker: WorkerConfig,
    /// The model that suggests and speculates.
    pub fast_model: String,
    pub context_window: Option<u64>,
    /// Cap on each `@path` file's body, like any tool output.
    pub tool_output_max_bytes: usize,
    pub compaction: CompactionSettings,
    /// Fill the server's prompt cache with the base prompt before the first prompt (only
    /// for a server on this machine known to keep one; see `prewarm.rs`).
    pub prewarm: bool,
    /// The session id is the provider's prompt cache key (OpenAI).
    pub prompt_cache_key_by_session: bool,
}

/// Re-resolves the settings when the person picks another model (`/model`): `model` and
/// `fast_model` are the choices made so far (`None`: config's).
pub trait ModelResolver: Send + Sync {
    fn resolve(&self, model: Option<&str>, fast_model: Option<&str>) -> Result<Settings, String>;
}

/// See [`Parts::mcp_report`].
pub type McpReport = Arc<dyn Fn() -> String + Send + Sync>;

/// See [`Parts::prompt_builder`].
pub type PromptBuilder = Arc<dyn Fn() -> String + Send + Sync>;

/// Everything an engine starts with.
pub struct Parts {
    pub client: Client,
    pub tools: Arc<ToolServer>,
    pub workspace: Arc<Workspace>,
    pub settings: Settings,
    pub hooks: Hooks,
    pub mode: ApprovalMode,
    /// Who answers approvals; `None`: the person, through [`EngineEvent::Approval`].
    pub approver: Option<Arc<dyn Approver>>,
    /// Where sessions are kept; `None`: nothing is saved (and the person is told).
    pub store: Option<SessionStore>,
    pub sandbox: SandboxStatus,
    /// A new session's system prompt (a resumed one keeps its own).
    pub system_prompt: String,
    /// Builds the system prompt for `/new` (and for an old session that stored none).
    /// Blocking: it may run git and read files; the engine calls it off the runtime.
    pub prompt_builder: PromptBuilder,
    /// Predict the next prompt after each completed turn and speculate it.
    pub suggestions: bool,
    pub resolver: Option<Arc<dyn ModelResolver>>,
    /// The tool set the Worker reads at each request, when tools may join it while the
    /// session runs (MCP servers that connect later); `None`: `tools` as they are.
    pub shared_tools: Option<SharedTools>,
    /// What the approval policy knows of MCP tools; `None`: every MCP call is asked about.
    pub mcp: Option<Arc<dyn McpLookup>>,
    /// `/mcp`: the servers, their state and their tools, as lines for people.
    pub mcp_report: Option<McpReport>,
    /// The person's custom slash commands (`saki_pod::commands::load`).
    pub commands: Vec<CustomCommand>,
    pub events: UnboundedSender<EngineEvent>,
}

pub struct Engine {
    worker: Worker,
    ui: UiSender,
    workspace: Arc<Workspace>,
    settings: Settings,
    /// The models the person picked (`/model`), for the resolver.
    chosen: (Option<String>, Option<String>),
    /// Actions sent while a turn ran, carried out in order once it is over.
    pending: VecDeque<Action>,
    /// The id the session log is created under at the first prompt (a front end that
    /// names the session before it has one); `None`: a fresh id then.
    preset_id: Option<String>,
    resolver: Option<Arc<dyn ModelResolver>>,
    prompt_builder: PromptBuilder,
    mcp_report: Option<McpReport>,
    commands: Arc<Vec<CustomCommand>>,
    hooks: Hooks,
    pod: Arc<PodInterceptor>,
    mode: SharedMode,
    grants: Arc<SessionGrants>,
    slot: RecorderSlot,
    store: Option<SessionStore>,
    tokens: Arc<AtomicU64>,
    suggestions: bool,
    sandbox: SandboxStatus,
    cache: CacheSafeStore,
    /// Background tokens, shared with the compactor and the front end, which reports them.
    spent: BackgroundUsage,
    /// Reading ahead's tokens, held until the turn they prepare starts, then put in `spent`
    /// (see `saki_read_ahead::turn_usage`).
    turn_usage: TurnUsage,
    main_usage: bridge::MainUsage,
    /// Suggestion, speculation and pipelined suggestion (`read_ahead.rs`).
    read_ahead: ReadAhead,
    /// The local server's prompt cache being filled with the base prompt (see
    /// `prewarm`); dropped, and so cancelled, at the first submit.
    prewarm: Option<prewarm::Prewarm>,
    /// Every turn's file changes, for `/undo` and `/rewind` (`undo.rs`).
    checkpoints: saki_undo::Checkpoints,
    /// Who answers approvals (subagents ask the same one).
    approver: Arc<dyn Approver>,
    /// Skills, agents and memory (`delegation.rs`); `None` until set.
    delegation: Option<Arc<Delegation>>,
    /// What `/model` and each turn's end share with the running subagents (`None`
    /// without the `agent` tool).
    subagents: Option<subagent::Shared>,
}

/// What the action loop does while something long runs.
enum Interrupt {
    Cancel,
    Quit,
}

impl Engine {
    /// Wires the Worker. The interceptors' order is the engine's to keep: the `@path`
    /// stash first (a prompt another interceptor cancels must still take its files with
    /// it, or they would leak into the next prompt), then approvals, then the person's
    /// hooks (which see only calls the mode allows).
    pub fn new(parts: Parts) -> Self {
        let Parts {
            client,
            tools,
            workspace,
            settings,
            hooks,
            mode,
            approver,
            store,
            sandbox,
            system_prompt,
            prompt_builder,
            suggestions,
            resolver,
            shared_tools,
            mcp,
            mcp_report,
            commands,
            events: ui,
        } = parts;
        let mut worker = Worker::new(client, tools, settings.worker.clone());
        if let Some(shared) = shared_tools {
            worker.set_shared_tools(shared);
        }
        let spent = BackgroundUsage::new();
        worker.set_context_guard(Arc::new(compactor(
            &settings, &worker, &hooks, &workspace, &spent,
        )));
        worker.set_system_prompt(Some(system_prompt));
        let pod = Arc::new(PodInterceptor::default());
        worker.add_interceptor(pod.clone());
        if settings.worker.guard_unasked_changes {
            let rewrite = settings
                .worker
                .rewrite_edits
                .then(|| rewrite_edits(&settings, &worker, &workspace, &spent));
            for guard in saki_tools::guards::small_model_guards(&workspace, rewrite) {
                worker.add_interceptor(guard);
            }
        }
        let mode = SharedMode::new(mode);
        let grants = Arc::new(SessionGrants::default());
        let approver = approver.unwrap_or_else(|| Arc::new(bridge::UiApprover(ui.clone())));
        let mut policy = ApprovalPolicy::shared(
            mode.clone(),
            grants.clone(),
            approver.clone(),
            workspace.clone(),
        );
        if let Some(mcp) = mcp {
            policy = policy.with_mcp(mcp);
        }
        worker.add_interceptor(Arc::new(policy));
        if !hooks.is_empty() {
            worker.add_interceptor(Arc::new(HookInterceptor::new(hooks.clone())));
        }
        // Last: it sees only prompts and calls that will run, and numbers the turns.
        let checkpoints = undo::checkpoints(&workspace, store.as_ref());
        worker.add_interceptor(Arc::new(checkpoints.clone()));
        let forwarder = bridge::StreamForwarder(ui.clone());
        worker
            .timeline_mut()
            .on_text_block(forwarder.clone())
            .on_thinking_block(forwarder);
        let slot = RecorderSlot::default();
        let tokens = Arc::new(AtomicU64::new(0));
        let main_usage = bridge::MainUsage::default();
        worker.set_observer(bridge::observer(
            ui.clone(),
            slot.clone(),
            tokens.clone(),
            main_usage.clone(),
            worker.client().config().wire_api,
        ));
        worker.set_durability(Arc::new(bridge::SlotDurability(slot.clone())));
        if suggestions {
            saki_read_ahead::cleanup_stale(&saki_read_ahead::default_base());
        }
        Self {
            worker,
            ui,
            workspace,
            settings,
            chosen: (None, None),
            preset_id: None,
            pending: VecDeque::new(),
            resolver,
            prompt_builder,
            mcp_report,
            commands: Arc::new(commands),
            hooks,
            pod,
            mode,
            grants,
            slot,
            store,
            tokens,
            suggestions,
            sandbox,
            cache: CacheSafeStore::default(),
            turn_usage: TurnUsage::new(spent.clone()),
            spent,
            main_usage,
            read_ahead: ReadAhead::default(),
            prewarm: None,
            checkpoints,
            approver,
            delegation: None,
            subagents: None,
        }
    }

    fn send(&self, event: EngineEvent) {
        let _ = self.ui.send(event);
    }

    fn alert(&self, level: Level, message: impl Into<String>) {
        self.send(EngineEvent::Alert {
            level,
            message: message.into(),
        });
    }

    /// Background tokens (suggestions, speculations, compaction summaries) not reported
    /// yet; shared, so a front end can report them with each turn's end. Reading ahead's
    /// arrive when the turn they prepare starts, so that turn's end reports them whichever
    /// request finished first (docs/events.md, `background_usage`).
    pub fn background_usage(&self) -> BackgroundUsage {
        self.spent.clone()
    }

    /// The person's custom slash commands.
    pub fn commands(&self) -> &[CustomCommand] {
        &self.commands
    }

    /// The current session's id, once it has a log.
    pub fn session_id(&self) -> Option<String> {
        bridge::recorder(&self.slot)
            .map(|r| r.id())
            .or_else(|| self.preset_id.clone())
    }

    pub fn status(&self) -> Status {
        Status {
            provider: self.settings.provider.clone(),
            model: self.worker.model().to_owned(),
            // The model reading ahead, when it is not the session's.
            fast_model: Some(self.settings.fast_model.clone()).filter(|m| m != self.worker.model()),
            context_window: self.settings.context_window,
            tokens_used: self.tokens.load(Ordering::Relaxed),
            approval: Some(self.mode.get()),
            session_id: self.session_id(),
            sandbox: Some(self.sandbox.label()),
            sandboxed: self.sandbox.enforced || self.sandbox.mode == SandboxMode::Off,
        }
    }

    fn send_status(&self) {
        self.send(EngineEvent::Status(self.status()));
    }

    /// What starts before the first action, while the person types: the prewarm (only
    /// here, so once this returned, a session without one will not send it) and undo's
    /// background read of the workspace.
    fn warm_up(&mut self) {
        if self.settings.prewarm && self.prewarm.is_none() {
            self.prewarm = Some(prewarm::start(&self.worker));
        }
        if self.checkpoints.is_on() {
            self.checkpoints.warm();
        }
    }

    /// Carries out actions until the front end quits or goes away; returns what reading
    /// ahead did and cost, for the line printed at exit.
    pub async fn run(mut self, mut actions: UnboundedReceiver<Action>) -> ReadAheadStats {
        self.warm_up();
        loop {
            let action = match self.pending.pop_front() {
                // What was sent while the last turn ran goes first, in order.
                Some(action) => {
                    if queue::is_prompt(&action) {
                        self.send(EngineEvent::Queued(queue::prompts(&self.pending)));
                    }
                    Some(action)
                }
                None => tokio::select! {
                    action = actions.recv() => action,
                    finished = self.read_ahead.finished() => {
                        self.on_read_ahead(finished);
                        continue;
                    }
                },
            };
            let Some(action) = action else { break };
            let quit = match action {
                Action::Submit { text } => {
                    self.prewarm = None;
                    // Before the turn can end: its report carries what prepared it.
                    self.turn_usage.turn_started();
                    self.submit(text, Vec::new(), &mut actions).await
                }
                Action::SubmitParts { text, attachments } => {
                    self.prewarm = None;
                    self.turn_usage.turn_started();
                    self.submit(text, attachments, &mut actions).await
                }
                Action::Compress => self.compress(&mut actions).await,
                Action::SetModel { model, fast } => {
                    self.set_model(model, fast);
                    false
                }
                Action::SetApproval(mode) => {
                    // A speculation ran under the old mode's gate: its edits may not be
                    // allowed under the new one.
                    if mode != self.mode.get() {
                        self.discard_speculation();
                    }
                    self.mode.set(mode);
                    self.send_status();
                    false
                }
                Action::NewSession => {
                    self.new_session().await;
                    false
                }
                Action::ListSessions => {
                    self.list_sessions();
                    false
                }
                Action::Resume { id } => {
                    self.resume(&id).await;
                    false
                }
                Action::Dismiss => {
                    self.discard_speculation();
                    false
                }
                Action::SuggestionShown { text } => {
                    self.suggestion_shown(text);
                    false
                }
                Action::SetReadAhead(on) => {
                    self.suggestions = on;
                    false
                }
                Action::ListMcp => {
                    let report = match &self.mcp_report {
                        Some(report) => report(),
                        None => "no MCP servers in this session".to_owned(),
                    };
                    self.alert(Level::Info, report);
                    false
                }
                Action::Stats => {
                    self.send(EngineEvent::Stats(self.read_ahead_stats()));
                    false
                }
                Action::Undo { turns, force } => {
                    self.undo(turns, force).await;
                    false
                }
                Action::Redo { force } => {
                    self.redo(force).await;
                    false
                }
                Action::ListTurns => {
                    self.list_turns();
                    false
                }
                Action::Rewind { turn, force } => {
                    self.rewind(turn, force).await;
                    false
                }
                Action::Sync(n) => {
                    self.send(EngineEvent::Synced(n));
                    false
                }
                Action::ListSkills => {
                    self.list_skills();
                    false
                }
                Action::ListMemory => {
                    self.list_memory();
                    false
                }
                Action::ListLsp => {
                    let report = match self.workspace.code_intel() {
                        Some(code_intel) => code_intel.report(),
                        None => "no language servers in this session (none found on PATH, or lsp = false)".to_owned(),
                    };
                    self.alert(Level::Info, report);
                    false
                }
                Action::Cancel => false,
                Action::Quit => true,
            };
            if quit {
                break;
            }
        }
        self.discard_speculation();
        // Language servers stop with the session.
        if let Some(code_intel) = self.workspace.code_intel() {
            code_intel.shutdown().await;
        }
        // What reading ahead spent for a turn that never came is reported at the end.
        self.turn_usage.close();
        self.read_ahead_stats()
    }

    /// Runs `work` while still answering actions: Cancel cancels `cancel` (and hands the
    /// prompts queued meanwhile back to the person), Quit cancels and reports it, mode
    /// changes apply at once; anything else joins `pending`, to be carried out in order
    /// once the turn is over.
    async fn listening<T>(
        actions: &mut UnboundedReceiver<Action>,
        pending: &mut VecDeque<Action>,
        mode: &SharedMode,
        ui: &UiSender,
        cancel: &CancellationToken,
        work: impl Future<Output = T>,
    ) -> (T, Option<Interrupt>) {
        tokio::pin!(work);
        let mut interrupt = None;
        loop {
            tokio::select! {
                out = &mut work => return (out, interrupt),
                action = actions.recv() => match action {
                    Some(Action::Cancel) => {
                        cancel.cancel();
                        interrupt.get_or_insert(Interrupt::Cancel);
                        // The person stopped: what they queued is theirs again, not the model's.
                        let prompts = queue::take_prompts(pending);
                        if !prompts.is_empty() {
                            let _ = ui.send(EngineEvent::Unqueued(prompts));
                            let _ = ui.send(EngineEvent::Queued(Vec::new()));
                        }
                    }
                    Some(Action::Quit) | None => {
                        cancel.cancel();
                        interrupt = Some(Interrupt::Quit);
                    }
                    Some(Action::SetApproval(m)) => mode.set(m),
                    Some(Action::Dismiss | Action::SuggestionShown { .. }) => {}
                    Some(other) => {
                        let prompt = queue::is_prompt(&other);
                        pending.push_back(other);
                        if prompt {
                            let _ = ui.send(EngineEvent::Queued(queue::prompts(pending)));
                        }
                    }
                },
            }
        }
    }
}

/// The compaction policy for `settings`, summarising with the session's client.
fn compactor(
    settings: &Settings,
    worker: &Worker,
    hooks: &Hooks,
    workspace: &Arc<Workspace>,
    spent: &BackgroundUsage,
) -> Compactor {
    Compactor::new(worker.client().clone(), settings.compaction.clone())
        .with_hooks(hooks.clone())
        .with_fs(FsView::new(workspace.clone()))
        .with_background_usage(spent.clone())
}

/// The rewrite of a small model's changes (see `saki_tools::rewrite`), asked of the
/// session's own model with its sampling and answer bound.
fn rewrite_edits(
    settings: &Settings,
    worker: &Worker,
    workspace: &Arc<Workspace>,
    spent: &BackgroundUsage,
) -> saki_tools::rewrite::RewriteEdits {
    let model = saki_tools::rewrite::RewriteModel::new(
        worker.client().clone(),
        settings.worker.model.clone(),
        settings.worker.temperature,
        settings.worker.max_output_tokens,
    );
    saki_tools::rewrite::RewriteEdits::new(workspace.clone(), model).with_usage(spent.clone())
}
