//! shell: `bash -c` in the workspace root, in its own process group so that a timeout,
//! a cancel (the future is dropped) or the end of the command kills everything it
//! started. Output (stdout and stderr, interleaved) is capped keeping head and tail.
//!
//! With a [`ShellRuntime`] that knows the saki binary, the command runs through the
//! sandbox helper (`saki sandbox-exec`, see [`saki_sandbox`]), which restricts it and
//! kills every process it leaves behind, also ones that left the process group. Either
//! way it gets the scrubbed environment of [`saki_sandbox::shell_env`].

use crate::common::{parse_args, prefix_at_boundary, suffix_at_boundary};
pub use crate::shell_runtime::{Mark, ShellRuntime, ShellRuntimeError};
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_sandbox::shell_env::{self, ShellEnvConfig};
use saki_sandbox::HELPER_SUBCOMMAND;
use serde::Deserialize;
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
pub const MAX_TIMEOUT_SECS: u64 = 600;

pub struct Shell(pub Arc<Workspace>);

#[derive(Deserialize)]
struct ShellArgs {
    command: String,
    timeout_secs: Option<u64>,
    /// Run in the background: return at once with an id (`shell_output`, `shell_kill`).
    #[serde(default)]
    background: bool,
}

/// Keeps the first and the last bytes of a long output.
pub(crate) struct HeadTail {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: usize,
    /// Half of the output cap: what is kept of each end.
    half: usize,
}

impl HeadTail {
    fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
            half: cap / 2,
        }
    }

    fn render(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&self.tail);
        if self.head.len() + self.tail.len() <= 2 * self.half
            && self.total == self.head.len() + self.tail.len()
        {
            return format!("{head}{tail}");
        }
        let tail = suffix_at_boundary(&tail, self.half);
        let omitted = self.total - prefix_at_boundary(&head, self.half).len() - tail.len();
        format!(
            "{}\n[...{omitted} bytes of output omitted...]\n{tail}",
            prefix_at_boundary(&head, self.half)
        )
    }
}

impl OutputSink for HeadTail {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.half.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 4 * self.half {
            self.tail.drain(..self.tail.len() - self.half);
        }
    }
}

/// Ends what a command started when dropped (cancel, timeout, or normal end, which also
/// reaps background jobs that would keep the pipes open). Through the helper it asks the
/// helper to stop (SIGTERM), which kills every descendant, also those outside the process
/// group, and exits; without it, the whole process group gets SIGKILL.
pub(crate) struct GroupGuard {
    pub(crate) pgid: Option<i32>,
    pub(crate) helper: bool,
    /// The leader was reaped: its id may belong to someone else now.
    pub(crate) leader_done: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        use nix::sys::signal::{kill, killpg, Signal};
        use nix::unistd::Pid;
        let Some(pgid) = self.pgid else {
            return;
        };
        if self.helper {
            if !self.leader_done {
                let _ = kill(Pid::from_raw(pgid), Signal::SIGTERM);
            }
        } else {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// Starts `command` as the shell tool runs it: through the sandbox helper when the
/// runtime has one (under the policy the call's mark says), with the scrubbed
/// environment, in its own process group, output piped. Returns the child and whether
/// the helper runs it.
pub(crate) fn spawn(
    workspace: &Workspace,
    command_text: &str,
    ctx: &ToolExecutionContext,
) -> Result<(tokio::process::Child, bool), ToolError> {
    let runtime = workspace.shell_runtime();
    let launcher = runtime.and_then(|r| r.launcher());
    let mark = runtime.and_then(|r| r.take_mark(&ctx.call_id));
    let unasked = mark.is_some();
    let mut command = match launcher {
        Some((program, session_policy)) => {
            let own = runtime.and_then(|r| r.policy_for(mark.as_ref()));
            let policy = own.as_deref().unwrap_or(session_policy);
            let mut c = tokio::process::Command::new(program);
            let parent = std::process::id().to_string();
            c.args([
                HELPER_SUBCOMMAND,
                "--parent",
                &parent,
                "--policy",
                policy,
                "--",
            ]);
            c.arg("bash");
            c
        }
        None => tokio::process::Command::new("bash"),
    };
    command.arg("-c").arg(command_text).env_clear();
    match runtime {
        Some(r) => {
            command.envs(r.env().iter().map(|(k, v)| (k, v)));
            if unasked {
                for (name, value) in shell_env::unattended(&r.tmp_unasked().to_string_lossy()) {
                    command.env(name, value);
                }
                // Outside the workspace such a command reads only the system and
                // the toolchains: git is told so, rather than failing on a
                // ~/.gitconfig it may not open.
                command.env("GIT_CONFIG_GLOBAL", "/dev/null");
            }
        }
        None => {
            command.envs(
                ShellEnvConfig::default()
                    .build(std::env::vars(), &[])
                    .unwrap_or_default(),
            );
        }
    };
    let child = command
        .current_dir(workspace.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // The helper must get the chance to clean up; the guard handles it.
        .kill_on_drop(launcher.is_none())
        .spawn()
        .map_err(|e| ToolError::Failed(format!("cannot start bash: {e}")))?;
    Ok((child, launcher.is_some()))
}

/// Where [`pump`] puts what a command writes: the foreground's head and tail, or a
/// background job's unread output.
pub(crate) trait OutputSink: Send + 'static {
    fn push(&mut self, bytes: &[u8]);
}

/// Copies `reader` into `sink` until it ends.
pub(crate) fn pump(
    mut reader: impl AsyncRead + Unpin + Send + 'static,
    sink: Arc<Mutex<impl OutputSink>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = reader.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&buf[..n]);
        }
    })
}

#[async_trait::async_trait]
impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "Run a bash command in the workspace root. Returns its output (stdout and stderr) and exit code."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "command": {"type": "string"},
            "timeout_secs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS,
                "description": format!("Default {DEFAULT_TIMEOUT_SECS}")},
            "background": {"type": "boolean", "description":
                "Run without waiting (a server, a watcher): returns an id for shell_output and shell_kill"}
        }, "required": ["command"]})
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: ShellArgs = parse_args(input)?;
        let timeout = Duration::from_secs(
            args.timeout_secs
                .unwrap_or(DEFAULT_TIMEOUT_SECS)
                .clamp(1, MAX_TIMEOUT_SECS),
        );
        if args.background {
            return crate::shell_background::start(&self.0, &args.command, &ctx).await;
        }
        let (mut child, helper) = spawn(&self.0, &args.command, &ctx)?;
        let launcher = helper.then_some(());
        let mut guard = GroupGuard {
            pgid: child.id().and_then(|id| i32::try_from(id).ok()),
            helper: launcher.is_some(),
            leader_done: false,
        };
        let output = Arc::new(Mutex::new(HeadTail::new(self.0.output_cap())));
        let readers: Vec<_> = [
            child.stdout.take().map(|r| pump(r, output.clone())),
            child.stderr.take().map(|r| pump(r, output.clone())),
        ]
        .into_iter()
        .flatten()
        .collect();
        let status = tokio::time::timeout(timeout, child.wait()).await;
        guard.leader_done = matches!(status, Ok(Ok(_)));
        // Kill leftovers now; through the helper, give it a moment to finish that.
        drop(std::mem::replace(
            &mut guard,
            GroupGuard {
                pgid: None,
                helper: false,
                leader_done: true,
            },
        ));
        if launcher.is_some() && status.is_err() {
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            let _ = child.start_kill();
        }
        for reader in readers {
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        let text = output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .render();
        let (footer, summary) = match status {
            Ok(Ok(s)) => match s.code() {
                Some(code) => (format!("[exit code: {code}]"), format!("exit {code}")),
                None => ("[killed by a signal]".to_owned(), "killed".to_owned()),
            },
            Ok(Err(e)) => {
                return Err(ToolError::Failed(format!(
                    "waiting for the command failed: {e}"
                )))
            }
            Err(_) => (
                format!(
                    "[timed out after {}s; the command and its children were killed]",
                    timeout.as_secs()
                ),
                "timed out".to_owned(),
            ),
        };
        let body = if text.is_empty() {
            String::new()
        } else if text.ends_with('\n') {
            text
        } else {
            format!("{text}\n")
        };
        Ok(ToolOutput::new(format!("{body}{footer}")).with_summary(summary))
    }
}
