//! `saki acp`: saki as an Agent Client Protocol agent on stdin and stdout, for editors.
//! The protocol is saki-acp's; this starts its sessions the way `exec` and the UI start
//! theirs (config, the provider, the sandbox, MCP servers), in the workspace each
//! session names.

use crate::args::{ProviderArgs, RunArgs};
use crate::exit::ExitCode;
use crate::session::Resume;
use crate::setup;
use async_trait::async_trait;
use saki_acp::{
    ListedSession, McpServerSpec, SessionCloser, SessionFactory, SessionRequest, StartError,
    StartedSession,
};
use saki_mcp::ServerConfig;
use saki_sandbox::SandboxMode;
use saki_tools::ApprovalMode;
use std::path::Path;
use std::sync::Arc;

/// Flags for `saki acp` (the client picks the workspace per session).
#[derive(Debug, Clone, clap::Args)]
pub struct AcpArgs {
    /// The approval mode sessions start in (the client can change it per session):
    /// plan, default, auto-edit or yolo.
    #[arg(long, value_name = "MODE", default_value = "default")]
    pub approval: ApprovalMode,
    /// How shell commands are confined: workspace-write (default), read-only or off.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// Most model requests in one turn.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
    /// Do not predict next prompts or speculate them.
    #[arg(long)]
    pub no_suggestions: bool,
    #[command(flatten)]
    pub provider: ProviderArgs,
}

pub fn run(args: AcpArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::Internal;
        }
    };
    runtime.block_on(async move {
        // Before any session reads or writes a workspace: what a killed saki left is
        // repaired (reported on stderr; stdout is the protocol's).
        for message in setup::recover() {
            tracing::warn!("{message}");
        }
        let factory = Arc::new(Factory {
            args,
            local: saki_engine::local_server::SharedServer::default(),
        });
        match saki_acp::serve_stdio(factory).await {
            Ok(()) => ExitCode::Success,
            Err(e) => {
                eprintln!("error: the ACP connection failed: {e}");
                ExitCode::Internal
            }
        }
    })
}

struct Factory {
    args: AcpArgs,
    /// `--local`'s model server (or config's `local_model`), started with the first
    /// session and shared by every session after it.
    local: saki_engine::local_server::SharedServer,
}

struct Closer {
    mcp: saki_engine::mcp::McpSession,
    telemetry: Option<crate::telemetry::Tap>,
    _local: Option<Arc<saki_engine::local_server::LocalServer>>,
}

#[async_trait]
impl SessionCloser for Closer {
    async fn close(self: Box<Self>) {
        crate::telemetry::finish(self.telemetry).await;
        self.mcp.shutdown().await;
    }
}

fn failed(message: impl Into<String>) -> StartError {
    StartError {
        message: message.into(),
        auth: false,
    }
}

#[async_trait]
impl SessionFactory for Factory {
    async fn start(&self, request: SessionRequest) -> Result<StartedSession, StartError> {
        let run = RunArgs {
            cd: Some(request.cwd.clone()),
            approval: self.args.approval,
            resume: None,
            sandbox: self.args.sandbox,
            add_dir: Vec::new(),
            last: false,
            max_turns: self.args.max_turns,
        };
        let mut workspace = (*run.workspace().map_err(failed)?).clone();
        if let Some(fs) = request.fs.clone() {
            workspace.set_fs(fs);
        }
        let (resume, session_id) = if request.resume {
            (Resume::Id(request.session_id.clone()), None)
        } else {
            (Resume::New, Some(request.session_id.clone()))
        };
        let no_suggestions = self.args.no_suggestions;
        let opened = crate::open::open(crate::open::Open {
            provider: &self.args.provider,
            run: &run,
            workspace,
            resume,
            approver: None,
            suggestions: &|resolved| crate::config::suggestions_on(resolved, no_suggestions),
            ask_trust: None,
            note: &|note| tracing::info!("{note}"),
            extra_mcp: client_servers(&request.mcp_servers)?,
            session_id,
            shared_local: Some(&self.local),
        })
        .await
        .map_err(|e| StartError {
            auth: e.missing_key,
            message: e.message,
        })?;
        let crate::open::Opened {
            engine,
            events,
            events_tx,
            resolved,
            mut mcp,
            local,
            telemetry,
            alerts,
            ..
        } = opened;
        for alert in alerts {
            let _ = events_tx.send(alert.into());
        }
        // The editor's first prompt should see every tool, as exec's does: the servers
        // get their startup time (each bounded by its `startup_timeout_sec`) before the
        // session is handed out.
        mcp.ready().await;
        mcp.forward_alerts(&events_tx);
        let mut models = vec![resolved.model.clone()];
        if resolved.fast_model != resolved.model {
            models.push(resolved.fast_model.clone());
        }
        Ok(StartedSession {
            engine,
            events,
            models,
            mode: self.args.approval,
            closer: Box::new(Closer {
                mcp,
                telemetry,
                _local: local,
            }),
        })
    }

    fn list(&self, cwd: Option<&Path>) -> Vec<ListedSession> {
        let Ok(store) = crate::session::store() else {
            return Vec::new();
        };
        let wanted = cwd.map(|c| c.canonicalize().unwrap_or_else(|_| c.to_path_buf()));
        store
            .list()
            .unwrap_or_default()
            .into_iter()
            .filter(|meta| {
                wanted
                    .as_ref()
                    .is_none_or(|w| Path::new(&meta.workspace) == w.as_path())
            })
            .map(|meta| ListedSession {
                cwd: meta.workspace.into(),
                title: meta.title,
                updated_at: Some(rfc3339(meta.created)),
                id: meta.id,
            })
            .collect()
    }
}

/// The client's MCP servers as config entries, each named `acp:NAME` so none replaces
/// a configured one. The client launched saki and hands it these servers: they are as
/// trusted as the client is.
fn client_servers(specs: &[McpServerSpec]) -> Result<Vec<(String, ServerConfig)>, StartError> {
    specs
        .iter()
        .map(|spec| {
            let (name, value) = match spec {
                McpServerSpec::Stdio {
                    name,
                    command,
                    args,
                    env,
                } => (
                    name,
                    serde_json::json!({
                        "command": command,
                        "args": args,
                        "env": env.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
                    }),
                ),
                McpServerSpec::Http { name, url, headers } => (
                    name,
                    serde_json::json!({
                        "url": url,
                        "headers": headers.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
                    }),
                ),
            };
            let mut config: ServerConfig = serde_json::from_value(value)
                .map_err(|e| failed(format!("the client's MCP server {name}: {e}")))?;
            config.trusted = true;
            Ok((format!("acp:{name}"), config))
        })
        .collect()
}

/// Seconds since the epoch as an RFC 3339 UTC timestamp.
fn rfc3339(secs: u64) -> String {
    let rem = secs % 86_400;
    let date = saki_pod::instructions::civil_date(secs);
    format!(
        "{date}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_764_115_200), "2025-11-26T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn client_servers_keep_their_transport_and_never_replace_configured_ones() {
        let servers = client_servers(&[
            McpServerSpec::Stdio {
                name: "fs".into(),
                command: "/bin/mcp".into(),
                args: vec!["-v".into()],
                env: vec![("K".into(), "V".into())],
            },
            McpServerSpec::Http {
                name: "web".into(),
                url: "http://127.0.0.1:9/mcp".into(),
                headers: vec![],
            },
        ])
        .unwrap();
        assert_eq!(servers[0].0, "acp:fs");
        assert_eq!(servers[0].1.command.as_deref(), Some("/bin/mcp"));
        assert_eq!(servers[1].1.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
    }
}
