//! A session's MCP servers, wired in one place for every front end.
//!
//! [`start_servers`] starts the servers a session configures and returns at once. Their
//! tools join the Worker's tool set as each server connects, capped like built-in tools;
//! a server that fails or is slow gives one alert; the approval policy learns about their
//! tools through [`McpSession::lookup`]. The session builder ([`super::start`]) starts them;
//! `exec` waits for [`McpSession::ready`] before the first request, so the model sees every
//! tool; the UI shows each alert as it comes; `/mcp` lists [`McpSession::status`].

use saki_llm_worker::SharedTools;
use saki_mcp::{McpEvent, McpManager, ServerConfig, ServerState, ServerStatus, StartOptions};
use saki_pod::{Alert, AlertLevel};
use saki_tools::{McpLookup, McpToolFacts};
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

/// Starts `servers` for the workspace at `root`, adding their tools to `tools` (the Worker's
/// [`saki_llm_worker::Worker::shared_tools`]) as they connect, each result capped at
/// `output_cap` bytes. Must run inside a tokio runtime; never waits for a server.
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
    pub fn reporter(&self) -> crate::McpReport {
        let manager = self.manager.clone();
        Arc::new(move || {
            let servers = manager.status();
            if servers.is_empty() {
                return "no MCP servers are configured (`saki mcp add NAME -- CMD ARGS…`)".into();
            }
            servers.iter().map(describe).collect::<Vec<_>>().join("\n")
        })
    }

    /// Forwards each alert to `events` as it comes (the UI shows them while it runs). It
    /// holds no sender of its own: when the engine's go (it ended, or panicked), the UI
    /// still sees its channel close.
    pub fn forward_alerts(&mut self, events: &mpsc::UnboundedSender<crate::EngineEvent>) {
        let (_, none) = mpsc::unbounded_channel();
        let mut alerts = std::mem::replace(&mut self.alerts, none);
        let events = events.downgrade();
        tokio::spawn(async move {
            while let Some(alert) = alerts.recv().await {
                let Some(events) = events.upgrade() else {
                    break;
                };
                let level = match alert.level {
                    AlertLevel::Info => crate::Level::Info,
                    AlertLevel::Warn => crate::Level::Warn,
                    AlertLevel::Error => crate::Level::Error,
                };
                let event = crate::EngineEvent::Alert {
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

/// A server as `saki mcp list` (and `/mcp`) shows it.
pub fn describe(server: &ServerStatus) -> String {
    let mut out = format!(
        "{} ({}: {})\n",
        server.name, server.transport, server.target
    );
    let approval = match server.approval {
        saki_mcp::ApprovalSetting::Ask => "ask",
        saki_mcp::ApprovalSetting::Auto => "auto",
    };
    match &server.state {
        ServerState::Connected => {
            let n = server.tools.len();
            let tools = if n == 1 { "tool" } else { "tools" };
            out.push_str(&format!("  connected, {n} {tools}, approval: {approval}\n"));
        }
        ServerState::Failed { reason } => out.push_str(&format!("  failed: {reason}\n")),
        ServerState::Starting => out.push_str("  starting\n"),
        ServerState::Disabled => out.push_str("  disabled (enabled = false)\n"),
    }
    let width = server.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for tool in &server.tools {
        let first = tool.description.lines().next().unwrap_or("");
        let mut summary: String = first.chars().take(72).collect();
        if summary.len() < first.len() {
            summary.push('…');
        }
        let read_only = if tool.read_only_hint {
            " [read-only]"
        } else {
            ""
        };
        out.push_str(&format!("  {:width$}  {summary}{read_only}\n", tool.name));
    }
    out
}
