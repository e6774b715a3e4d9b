//! Connecting to one server: start it (stdio) or reach it (streamable HTTP), run the
//! MCP handshake and list its tools (bounded: [`crate::listing`]).
//!
//! A stdio server runs in a process group of its own, so the terminal's Ctrl+C (meant
//! to cancel a turn) does not kill it, with only the core variables of saki's
//! environment (`PATH`, `HOME`, the user, the locale, the temp dirs; API keys stay out:
//! [`saki_sandbox::shell_env::inherited_by_programs`], and so does a value that holds a
//! credential: [`saki_sandbox::shell_env::secret_value`]) plus its `env`. Its stderr is kept
//! (the last lines) to say why it failed; it never reaches the terminal the UI draws on.

use crate::config::{ServerConfig, Transport};
use crate::http::HttpClient;
use crate::stderr::Stderr;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::BufReader;
use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("the environment variable {0} (bearer_token_env_var) is not set")]
    MissingToken(String),
    #[error("invalid header `{0}`")]
    Header(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("listing its tools failed: {0}")]
    ListTools(String),
}

/// The running process of a stdio server.
pub struct Process {
    child: Mutex<Child>,
    stderr: Arc<Stderr>,
}

impl Process {
    /// How the process ended, if it has, and the last lines it wrote to stderr.
    pub fn exit_report(&self) -> Option<String> {
        let status = self
            .child
            .lock()
            .ok()
            .and_then(|mut c| c.try_wait().ok().flatten());
        let tail = self.stderr_tail();
        match (status, tail.is_empty()) {
            (None, true) => None,
            (None, false) => Some(format!("its stderr ends: {tail}")),
            (Some(status), true) => Some(format!("it {}", exit_text(status))),
            (Some(status), false) => {
                Some(format!("it {}; its stderr ends: {tail}", exit_text(status)))
            }
        }
    }

    /// Waits a moment (at most a second) for a process that is ending to end and its
    /// stderr to be read to the end, so its report is complete.
    pub async fn settle(&self) {
        for _ in 0..50 {
            let exited = self
                .child
                .lock()
                .map_or(true, |mut c| !matches!(c.try_wait(), Ok(None)));
            if exited && self.stderr.closed() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn stderr_tail(&self) -> String {
        self.stderr.tail()
    }

    /// Stops the server and whatever it started (its whole process group).
    pub fn kill(&self) {
        if let Ok(mut child) = self.child.lock() {
            // Only while the leader runs: once it is reaped its id may be another's.
            let running = matches!(child.try_wait(), Ok(None));
            if let Some(id) = child.id().and_then(|id| i32::try_from(id).ok()) {
                if running {
                    // The group first: `npx` and shells leave their children behind.
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(id),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            let _ = child.start_kill();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "exited".to_owned(),
    }
}

/// A connected server.
pub struct Connection {
    pub service: RunningService<RoleClient, ClientConfig>,
    /// The tools `config` offers, bounded ([`crate::listing`]).
    pub tools: Vec<rmcp::model::Tool>,
    /// What was left out of them, for the person.
    pub notes: Vec<String>,
    pub process: Option<Arc<Process>>,
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("saki", env!("CARGO_PKG_VERSION")),
    )
}

/// Connects to `config` (named `name`, for messages); `workspace` is where a stdio
/// server runs unless `cwd` says otherwise. No timeout here: the caller bounds it, and
/// dropping the future stops whatever was started.
pub async fn connect(
    name: &str,
    config: &ServerConfig,
    workspace: &Path,
) -> Result<Connection, ConnectError> {
    let (service, process) = match config.transport()? {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let (child, stdout, stdin, stderr) =
                spawn(name, &command, &args, &env, cwd.as_deref(), workspace)?;
            let process = Arc::new(Process {
                child: Mutex::new(child),
                stderr,
            });
            let service = match client_info().serve((stdout, stdin)).await {
                Ok(service) => service,
                Err(e) => {
                    // A server that failed at start usually exits: say how.
                    process.settle().await;
                    return Err(ConnectError::Handshake(with_report(
                        e.to_string(),
                        Some(&process),
                    )));
                }
            };
            (service, Some(process))
        }
        Transport::Http {
            url,
            bearer_token_env_var,
            headers,
        } => {
            let mut transport = StreamableHttpClientTransportConfig::with_uri(url);
            if let Some(var) = bearer_token_env_var {
                let token = std::env::var(&var)
                    .ok()
                    .filter(|t| !t.is_empty())
                    .ok_or(ConnectError::MissingToken(var))?;
                transport = transport.auth_header(token);
            }
            let mut custom = HashMap::new();
            for (key, value) in headers {
                let name = http::HeaderName::from_bytes(key.as_bytes())
                    .map_err(|_| ConnectError::Header(key.clone()))?;
                let value = http::HeaderValue::from_str(&value)
                    .map_err(|_| ConnectError::Header(key.clone()))?;
                custom.insert(name, value);
            }
            let client = reqwest::Client::builder()
                .build()
                .map_err(|e| ConnectError::Client(e.to_string()))?;
            let transport = StreamableHttpClientTransport::with_client(
                HttpClient(client),
                transport.custom_headers(custom),
            );
            let service = client_info()
                .serve(transport)
                .await
                .map_err(|e| ConnectError::Handshake(e.to_string()))?;
            (service, None)
        }
    };
    let listed = crate::listing::list_tools(service.peer(), config)
        .await
        .map_err(|e| ConnectError::ListTools(with_report(e.to_string(), process.as_deref())))?;
    Ok(Connection {
        service,
        tools: listed.tools,
        notes: listed.notes,
        process,
    })
}

/// `error`, followed by how the process ended when it did.
pub fn with_report(error: String, process: Option<&Process>) -> String {
    match process.and_then(Process::exit_report) {
        Some(report) => format!("{error} ({report})"),
        None => error,
    }
}

type Spawned = (
    Child,
    tokio::process::ChildStdout,
    tokio::process::ChildStdin,
    Arc<Stderr>,
);

fn spawn(
    name: &str,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&Path>,
    workspace: &Path,
) -> Result<Spawned, ConnectError> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(std::env::vars_os().filter(|(name, value)| {
            name.to_str()
                .is_some_and(saki_sandbox::shell_env::inherited_by_programs)
                && !value
                    .to_str()
                    .is_some_and(saki_sandbox::shell_env::secret_value)
        }))
        .envs(env)
        .current_dir(cwd.map_or_else(|| workspace.to_path_buf(), |c| workspace.join(c)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let spawn_error = |source| ConnectError::Spawn {
        command: command.to_owned(),
        source,
    };
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let missing = || spawn_error(std::io::Error::other("no pipe to the process"));
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let tail = Arc::new(Stderr::default());
    if let Some(stderr) = child.stderr.take() {
        let (tail, server) = (tail.clone(), name.to_owned());
        tokio::spawn(async move { tail.read_from(BufReader::new(stderr), &server).await });
    }
    Ok((child, stdout, stdin, tail))
}
