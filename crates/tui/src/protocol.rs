//! The two message types between the UI and the engine that drives the Worker: the UI
//! sends [`Action`]s (what the person asked for), the engine sends [`EngineEvent`]s (what
//! happened). The UI never calls into the agent directly, so it stays responsive while a
//! turn runs and can be tested by feeding it events.

use saki_followup::ReadAheadStats;
use saki_llm_worker::{Item, ToolCallInfo, ToolExecutionContext};
use saki_tools::{Approval, ApprovalMode};
use tokio::sync::oneshot;

/// What the person asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run a turn for this text (`@path` references still in it).
    Submit {
        text: String,
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
    /// `/stats`: report what reading ahead did and cost.
    Stats,
    /// The suggestion is on screen now: only then is it speculated (one the person
    /// never sees, e.g. one that arrives while they type, costs nothing more).
    SuggestionShown {
        text: String,
    },
    Quit,
}

/// How serious an alert is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

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

/// One saved session, for the `/resume` picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    pub id: String,
    pub title: String,
    pub model: String,
    /// "5m ago".
    pub age: String,
}

/// What happened in the engine.
#[derive(Debug)]
pub enum EngineEvent {
    Status(Status),
    /// Tokens in the context after the latest request (the status line's gauge).
    Tokens(u64),
    /// A turn started running (the input stays editable; Esc cancels).
    TurnStarted,
    TextDelta(String),
    ThinkingDelta(String),
    /// An item was appended to history.
    Committed(Item),
    /// A tool call was approved and started.
    ToolStarted(ToolExecutionContext),
    /// The turn ended; `note` says how when it did not simply complete.
    TurnFinished {
        note: Option<(Level, String)>,
    },
    Alert {
        level: Level,
        message: String,
    },
    Approval(ApprovalRequest),
    /// The predicted next prompt (shown after the suggestion delay).
    Suggestion(String),
    Speculation(SpecState),
    /// A completed speculation was accepted: its items are history now.
    Accepted {
        items: Vec<Item>,
        files: Vec<String>,
        saved_ms: u64,
        /// The next suggestion, shown at once.
        pipelined: Option<String>,
    },
    /// History was replaced (`/new`, `/resume`): redraw the transcript from it.
    History(Vec<Item>),
    Sessions(Vec<SessionEntry>),
    /// What reading ahead did and cost this session (`/stats`).
    Stats(ReadAheadStats),
}
