//! Every front end's session (`exec`, the UI, `acp`, `saki compact`) starts through the
//! engine's one session builder ([`saki_engine::start`]); this is the command line's side
//! of it: config files and flags as a [`SessionConfig`] (with the trust question where a
//! person can answer it), and telemetry on the session's events. A failure is the
//! builder's [`StartError`], carrying the exit code and the `--json` kind.

use crate::args::{ProviderArgs, RunArgs};
use crate::config::{ConfigError, Resolved};
use crate::session::Resume;
use crate::setup;
pub use saki_engine::StartError;
use saki_engine::{
    Alert, Engine, EngineEvent, LocalModel, ServerQuery, SessionConfig, SessionSpec,
};
use saki_llm_client::server_info::ServerInfo;
use saki_mcp::ServerConfig;
use saki_sandbox::SandboxStatus;
use saki_tools::{Approver, Workspace};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

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
    /// A local model server shared by this process's sessions (`saki acp`'s).
    pub shared_local: Option<&'a saki_engine::local_server::SharedServer>,
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
    pub mcp: saki_engine::mcp::McpSession,
    /// The local model server, kept alive as long as this is.
    pub local: Option<Arc<saki_engine::local_server::LocalServer>>,
    pub suggestions: bool,
    pub resumed: bool,
    /// Spans for the session's events, when config asks; `telemetry::finish` ends it.
    pub telemetry: Option<crate::telemetry::Tap>,
    /// What the person should know before the first prompt: the sandbox and setup, what
    /// a killed saki left and was repaired, problems of a resumed log.
    pub alerts: Vec<Alert>,
}

/// The command line's config for one session: flags, config files, the trust question.
struct CliConfig<'a> {
    root: PathBuf,
    /// The flags; `model` is filled in when config names none and the server serves one.
    provider: ProviderArgs,
    /// The provider and model of the session to continue, as `resolve` was told.
    recorded: Option<(String, String)>,
    /// What the server listed when config named no model (`None`: not asked, or no
    /// answer).
    served: Option<Vec<String>>,
    run: &'a RunArgs,
    ask_trust: Option<&'a AskTrust>,
    suggestions: &'a (dyn Fn(&Resolved) -> bool + Sync),
    resolved: Option<(Resolved, saki_llm_worker::hook::Hooks)>,
}

/// `SessionConfig::resolve` runs before the engine asks for anything else; a call
/// before it is a defect, reported rather than panicking.
fn not_read() -> StartError {
    StartError::config("config was not read")
}

impl CliConfig<'_> {
    fn resolved(&self) -> Result<&Resolved, StartError> {
        self.resolved.as_ref().map(|(r, _)| r).ok_or_else(not_read)
    }

    /// Config names no model, and the server did not name exactly one.
    fn no_model(&self, resolved: &Resolved) -> StartError {
        let missing = ConfigError::MissingModel {
            provider: resolved.provider.clone(),
        };
        let server = match self.served.as_deref() {
            None => "did not say which model it serves".to_owned(),
            Some([]) => "lists no model".to_owned(),
            Some(models) => format!("serves {} models: {}", models.len(), models.join(", ")),
        };
        StartError::config(format!(
            "{missing} (the server at {} {server})",
            resolved.base_url
        ))
    }
}

impl SessionConfig for CliConfig<'_> {
    fn resolve(&mut self, recorded: Option<(&str, &str)>) -> Result<(), StartError> {
        self.recorded = recorded.map(|(p, m)| (p.to_owned(), m.to_owned()));
        let mut resolved = setup::resolve(&self.root, &self.provider, recorded);
        if let (Ok((r, _)), Some(ask)) = (&resolved, self.ask_trust) {
            if !r.ignored.is_empty() && !r.trust_refused && ask(&self.root, &r.ignored) {
                resolved = setup::resolve(&self.root, &self.provider, recorded);
            }
        }
        let resolved = resolved.map_err(|e| StartError {
            missing_key: matches!(e, ConfigError::MissingKey { .. }),
            ..StartError::config(e.to_string())
        })?;
        self.resolved = Some(resolved);
        Ok(())
    }

    fn local_model(&self) -> Option<LocalModel> {
        let resolved = self.resolved().ok()?;
        resolved.local_model.clone().map(|path| LocalModel {
            path,
            context: resolved
                .local_context
                .unwrap_or(saki_engine::local_server::DEFAULT_CONTEXT),
        })
    }

    fn serve_locally(&mut self, base_url: &str) {
        if let Some((resolved, _)) = &mut self.resolved {
            resolved.base_url = base_url.to_owned();
            resolved.wire_api = saki_llm_client::WireApi::Chat;
        }
    }

    fn server_to_ask(&self) -> Option<ServerQuery> {
        setup::server_to_ask(self.resolved().ok()?)
    }

    fn server_serves(&mut self, models: Option<Vec<String>>) {
        self.served = models;
        if let Some([model]) = self.served.as_deref() {
            self.provider.model = Some(model.clone());
            let recorded = self.recorded.clone();
            let recorded = recorded.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
            match setup::resolve(&self.root, &self.provider, recorded) {
                Ok(resolved) => self.resolved = Some(resolved),
                Err(e) => tracing::warn!(error = %e, "config read again with the server's model"),
            }
        }
    }

    fn server_said(&mut self, facts: Option<ServerInfo>) {
        if let Some((resolved, _)) = &mut self.resolved {
            resolved.server = facts;
            setup::apply_server_facts(resolved);
        }
    }

    fn spec(&self) -> Result<SessionSpec, StartError> {
        let (resolved, hooks) = self.resolved.as_ref().ok_or_else(not_read)?;
        if resolved.model.is_empty() {
            return Err(self.no_model(resolved));
        }
        let env = |k: &str| std::env::var(k).ok();
        let root = self.root.clone();
        Ok(SessionSpec {
            client: setup::client_config(resolved),
            settings: setup::engine_settings(resolved, &self.provider, self.run.max_turns),
            hooks: hooks.clone(),
            mode: self.run.approval,
            shell: setup::shell_spec(resolved, self.run.sandbox),
            lean_tools: resolved.lean_tools,
            lsp: resolved.lsp.clone(),
            workspace_trusted: resolved.workspace_trusted,
            mcp_servers: resolved.mcp_servers.clone(),
            config_dir: crate::config::global_config_dir(&env),
            subagent_depth: resolved.subagent_depth,
            undo_limits: resolved.undo.limits(),
            resolver: Some(Arc::new(setup::ConfigResolver {
                workspace: self.run.dir(),
                args: self.provider.clone(),
                provider: resolved.provider.clone(),
                max_turns: self.run.max_turns,
                server: resolved.server,
            })),
            prompt_builder: Arc::new(move || crate::session::build_system_prompt(&root)),
            suggestions: (self.suggestions)(resolved),
            warnings: setup::config_warnings(resolved),
        })
    }
}

pub async fn open(o: Open<'_>) -> Result<Opened, StartError> {
    let mut config = CliConfig {
        root: o.workspace.root().to_path_buf(),
        provider: o.provider.clone(),
        recorded: None,
        served: None,
        run: o.run,
        ask_trust: o.ask_trust,
        suggestions: o.suggestions,
        resolved: None,
    };
    let started = saki_engine::start(
        &mut config,
        saki_engine::Start {
            workspace: o.workspace,
            resume: o.resume,
            approver: o.approver,
            note: o.note,
            extra_mcp: o.extra_mcp,
            session_id: o.session_id,
            shared_local: o.shared_local,
        },
    )
    .await?;
    let (resolved, hooks) = config.resolved.ok_or_else(not_read)?;
    crate::interactive_extras::set_shell_runtime(&started.shell);
    // Telemetry sees every event on its way to the front end.
    let telemetry = crate::telemetry::start_or_warn(&resolved.otel, &started.events_tx);
    let (events, telemetry) = crate::telemetry::tap(started.events, telemetry);
    Ok(Opened {
        engine: started.engine,
        events,
        events_tx: started.events_tx,
        resolved,
        hooks,
        sandbox: started.sandbox,
        mcp: started.mcp,
        local: started.local,
        suggestions: started.suggestions,
        resumed: started.resumed,
        telemetry,
        alerts: started.alerts,
    })
}
