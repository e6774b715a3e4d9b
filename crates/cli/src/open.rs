//! One way to start a session, for every front end (`exec`, the UI, `acp`): the session to
//! continue, config (with the trust question where a person can answer it), a local
//! model server, recovery of what a killed saki left, the system prompt, the engine with
//! its sandbox and MCP servers, and the resumed history or the id a new session will
//! have. A failure is a [`StartError`] carrying the exit code and the `--json` kind.

use crate::args::{ProviderArgs, RunArgs};
use crate::config::{ConfigError, Resolved};
use crate::exit::ExitCode;
use crate::session::{self, Resume};
use crate::setup;
use saki_engine::{Alert, Engine, EngineEvent, Level};
use saki_mcp::ServerConfig;
use saki_sandbox::SandboxStatus;
use saki_tools::{Approver, Workspace};
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Why a session could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    /// `usage`, `config`, `session` or `internal` (the `--json` error kind).
    pub kind: &'static str,
    pub code: ExitCode,
    pub message: String,
    /// No API key: the message names the variable to set.
    pub missing_key: bool,
}

impl StartError {
    fn new(kind: &'static str, code: ExitCode, message: impl Into<String>) -> Self {
        Self {
            kind,
            code,
            message: message.into(),
            missing_key: false,
        }
    }
}

/// Asks whether to trust a workspace, given the keys its config may not set untrusted.
pub type AskTrust = dyn Fn(&std::path::Path, &[String]) -> bool + Sync;

/// What differs between front ends when they start a session.
pub struct Open<'a> {
    pub provider: &'a ProviderArgs,
    pub run: &'a RunArgs,
    /// The workspace (a front end may have given it its own `Fs`).
    pub workspace: Workspace,
    pub resume: Resume,
    /// Who answers approvals; `None`: the person, through engine events.
    pub approver: Option<Arc<dyn Approver>>,
    /// Whether to read ahead, given what config says.
    pub suggestions: &'a (dyn Fn(&Resolved) -> bool + Sync),
    /// Asks a person whether to trust a workspace whose config sets keys only a trusted
    /// one may (the UI, before it takes the terminal); `None`: nobody can answer.
    pub ask_trust: Option<&'a AskTrust>,
    /// Progress while a local model server starts.
    pub note: &'a (dyn Fn(&str) + Sync),
    /// MCP servers beside the configured ones (an editor's).
    pub extra_mcp: Vec<(String, ServerConfig)>,
    /// The id a new session's log will have (an editor names it at once).
    pub session_id: Option<String>,
}

/// A session ready to run.
pub struct Opened {
    pub engine: Engine,
    pub events: UnboundedReceiver<EngineEvent>,
    /// For alerts a front end adds (the MCP servers' as they come).
    pub events_tx: UnboundedSender<EngineEvent>,
    pub resolved: Resolved,
    /// The session's hooks (the UI's notifications add their event).
    pub hooks: saki_llm_worker::hook::Hooks,
    pub sandbox: SandboxStatus,
    pub mcp: crate::mcp_setup::McpSession,
    /// The local model server, kept alive as long as this is.
    pub local: Option<crate::local::LocalServer>,
    pub suggestions: bool,
    pub resumed: bool,
    /// Spans for the session's events, when config asks; `telemetry::finish` ends it.
    pub telemetry: Option<crate::telemetry::Tap>,
    /// What the person should know before the first prompt: the sandbox and setup, what
    /// a killed saki left and was repaired, problems of a resumed log.
    pub alerts: Vec<Alert>,
}

pub async fn open(o: Open<'_>) -> Result<Opened, StartError> {
    let root = o.workspace.root().to_path_buf();
    let store = session::store();
    // A session to resume is loaded first: its provider and model are used unless flags
    // name others.
    let loaded = match (&o.resume, &store) {
        (Resume::New, _) => None,
        (_, Err(e)) => return Err(StartError::new("session", ExitCode::Internal, e.clone())),
        (resume, Ok(store)) => session::load(store, resume, &root)
            .map_err(|e| StartError::new("session", ExitCode::Usage, e))?,
    };
    let recorded = loaded
        .as_ref()
        .map(|l| (l.meta.provider.as_str(), l.meta.model.as_str()));
    let mut resolved = setup::resolve(&root, o.provider, recorded);
    if let (Ok((r, _)), Some(ask)) = (&resolved, o.ask_trust) {
        if !r.ignored.is_empty() && !r.trust_refused && ask(&root, &r.ignored) {
            resolved = setup::resolve(&root, o.provider, recorded);
        }
    }
    let (mut resolved, hooks) = resolved.map_err(|e| StartError {
        missing_key: matches!(e, ConfigError::MissingKey { .. }),
        ..StartError::new("config", ExitCode::Config, e.to_string())
    })?;
    for (name, server) in o.extra_mcp {
        resolved.mcp_servers.insert(name, server);
    }
    let local = setup::prepare(&mut resolved, o.note)
        .await
        .map_err(|e| StartError::new("config", ExitCode::Config, e))?;
    // Before anything reads or writes the workspace: what a killed saki left is repaired.
    let recovered = setup::recover();
    // A resumed session keeps its own system prompt; only a new one needs git.
    let system_prompt = match loaded {
        None => session::system_prompt_for(&root).await,
        Some(_) => String::new(),
    };
    let suggestions = (o.suggestions)(&resolved);
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    // Telemetry sees every event on its way to the front end.
    let telemetry = crate::telemetry::start_or_warn(&resolved.otel, &events_tx);
    let (events, telemetry) = crate::telemetry::tap(events, telemetry);
    let front = setup::FrontEnd {
        approver: o.approver,
        events: events_tx.clone(),
        store: store.ok(),
        system_prompt,
        suggestions,
    };
    let (mut engine, sandbox, mcp) = setup::engine(
        &resolved,
        hooks.clone(),
        o.provider,
        o.run,
        &o.workspace,
        front,
    )
    .map_err(|(code, message)| {
        let kind = if code == ExitCode::Internal {
            "internal"
        } else {
            "config"
        };
        StartError::new(kind, code, message)
    })?;
    let mut alerts = setup::setup_alerts(&resolved, &sandbox);
    alerts.extend(recovered.into_iter().map(|message| Alert {
        level: Level::Warn,
        message,
    }));
    let resumed = loaded.is_some();
    match loaded {
        Some(loaded) => engine.continue_loaded(loaded).await.map_err(|e| {
            StartError::new("session", ExitCode::Usage, format!("cannot resume: {e}"))
        })?,
        None => {
            if let Some(id) = o.session_id {
                engine.preset_session_id(id);
            }
        }
    }
    Ok(Opened {
        engine,
        events,
        events_tx,
        resolved,
        hooks,
        sandbox,
        mcp,
        local,
        suggestions,
        resumed,
        telemetry,
        alerts,
    })
}
