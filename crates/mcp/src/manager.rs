//! [`McpManager`]: every configured server, started in parallel without blocking the
//! caller. Each server's tools join the session's [`SharedTools`] together as soon as
//! it connects; a server that fails, or is not ready within `startup_timeout_sec`,
//! reports one [`McpEvent::Failed`] and its tools are simply absent.

use crate::config::{ServerConfig, Transport};
use crate::connect::{connect, Connection, Process};
use crate::names::{sanitize, NameMap};
use crate::tool::{McpTool, ServerLink, ToolInfo};
use rmcp::model::ClientConfig;
use rmcp::service::{RoleClient, RunningService};
use saki_llm_worker::{SharedTools, Tool};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::{mpsc, watch};

/// Wraps each MCP tool before it is offered (the CLI caps its output there).
pub type Decorate = Arc<dyn Fn(Arc<dyn Tool>) -> Arc<dyn Tool> + Send + Sync>;

pub struct StartOptions {
    /// Where stdio servers run (their `cwd` is relative to it).
    pub workspace: PathBuf,
    /// The session's tool set: connected servers' tools are added here.
    pub tools: SharedTools,
    pub decorate: Option<Decorate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    Disabled,
    Starting,
    Connected,
    Failed { reason: String },
}

/// One offered tool, as `saki mcp list` and `saki debug prompt-size` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSummary {
    /// The name the model sees.
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    pub description: String,
    pub read_only_hint: bool,
    pub input_schema: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command line or the URL.
    pub target: String,
    #[serde(flatten)]
    pub state: ServerState,
    pub approval: crate::config::ApprovalSetting,
    pub tools: Vec<ToolSummary>,
}

/// What happened to a server, once per server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpEvent {
    Connected {
        server: String,
        tools: usize,
    },
    Failed {
        server: String,
        reason: String,
    },
    /// Some of a server's tools are left out (too many, or too large: [`crate::listing`]);
    /// sent before it is `Connected`.
    ToolsLeftOut {
        server: String,
        message: String,
    },
}

struct Entry {
    config: ServerConfig,
    state: ServerState,
    tools: Vec<ToolSummary>,
    service: Option<RunningService<RoleClient, ClientConfig>>,
    process: Option<Arc<Process>>,
}

struct Inner {
    servers: Mutex<BTreeMap<String, Entry>>,
    infos: RwLock<HashMap<String, ToolInfo>>,
    /// Servers still starting.
    starting: watch::Sender<usize>,
    events: mpsc::UnboundedSender<McpEvent>,
    tools: SharedTools,
    decorate: Option<Decorate>,
}

/// The session's MCP servers; clones share them.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl McpManager {
    /// Starts every enabled server in `servers` (inside a tokio runtime) and returns at
    /// once; events arrive on the receiver as servers connect or fail.
    pub fn start(
        servers: BTreeMap<String, ServerConfig>,
        options: StartOptions,
    ) -> (Self, mpsc::UnboundedReceiver<McpEvent>) {
        let (events, receiver) = mpsc::unbounded_channel();
        let mut entries = BTreeMap::new();
        let mut to_start = Vec::new();
        let mut failures = Vec::new();
        let mut prefixes: HashMap<String, String> = HashMap::new();
        for (name, config) in servers {
            let state = if !config.is_enabled() {
                ServerState::Disabled
            } else if let Some(first) = prefixes.get(&sanitize(&name)) {
                ServerState::Failed {
                    reason: format!(
                        "its name reads the same as `{first}` in tool names ({}); rename one",
                        sanitize(&name)
                    ),
                }
            } else if let Err(e) = config.transport() {
                ServerState::Failed {
                    reason: format!("invalid config: {e}"),
                }
            } else {
                to_start.push((name.clone(), config.clone()));
                ServerState::Starting
            };
            if let ServerState::Failed { reason } = &state {
                failures.push(McpEvent::Failed {
                    server: name.clone(),
                    reason: reason.clone(),
                });
            }
            if config.is_enabled() {
                prefixes.entry(sanitize(&name)).or_insert(name.clone());
            }
            entries.insert(
                name,
                Entry {
                    config,
                    state,
                    tools: Vec::new(),
                    service: None,
                    process: None,
                },
            );
        }
        let (starting, _) = watch::channel(to_start.len());
        let inner = Arc::new(Inner {
            servers: Mutex::new(entries),
            infos: RwLock::new(HashMap::new()),
            starting,
            events,
            tools: options.tools,
            decorate: options.decorate,
        });
        for event in failures {
            let _ = inner.events.send(event);
        }
        for (name, config) in to_start {
            let (inner, workspace) = (inner.clone(), options.workspace.clone());
            tokio::spawn(async move {
                let outcome = match config.startup_timeout() {
                    Ok(limit) => {
                        match tokio::time::timeout(limit, connect(&name, &config, &workspace)).await
                        {
                            Ok(Ok(connection)) => inner.connected(&name, &config, connection),
                            Ok(Err(e)) => Err(e.to_string()),
                            Err(_) => Err(format!(
                                "it did not start within {} s (startup_timeout_sec)",
                                limit.as_secs_f64()
                            )),
                        }
                    }
                    Err(e) => Err(format!("invalid config: {e}")),
                };
                inner.settle(&name, outcome);
            });
        }
        (Self { inner }, receiver)
    }

    /// Resolves once no server is starting any more (each connected or failed).
    pub async fn ready(&self) {
        let mut starting = self.inner.starting.subscribe();
        let _ = starting.wait_for(|n| *n == 0).await;
    }

    /// Approval facts about an offered tool, by the name the model uses.
    pub fn tool_info(&self, name: &str) -> Option<ToolInfo> {
        self.inner.infos.read().ok()?.get(name).cloned()
    }

    /// Every configured server, by name.
    pub fn status(&self) -> Vec<ServerStatus> {
        let Ok(servers) = self.inner.servers.lock() else {
            return Vec::new();
        };
        servers
            .iter()
            .map(|(name, entry)| ServerStatus {
                name: name.clone(),
                transport: match entry.config.transport() {
                    Ok(Transport::Http { .. }) => "http",
                    _ if entry.config.url.is_some() => "http",
                    _ => "stdio",
                },
                target: entry.config.describe(),
                state: entry.state.clone(),
                approval: entry.config.approval(),
                tools: entry.tools.clone(),
            })
            .collect()
    }

    /// Stops every server: connections closed, processes killed. Their tools stay in the
    /// tool set (the prompt prefix does not move) and fail if called.
    pub async fn shutdown(&self) {
        let stopping: Vec<_> = match self.inner.servers.lock() {
            Ok(mut servers) => servers
                .values_mut()
                .map(|e| (e.service.take(), e.process.take()))
                .collect(),
            Err(_) => return,
        };
        for (service, process) in stopping {
            if let Some(mut service) = service {
                let limit = std::time::Duration::from_secs(1);
                let _ = service.close_with_timeout(limit).await;
            }
            if let Some(process) = process {
                process.kill();
            }
        }
    }
}

impl Inner {
    /// Offers a connected server's tools; returns how many.
    fn connected(
        &self,
        name: &str,
        config: &ServerConfig,
        connection: Connection,
    ) -> Result<usize, String> {
        let Connection {
            service,
            mut tools,
            notes,
            process,
        } = connection;
        for message in notes {
            let _ = self.events.send(McpEvent::ToolsLeftOut {
                server: name.to_owned(),
                message,
            });
        }
        let link = Arc::new(ServerLink {
            name: name.to_owned(),
            peer: service.peer().clone(),
            tool_timeout: config.tool_timeout().map_err(|e| e.to_string())?,
            process: process.clone(),
        });
        // Sorted, so that names needing disambiguation get the same one every run.
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut names = NameMap::new();
        let mut offered: Vec<Arc<dyn Tool>> = Vec::new();
        let mut summaries = Vec::new();
        let mut infos = Vec::new();
        for tool in tools.iter().filter(|t| config.offers(&t.name)) {
            let exposed = names.insert(name, &tool.name);
            let read_only_hint = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            let info = ToolInfo {
                server: name.to_owned(),
                tool: tool.name.to_string(),
                read_only_hint,
                approval: config.approval(),
                trusted: config.trusted,
            };
            let mcp_tool = McpTool::new(exposed.clone(), tool, info.clone(), link.clone());
            summaries.push(ToolSummary {
                name: exposed.clone(),
                tool: info.tool.clone(),
                description: mcp_tool.description().to_owned(),
                read_only_hint,
                input_schema: mcp_tool.input_schema(),
            });
            let tool: Arc<dyn Tool> = Arc::new(mcp_tool);
            offered.push(match &self.decorate {
                Some(decorate) => decorate(tool),
                None => tool,
            });
            infos.push((exposed, info));
        }
        let count = offered.len();
        self.tools
            .register_all(offered)
            .map_err(|e| format!("its tools cannot be offered: {e}"))?;
        if let Ok(mut map) = self.infos.write() {
            map.extend(infos);
        }
        if let Ok(mut servers) = self.servers.lock() {
            if let Some(entry) = servers.get_mut(name) {
                entry.tools = summaries;
                entry.service = Some(service);
                entry.process = process;
            }
        }
        Ok(count)
    }

    fn settle(&self, name: &str, outcome: Result<usize, String>) {
        let (state, event) = match outcome {
            Ok(tools) => (
                ServerState::Connected,
                McpEvent::Connected {
                    server: name.to_owned(),
                    tools,
                },
            ),
            Err(reason) => {
                tracing::debug!(server = name, reason, "MCP server failed");
                (
                    ServerState::Failed {
                        reason: reason.clone(),
                    },
                    McpEvent::Failed {
                        server: name.to_owned(),
                        reason,
                    },
                )
            }
        };
        if let Ok(mut servers) = self.servers.lock() {
            if let Some(entry) = servers.get_mut(name) {
                entry.state = state;
            }
        }
        let _ = self.events.send(event);
        self.starting.send_modify(|n| *n = n.saturating_sub(1));
    }
}
