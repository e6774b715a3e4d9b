//! The two message types between a front end and the engine: the front end sends
//! [`Action`]s (what the person asked for), the engine sends [`EngineEvent`]s (what
//! happened). No front end calls into the agent directly, so the UI stays responsive while
//! a turn runs, `exec` renders the same stream as text or JSON Lines, and both can be
//! tested by feeding them events.

use tokio::sync::oneshot;

// The types events and actions carry, under the engine's name: a front end depends on
// this crate alone for what it renders and answers.
pub use saki_llm_client::{ClientError, StopReason, UsageEvent, WireApi};
pub use saki_llm_worker::{
    Item, TextBlockEvent, ThinkingBlockEvent, ToolCallInfo, ToolExecutionContext, ToolResultStatus,
    TurnOutcome, TurnStatus, WorkerEvent,
};
pub use saki_read_ahead::{ReadAheadStats, SuppressReason};
pub use saki_tools::plan::{Plan, PlanStep, StepStatus};
pub use saki_tools::{Approval, ApprovalMode};

/// What the person asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run a turn for this text (`@path` references still in it).
    Submit {
        text: String,
    },
    /// A prompt with parts beside its text (an editor's embedded file contents, images):
    /// each attachment joins the prompt as an `@path` reference would, capped and
    /// scope-checked like one.
    SubmitParts {
        text: String,
        attachments: Vec<Attachment>,
    },
    /// Cancel the running turn (model stream and running tools).
    Cancel,
    /// `/compress`: compact the context now.
    Compress,
    /// `/model NAME` (`fast: false`) or `/model --fast NAME`.
    SetModel {
        model: String,
        fast: bool,
    },
    /// `/approval MODE` or Shift+Tab.
    SetApproval(ApprovalMode),
    /// `/new`: start a fresh session.
    NewSession,
    /// `/resume`: list recent sessions to pick from.
    ListSessions,
    /// Continue the session with this id.
    Resume {
        id: String,
    },
    /// The person typed over the suggestion: abort its speculation.
    Dismiss,
    /// Turn reading ahead on or off for what follows (a speculation already running
    /// finishes; off, no suggestion is asked for after it).
    SetReadAhead(bool),
    /// `/mcp`: report the MCP servers, their state and their tools.
    ListMcp,
    /// `/stats`: report what reading ahead did and cost.
    Stats,
    /// `/undo [N] [--force]`: take back the file changes of the last `turns` turns that
    /// changed files; `force` overwrites files changed since.
    Undo {
        turns: usize,
        force: bool,
    },
    /// `/redo [--force]`: put back what the last undo took back.
    Redo {
        force: bool,
    },
    /// `/rewind`: list the turns the conversation can go back to.
    ListTurns,
    /// Go back to just before turn `turn`: the files of it and every later turn
    /// reverted, the conversation cut before its prompt (which goes back to the input).
    Rewind {
        turn: u64,
        force: bool,
    },
    /// The suggestion is on screen now: only then is it speculated (one the person
    /// never sees, e.g. one that arrives while they type, costs nothing more).
    SuggestionShown {
        text: String,
    },
    /// Answered with [`EngineEvent::Synced`] once every action sent before it was carried
    /// out: a front end knows when a command's events are all in.
    Sync(u64),
    /// `/skills`: report the skills the session knows.
    ListSkills,
    /// `/memory`: report the instruction files in effect and where `remember` writes.
    ListMemory,
    /// `/lsp`: report the language servers, their states and their counts.
    ListLsp,
    Quit,
}

/// What a prompt carries beside its text ([`Action::SubmitParts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    /// A file's contents as the front end holds them (an editor's unsaved buffer);
    /// `path` is where the file is, and must be in the workspace.
    Text { path: String, text: String },
    /// An image's bytes; `name` is what the transcript calls it.
    Image { name: String, data: Vec<u8> },
}

/// An alert made before or outside a turn (setup, `@path` references); a front end hands
/// it on as `EngineEvent::from(alert)`, which keeps its level.
pub use saki_pod::Alert;
/// How serious an alert is: saki-pod's `AlertLevel`, the one level type of every alert
/// (an `@path` problem, a setup alert, an engine note), under the protocol's name.
pub use saki_pod::AlertLevel as Level;

/// Where the speculation for the current suggestion stands (the status line shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpecState {
    /// Suggestions and speculation are turned off.
    Off,
    #[default]
    Idle,
    Running,
    /// Completed: submitting the suggestion unchanged shows its result at once.
    Ready,
    /// Stopped at a tool it may not run ahead; submitting runs the suggestion normally.
    Boundary,
}

impl SpecState {
    pub fn label(self) -> Option<&'static str> {
        match self {
            SpecState::Off | SpecState::Idle => None,
            SpecState::Running => Some("speculating"),
            SpecState::Ready => Some("ready"),
            SpecState::Boundary => Some("boundary"),
        }
    }
}

/// The facts the status line shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    pub provider: String,
    pub model: String,
    pub fast_model: Option<String>,
    pub context_window: Option<u64>,
    /// Prompt tokens of the last request (how full the context is).
    pub tokens_used: u64,
    pub approval: Option<ApprovalMode>,
    pub session_id: Option<String>,
    /// Which sandbox shell commands run in: `sandbox: workspace-write`, `sandbox: off`,
    /// `sandbox: none (…)`.
    pub sandbox: Option<String>,
    /// Whether that sandbox is really enforced (drawn as a warning when not).
    pub sandboxed: bool,
}

/// A tool call waiting for the person's answer.
#[derive(Debug)]
pub struct ApprovalRequest {
    pub call: ToolCallInfo,
    pub mode: ApprovalMode,
    /// How "allow for this session" would read (`edit`, `cargo test …`); `None` when the
    /// call cannot be granted for the session (a compound shell command, a command that
    /// reaches outside the workspace, a sensitive file).
    pub grant_label: Option<String>,
    /// Why this call is asked about beyond the mode's rule (`reads the environment: $HOME`).
    pub why: Option<String>,
    pub reply: oneshot::Sender<Approval>,
}

/// A question a tool call puts to the person: `ask_user`, or `exit_plan_mode` asking
/// whether to leave plan mode. A front end shows `question` with `options` and sends the
/// answer through `reply`: `Some(text)` (one of `options`, or any text when `free_text`).
/// `None`, or dropping `reply`, means nobody can answer: `ask_user` then gets an error
/// result saying so, and `exit_plan_mode` ends the turn with the plan (what `saki exec`
/// does at once). The engine waits for the reply while the tool call runs; Cancel stops
/// the wait.
#[derive(Debug)]
pub struct QuestionRequest {
    /// The tool call asking.
    pub call_id: String,
    pub question: String,
    /// Answers to offer, in the model's order (may be empty for `ask_user`).
    pub options: Vec<String>,
    /// Whether an answer other than `options` may be given.
    pub free_text: bool,
    pub kind: QuestionKind,
    pub reply: oneshot::Sender<Option<String>>,
}

/// What a [`QuestionRequest`] is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionKind {
    /// `ask_user`: the model asks the person.
    Ask,
    /// `exit_plan_mode` in plan mode: the model presents `plan` (Markdown). `options` are
    /// [`LEAVE_PLAN_OPTIONS`]: the approval mode to switch to, or staying in plan mode.
    LeavePlan { plan: String },
}

/// The answers to [`QuestionKind::LeavePlan`]: switch to `default`, to `auto-edit`, or
/// stay in plan mode.
pub const LEAVE_PLAN_OPTIONS: [&str; 3] = ["default", "auto-edit", "stay in plan mode"];

/// What a subagent (a running `agent` tool call) reported: its Worker's events (its
/// tool calls and results, answer, usage), under the call that started it. Its items
/// are in the session log under the same call, never in the conversation's history.
#[derive(Debug, Clone)]
pub struct SubagentEvent {
    /// The `agent` tool call this subagent runs for.
    pub parent_call_id: String,
    /// The agent's name (`explore`, `general`, a custom agent's).
    pub agent: String,
    pub event: WorkerEvent,
}

/// One saved session, for the `/resume` picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    pub id: String,
    pub title: String,
    pub model: String,
    /// "5m ago".
    pub age: String,
}

/// A turn of the conversation, for the `/rewind` picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEntry {
    pub turn: u64,
    pub prompt: String,
    /// Files its checkpoint holds (0: it changed none, or they were undone).
    pub files: usize,
}

/// How the work a `TurnStarted` announced ended.
#[derive(Debug)]
pub enum TurnEnd {
    /// A model turn ran: its outcome, or why it could not run.
    Turn(Result<TurnOutcome, ClientError>),
    /// A compaction asked for by the person ended.
    Compacted,
    /// A hook refused the prompt of an accepted speculation: nothing was applied or sent.
    AcceptRefused { reason: String },
    /// An accepted speculation's files could not all be applied, so its prompt did not
    /// run. `left_changed` names files that hold the speculation's version and could not
    /// be restored (empty: nothing was changed, and sending the prompt again runs it as a
    /// normal turn).
    NotApplied {
        reason: String,
        left_changed: Vec<String>,
    },
}

/// Why no suggestion follows a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoSuggestion {
    Suppressed(SuppressReason),
    Failed(String),
}

/// How a speculation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecOutcome {
    /// Its loop ended: submitting its suggestion unchanged accepts it.
    Completed,
    /// It stopped at a call it may not run ahead.
    Boundary,
    /// It failed or was cancelled.
    Aborted,
    /// It completed but could not be accepted (stale, or its files changed meanwhile).
    Discarded,
}

/// A speculation's end, with what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeculationEnded {
    pub suggestion: String,
    pub outcome: SpecOutcome,
    pub reason: Option<String>,
    /// At a boundary, its kind: `network`, `sensitive_path`, `out_of_scope`,
    /// `sandbox_denied`, `overlay_unavailable`, `approval_mode` or `limit`.
    pub boundary: Option<&'static str>,
    /// Shell commands it ran in an overlay of the workspace.
    pub commands_run: usize,
    /// Items it produced, and the files written in its overlay.
    pub items: usize,
    pub files: Vec<String>,
}

/// What happened in the engine.
#[derive(Debug)]
pub enum EngineEvent {
    Status(Status),
    /// Tokens in the context after the latest request (the status line's gauge).
    Tokens(u64),
    /// A turn (or a compaction) started running (the input stays editable; Esc cancels).
    TurnStarted,
    /// The answer's text blocks as they stream: start, deltas, stop.
    Text(TextBlockEvent),
    Thinking(ThinkingBlockEvent),
    /// What the Worker reported: committed items, tool calls starting, usage,
    /// compactions, recovered calls, loops, retries.
    Worker(WorkerEvent),
    /// The turn ended; `note` says how when it did not simply complete, for people.
    TurnFinished {
        note: Option<(Level, String)>,
        end: TurnEnd,
    },
    Alert {
        level: Level,
        message: String,
    },
    Approval(ApprovalRequest),
    /// The predicted next prompt (shown after the suggestion delay).
    Suggestion(String),
    /// No suggestion follows (only reported when reading ahead is on).
    NoSuggestion(NoSuggestion),
    Speculation(SpecState),
    SpeculationEnded(SpeculationEnded),
    /// A completed speculation was accepted: its items are history now.
    Accepted {
        items: Vec<Item>,
        files: Vec<String>,
        /// Shell commands the speculation ran (their files are among `files`).
        commands_run: usize,
        saved_ms: u64,
        /// The next suggestion, shown at once.
        pipelined: Option<String>,
    },
    /// History was replaced (`/new`, `/resume`): redraw the transcript from it.
    History(Vec<Item>),
    /// An undo, redo or rewind ended: what it did, or why it did nothing.
    Undone {
        level: Level,
        message: String,
    },
    /// The turns `/rewind` can go back to, newest first.
    Turns(Vec<TurnEntry>),
    /// A rewind cut the conversation before this prompt: it goes back into the input.
    Rewound {
        prompt: String,
    },
    Sessions(Vec<SessionEntry>),
    /// What reading ahead did and cost this session (`/stats`).
    Stats(ReadAheadStats),
    /// The prompts sent while a turn runs, waiting in order (empty: none wait now).
    Queued(Vec<String>),
    /// A cancel handed these queued prompts back to the person (the UI puts them in the
    /// input); they were not sent.
    Unqueued(Vec<String>),
    /// Every action sent before [`Action::Sync`] with this number was carried out.
    Synced(u64),
    /// The model's checklist (`update_plan`): after each successful call, and with
    /// `restored` when history was replaced (`/new`, `/resume`, a resumed session; empty
    /// when that history has none).
    Plan {
        plan: saki_tools::plan::Plan,
        restored: bool,
    },
    /// A tool call asks the person something (see [`QuestionRequest`]).
    Question(QuestionRequest),
    /// A subagent's progress (see [`SubagentEvent`]); also replayed after
    /// [`EngineEvent::History`] for a resumed session's subagents.
    Subagent(SubagentEvent),
}

impl From<Alert> for EngineEvent {
    fn from(alert: Alert) -> Self {
        Self::Alert {
            level: alert.level,
            message: alert.message,
        }
    }
}

impl EngineEvent {
    pub fn text_delta(text: impl Into<String>) -> Self {
        Self::Text(TextBlockEvent::Delta(text.into()))
    }

    pub fn thinking_delta(text: impl Into<String>) -> Self {
        Self::Thinking(ThinkingBlockEvent::Delta(text.into()))
    }

    pub fn committed(item: Item) -> Self {
        Self::Worker(WorkerEvent::Committed(item))
    }

    pub fn tool_started(name: impl Into<String>, ctx: ToolExecutionContext) -> Self {
        Self::Worker(WorkerEvent::ToolStarted {
            name: name.into(),
            ctx,
        })
    }

    /// A turn's end with only a note (a completed compaction when `note` is `None`).
    pub fn finished(note: Option<(Level, String)>) -> Self {
        Self::TurnFinished {
            note,
            end: TurnEnd::Compacted,
        }
    }
}
