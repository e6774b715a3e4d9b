//! A session's MCP servers, wired in one place for every front end.
//!
//! [`start`] starts the servers `[mcp_servers]` configures (global config, or a trusted
//! workspace's) and returns at once. Their tools join the Worker's tool set as each
//! server connects, capped like built-in tools; a server that fails or is slow gives one
//! alert; the approval policy learns about their tools through [`McpSession::lookup`].
//!
//! ```ignore
//! let mcp = mcp_setup::start(&resolved, &workspace, worker.shared_tools());
//! let policy = ApprovalPolicy::shared(mode, grants, approver, workspace.clone())
//!     .with_mcp(mcp.lookup());
//! // `exec`: mcp.ready().await before the first request, so the model sees every tool.
//! // UI: show each alert from `mcp.alerts` as it comes; `/mcp` lists `mcp.status()`.
//! // At exit: mcp.shutdown().await.
//! ```

use crate::config::{ConfigError, Resolved};
use saki_llm_worker::SharedTools;
use saki_mcp::{McpEvent, McpManager, ServerConfig, ServerStatus, StartOptions};
use saki_pod::{Alert, AlertLevel};
use saki_tools::{McpLookup, McpToolFacts, Workspace};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The session's MCP servers.
pub struct McpSession {
    manager: McpManager,
    /// One alert per server that failed or did not start in time, as it happens.
    pub alerts: mpsc::UnboundedReceiver<Alert>,
}

/// Starts the servers `resolved` configures, adding their tools to `tools` (the Worker's
/// [`saki_llm_worker::Worker::shared_tools`]) as they connect. Must run inside a tokio
/// runtime; never waits for a server.
pub fn start(resolved: &Resolved, workspace: &Workspace, tools: SharedTools) -> McpSession {
    start_servers(
        resolved.mcp_servers.clone(),
        workspace.root(),
        workspace.output_cap(),
        tools,
    )
}

/// [`start`] for a set of servers.
pub fn start_servers(
    servers: BTreeMap<String, ServerConfig>,
    root: &Path,
    output_cap: usize,
    tools: SharedTools,
) -> McpSession {
    let (manager, mut events) = McpManager::start(
        servers,
        StartOptions {
            workspace: root.to_path_buf(),
            tools,
            // Capped like every built-in tool, with the same notice.
            decorate: Some(Arc::new(move |tool| {
                saki_tools::capped::wrap_async(tool, output_cap)
            })),
        },
    );
    let (alerts, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let Some(alert) = alert_for(&event) {
                if alerts.send(alert).is_err() {
                    break;
                }
            }
        }
    });
    McpSession {
        manager,
        alerts: receiver,
    }
}

fn alert_for(event: &McpEvent) -> Option<Alert> {
    match event {
        McpEvent::Connected { server, tools } => {
            tracing::debug!(server, tools, "MCP server connected");
            None
        }
        McpEvent::ToolsLeftOut { server, message } => Some(Alert {
            level: AlertLevel::Warn,
            message: format!("MCP server `{server}`: {message}"),
        }),
        McpEvent::Failed { server, reason } => Some(Alert {
            level: AlertLevel::Warn,
            message: format!(
                "MCP server `{server}` is not available ({reason}); its tools are left out \
                 (`saki mcp list` checks it)"
            ),
        }),
    }
}

impl McpSession {
    /// What the approval policy needs ([`saki_tools::ApprovalPolicy::with_mcp`]).
    pub fn lookup(&self) -> Arc<dyn McpLookup> {
        let manager = self.manager.clone();
        Arc::new(move |name: &str| {
            manager.tool_info(name).map(|info| McpToolFacts {
                server: info.server,
                read_only_hint: info.read_only_hint,
                auto_approve: info.approval == saki_mcp::ApprovalSetting::Auto,
                trusted: info.trusted,
            })
        })
    }

    /// `/mcp`: every server, its state and its tools, as `saki mcp list` shows them.
    pub fn reporter(&self) -> saki_engine::McpReport {
        let manager = self.manager.clone();
        Arc::new(move || {
            let servers = manager.status();
            if servers.is_empty() {
                return "no MCP servers are configured (`saki mcp add NAME -- CMD ARGS…`)".into();
            }
            servers
                .iter()
                .map(crate::mcp_cmd::describe)
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// Forwards each alert to `events` as it comes (the UI shows them while it runs). It
    /// holds no sender of its own: when the engine's go (it ended, or panicked), the UI
    /// still sees its channel close.
    pub fn forward_alerts(&mut self, events: &mpsc::UnboundedSender<saki_engine::EngineEvent>) {
        let (_, none) = mpsc::unbounded_channel();
        let mut alerts = std::mem::replace(&mut self.alerts, none);
        let events = events.downgrade();
        tokio::spawn(async move {
            while let Some(alert) = alerts.recv().await {
                let Some(events) = events.upgrade() else {
                    break;
                };
                let level = match alert.level {
                    AlertLevel::Info => saki_engine::Level::Info,
                    AlertLevel::Warn => saki_engine::Level::Warn,
                    AlertLevel::Error => saki_engine::Level::Error,
                };
                let event = saki_engine::EngineEvent::Alert {
                    level,
                    message: alert.message,
                };
                if events.send(event).is_err() {
                    break;
                }
            }
        });
    }

    /// Resolves once every server has connected or failed (each bounded by its
    /// `startup_timeout_sec`).
    pub async fn ready(&self) {
        self.manager.ready().await;
    }

    /// Every configured server with its state and tools (`/mcp`, `saki mcp list`).
    pub fn status(&self) -> Vec<ServerStatus> {
        self.manager.status()
    }

    /// Closes every connection and stops every server process.
    pub async fn shutdown(&self) {
        self.manager.shutdown().await;
    }
}

/// The `[mcp_servers]` of the config files for `workspace` without resolving a provider
/// (`saki mcp list` works before one is set up): the global file, and the workspace's
/// when the global one trusts it. Also what an untrusted workspace file tried to set.
pub fn configured(
    workspace: &Path,
) -> Result<(BTreeMap<String, ServerConfig>, Vec<String>), ConfigError> {
    let files = crate::setup::config_files(workspace)?.files;
    let ignored = files
        .ignored
        .into_iter()
        .filter(|key| key.contains("mcp_servers."))
        .collect();
    Ok((files.mcp_servers, ignored))
}
