//! The one session builder every front end uses (`exec`, the UI, `saki acp`, `saki
//! compact`; `saki undo` takes its first steps, [`open_log`]): it turns a front end's
//! settings into a running [`Engine`]. In order: the session to continue is loaded (its
//! provider and model count when config is resolved), config is resolved (the front end's
//! [`SessionConfig`]), a local model server is started when config asks, the model
//! server is asked about itself, what a killed saki left is repaired, the shell runtime
//! with its sandbox is built and probed, language servers and MCP servers are attached,
//! and the engine is built and resumed or named. A failure is a [`StartError`] that
//! carries its exit code.

mod exit;
pub mod local_server;
pub mod mcp;
mod shell;

pub use exit::ExitCode;
pub use shell::ShellSpec;

use crate::session::Resume;
use crate::{
    Delegation, Engine, EngineEvent, Level, ModelResolver, Parts, PromptBuilder, Settings,
};
use saki_llm_client::server_info::{self, ServerInfo};
use saki_llm_client::{Client, ClientConfig};
use saki_llm_worker::hook::Hooks;
use saki_mcp::ServerConfig;
use saki_pod::{Alert, AlertLevel, LoadedSession, SessionStore};
use saki_sandbox::SandboxStatus;
use saki_tools::{ApprovalMode, Approver, ShellRuntime, Workspace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    pub fn new(kind: &'static str, code: ExitCode, message: impl Into<String>) -> Self {
        Self {
            kind,
            code,
            message: message.into(),
            missing_key: false,
        }
    }

    /// A config problem (exit code 3).
    pub fn config(message: impl Into<String>) -> Self {
        Self::new("config", ExitCode::Config, message)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A GGUF model to serve for this session (`--local`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModel {
    pub path: PathBuf,
    /// Tokens of context the server gives each request.
    pub context: u32,
}

/// Where to ask a model server about itself ([`server_info::discover`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerQuery {
    pub base_url: String,
    /// Empty when config names no model: the server's own is asked for first.
    pub model: String,
    pub api_key: Option<String>,
}

/// A front end's configuration, as the builder asks for it, in this order: resolved once
/// the session to continue is known, told about the local server it asked for and what
/// the model server said about itself, then turned into a [`SessionSpec`]. The command
/// line implements it over its config files and flags.
pub trait SessionConfig: Send {
    /// Reads config for the workspace. `recorded`: the provider and model a resumed
    /// session used, taken where no flag names others.
    fn resolve(&mut self, recorded: Option<(&str, &str)>) -> Result<(), StartError>;
    /// The model to serve for this session, if config asks for one.
    fn local_model(&self) -> Option<LocalModel>;
    /// The local server [`Self::local_model`] asked for listens at `base_url`.
    fn serve_locally(&mut self, base_url: &str);
    /// The model server to ask about itself, if it should be asked (a local or private
    /// one: a public host gets no request it did not ask for).
    fn server_to_ask(&self) -> Option<ServerQuery>;
    /// The models that server serves, asked only when config names none (`query.model`
    /// empty); a config takes the one model a server serves.
    fn server_serves(&mut self, _models: Option<Vec<String>>) {}
    /// What that server said (`None`: it was not asked, or did not answer).
    fn server_said(&mut self, facts: Option<ServerInfo>);
    /// Everything the engine is built from.
    fn spec(&self) -> Result<SessionSpec, StartError>;
}

/// Everything a session's engine is built from, in the engine's terms.
pub struct SessionSpec {
    pub client: ClientConfig,
    pub settings: Settings,
    pub hooks: Hooks,
    pub mode: ApprovalMode,
    pub shell: ShellSpec,
    /// Offer only the core tools (small local models).
    pub lean_tools: bool,
    /// `lsp` / `[lsp.NAME]`.
    pub lsp: Option<saki_lsp::LspSetting>,
    /// The workspace's own config (and its commands, skills, agents) is trusted.
    pub workspace_trusted: bool,
    /// `[mcp_servers.NAME]`.
    pub mcp_servers: BTreeMap<String, ServerConfig>,
    /// saki's global config directory (custom commands, skills, agents, AGENTS.md).
    pub config_dir: Option<PathBuf>,
    /// `subagent_depth`.
    pub subagent_depth: u32,
    /// `[undo]`; `None`: checkpoints are off.
    pub undo_limits: Option<saki_undo::UndoLimits>,
    /// `/model`: settings again for other models.
    pub resolver: Option<Arc<dyn ModelResolver>>,
    /// Builds a new session's system prompt. Blocking: it may run git.
    pub prompt_builder: PromptBuilder,
    /// Predict the next prompt after each turn and speculate it.
    pub suggestions: bool,
    /// What config wants the person told before the first prompt (ignored keys).
    pub warnings: Vec<String>,
}

/// What differs between front ends when they start a session.
pub struct Start<'a> {
    /// The workspace (a front end may have given it its own `Fs`).
    pub workspace: Workspace,
    pub resume: Resume,
    /// Who answers approvals; `None`: the person, through engine events.
    pub approver: Option<Arc<dyn Approver>>,
    /// Progress while a local model server starts.
    pub note: &'a (dyn Fn(&str) + Sync),
    /// MCP servers beside the configured ones (an editor's).
    pub extra_mcp: Vec<(String, ServerConfig)>,
    /// The id a new session's log will have (an editor names it at once).
    pub session_id: Option<String>,
    /// Where a local model server comes from when config asks for one: shared by the
    /// sessions of one process (an editor's); `None`: the session starts its own.
    pub shared_local: Option<&'a local_server::SharedServer>,
}

/// A session ready to run.
pub struct Started {
    pub engine: Engine,
    pub events: UnboundedReceiver<EngineEvent>,
    /// For alerts a front end adds (the MCP servers' as they come).
    pub events_tx: UnboundedSender<EngineEvent>,
    /// The sandbox really in force.
    pub sandbox: SandboxStatus,
    /// The session's shell runtime (`/shells` lists its background commands).
    pub shell: Arc<ShellRuntime>,
    pub mcp: mcp::McpSession,
    /// The local model server, kept alive as long as this is (and, shared, as long as
    /// another session holds it).
    pub local: Option<Arc<local_server::LocalServer>>,
    pub resumed: bool,
    /// Whether the session predicts the person's next prompt (the spec's answer).
    pub suggestions: bool,
    /// What the person should know before the first prompt: config keys ignored, a
    /// sandbox not in force, what a killed saki left and was repaired, problems of a
    /// resumed log.
    pub alerts: Vec<Alert>,
}

/// Starts a session: see the module's documentation for the steps.
pub async fn start(config: &mut dyn SessionConfig, s: Start<'_>) -> Result<Started, StartError> {
    let root = s.workspace.root().to_path_buf();
    let store = session_store();
    // A session to resume is loaded first: its provider and model are used unless flags
    // name others.
    let loaded = match (&s.resume, &store) {
        (Resume::New, _) => None,
        (_, Err(e)) => return Err(StartError::new("session", ExitCode::Internal, e.clone())),
        (resume, Ok(store)) => load_session(store, resume, &root)
            .map_err(|e| StartError::new("session", ExitCode::Usage, e))?,
    };
    let recorded = loaded
        .as_ref()
        .map(|l| (l.meta.provider.as_str(), l.meta.model.as_str()));
    config.resolve(recorded)?;
    let local = match config.local_model() {
        Some(model) => {
            let server = match s.shared_local {
                Some(shared) => shared.get(&model.path, model.context, s.note).await,
                None => local_server::start(&model.path, model.context, s.note)
                    .await
                    .map(Arc::new),
            }
            .map_err(|e| StartError::config(e.to_string()))?;
            (s.note)(&format!(
                "serving {} with {} at {}",
                model.path.display(),
                server.how,
                server.base_url
            ));
            config.serve_locally(&server.base_url);
            Some(server)
        }
        None => None,
    };
    let mut query = config.server_to_ask();
    if let Some(q) = query.as_ref().filter(|q| q.model.is_empty()) {
        let models = server_info::served_models(&q.base_url, q.api_key.as_deref()).await;
        config.server_serves(models);
        query = config.server_to_ask();
    }
    let facts = match query {
        Some(q) => server_info::discover(&q.base_url, &q.model, q.api_key.as_deref()).await,
        None => None,
    };
    config.server_said(facts);
    // Before anything reads or writes the workspace: what a killed saki left is repaired.
    let recovered = recover_killed_writes();
    let mut spec = config.spec()?;
    spec.mcp_servers.extend(s.extra_mcp);
    let suggestions = spec.suggestions;
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::new(spec.client.clone()).map_err(|e| {
        let code = ExitCode::for_client_error(&e);
        let kind = if code == ExitCode::Config {
            "config"
        } else {
            "internal"
        };
        StartError::new(kind, code, e.to_string())
    })?;
    let (workspace, shell_runtime, sandbox) = shell::attach(&s.workspace, &spec.shell)
        .map_err(|e| StartError::new("internal", ExitCode::Internal, e))?;
    let workspace = shell::attach_language_servers(
        workspace,
        &shell_runtime,
        spec.lsp.as_ref(),
        spec.workspace_trusted,
    );
    let tools = saki_tools::tool_server(workspace.clone(), spec.lean_tools)
        .map_err(|e| StartError::new("internal", ExitCode::Internal, e.to_string()))?;
    // MCP servers start now, in the background; their tools join as each connects.
    let shared = saki_llm_worker::SharedTools::new(tools);
    let mcp = mcp::start_servers(
        std::mem::take(&mut spec.mcp_servers),
        workspace.root(),
        workspace.output_cap(),
        shared.clone(),
    );
    let config_dir = spec.config_dir.as_deref();
    let (commands, mut problems) =
        saki_pod::commands::load(config_dir, &root, spec.workspace_trusted);
    let (skills, skill_problems) = saki_pod::skills::discover(workspace.root(), config_dir);
    // The skills join the system prompt where the `skill` tool is offered: a lean tool
    // set has none, and its small model would only read the list.
    let skills_section = if spec.lean_tools {
        String::new()
    } else {
        saki_pod::skills::prompt_section(&skills)
    };
    let base_prompt = spec.prompt_builder;
    let prompt_builder: PromptBuilder = Arc::new(move || base_prompt() + &skills_section);
    // A resumed session keeps its own system prompt; only a new one needs git.
    let system_prompt = match loaded {
        None => {
            let build = prompt_builder.clone();
            tokio::task::spawn_blocking(move || build())
                .await
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, "building the system prompt failed");
                    String::new()
                })
        }
        Some(_) => String::new(),
    };
    let (agents, agent_problems) = saki_pod::agents::load(config_dir, workspace.root());
    problems.extend(skill_problems.into_iter().chain(agent_problems));
    for message in problems {
        let _ = events_tx.send(EngineEvent::Alert {
            level: Level::Warn,
            message,
        });
    }
    let delegation = Delegation {
        skills,
        agents,
        global_dir: spec.config_dir.clone(),
        max_depth: spec.subagent_depth,
        // Small local models pick worse from a longer list (see `lean_tools`).
        offer_tools: !spec.lean_tools,
    };
    let mut engine = Engine::new(Parts {
        client,
        tools: shared.snapshot(),
        workspace,
        settings: spec.settings,
        hooks: spec.hooks,
        mode: spec.mode,
        approver: s.approver,
        store: store.ok(),
        sandbox: sandbox.clone(),
        system_prompt,
        prompt_builder,
        suggestions,
        resolver: spec.resolver,
        shared_tools: Some(shared),
        mcp: Some(mcp.lookup()),
        mcp_report: Some(mcp.reporter()),
        commands,
        events: events_tx.clone(),
    });
    engine.set_undo_limits(spec.undo_limits);
    engine.set_delegation(delegation);
    let warn = |message: String| Alert {
        level: AlertLevel::Warn,
        message,
    };
    let mut alerts: Vec<Alert> = spec.warnings.into_iter().map(warn).collect();
    alerts.extend(shell::sandbox_alert(&sandbox).map(warn));
    alerts.extend(recovered.into_iter().map(warn));
    let resumed = loaded.is_some();
    match loaded {
        Some(loaded) => engine.continue_loaded(loaded).await.map_err(|e| {
            StartError::new("session", ExitCode::Usage, format!("cannot resume: {e}"))
        })?,
        None => {
            if let Some(id) = s.session_id {
                engine.preset_session_id(id);
            }
        }
    }
    Ok(Started {
        engine,
        events,
        events_tx,
        sandbox,
        shell: shell_runtime,
        mcp,
        local,
        resumed,
        suggestions,
        alerts,
    })
}

/// The first steps of every start, for a command that needs a session's log but no model
/// (`saki undo`): what a killed saki left is repaired (returned: what the person should
/// be told), the store is found, and the session `resume` names is loaded.
pub fn open_log(
    resume: &Resume,
    workspace: &Path,
) -> Result<(SessionStore, LoadedSession, Vec<String>), StartError> {
    let recovered = recover_killed_writes();
    let store = session_store().map_err(StartError::config)?;
    match load_session(&store, resume, workspace) {
        Ok(Some(loaded)) => Ok((store, loaded, recovered)),
        Ok(None) => Err(StartError::new(
            "usage",
            ExitCode::Usage,
            "no session named",
        )),
        Err(e) => Err(StartError::new("session", ExitCode::Usage, e)),
    }
}

/// Where sessions are kept (`$XDG_DATA_HOME/saki/sessions`, else under `$HOME`).
pub fn session_store() -> Result<SessionStore, String> {
    let env = |k: &str| std::env::var(k).ok();
    SessionStore::default_dir(&env)
        .map(SessionStore::new)
        .ok_or_else(|| "cannot find a place for sessions: set XDG_DATA_HOME or HOME".to_owned())
}

/// Before anything is written: tells the tools where saki keeps its repair records (the
/// data directory), and repairs what an earlier saki killed mid-write left — a file
/// transaction it was applying (an accept, an undo) is rolled back (the person is told
/// which files), its temporary files are removed (first: a transaction stages every file
/// before renaming any, and its temporary files would keep the directories it created
/// from being removed). Returns what the person should be told.
pub fn recover_killed_writes() -> Vec<String> {
    let env = |k: &str| std::env::var(k).ok();
    let Some(data) = saki_tools::state::default_data_dir(&env) else {
        return Vec::new();
    };
    saki_tools::state::set_data_dir(data.clone());
    saki_tools::atomic::clean_stale(&data.join(saki_tools::atomic::INFLIGHT_DIR));
    let rolled_back = saki_read_ahead::recover_applies(&data.join(saki_read_ahead::JOURNAL_DIR));
    rolled_back
        .iter()
        .filter(|r| r.changed_anything())
        .map(ToString::to_string)
        .collect()
}

/// The session `resume` names, loaded (`None` for a new one); `Err` says why it cannot be.
pub fn load_session(
    store: &SessionStore,
    resume: &Resume,
    workspace: &std::path::Path,
) -> Result<Option<LoadedSession>, String> {
    match resume {
        Resume::New => Ok(None),
        Resume::Id(id) => store.load(id).map(Some).map_err(|e| e.to_string()),
        Resume::Last => store
            .latest_for(&workspace.display().to_string())
            .map(Some)
            .map_err(|e| e.to_string()),
    }
}
