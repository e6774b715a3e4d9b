//! shell: `bash -c` in the workspace root, in its own process group so that a timeout,
//! a cancel (the future is dropped) or the end of the command kills everything it
//! started. Output (stdout and stderr, interleaved) is capped keeping head and tail.
//!
//! With a [`ShellRuntime`] that knows the saki binary, the command runs through the
//! sandbox helper (`saki sandbox-exec`, see [`saki_sandbox`]), which restricts it and
//! kills every process it leaves behind, also ones that left the process group. Either
//! way it gets the scrubbed environment of [`saki_sandbox::shell_env`].

use crate::common::{parse_args, prefix_at_boundary, suffix_at_boundary};
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_sandbox::shell_env::{self, ShellEnvConfig, ShellEnvError};
use saki_sandbox::{SandboxPolicy, HELPER_SUBCOMMAND};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
pub const MAX_TIMEOUT_SECS: u64 = 600;

pub struct Shell(pub Arc<Workspace>);

/// How shell commands run in a session: their environment, private temp dirs (0700,
/// removed with the runtime), and the sandbox helper.
#[derive(Debug)]
pub struct ShellRuntime {
    env: Vec<(String, String)>,
    tmp: tempfile::TempDir,
    /// The temp dir of commands that run unasked: not the approved commands' one, so
    /// nothing an unasked command leaves there is met by a later approved one.
    tmp_unasked: tempfile::TempDir,
    sandbox: Option<Launcher>,
    /// Calls let through without asking anyone, by call id (see [`Self::mark_unasked`]).
    unasked: Mutex<HashSet<String>>,
}

#[derive(Debug)]
struct Launcher {
    program: PathBuf,
    policy_json: String,
    /// The policy of a command that runs unasked (`None`: the sandbox is off).
    unasked_json: Option<String>,
}

/// Marks kept at most; past it the oldest are forgotten (a marked call that never ran,
/// denied by a later interceptor, leaves its mark behind).
const MAX_UNASKED_MARKS: usize = 4096;

impl ShellRuntime {
    /// A runtime with the environment `config` builds from saki's own, without the
    /// variables named in `key_names` (the providers' API keys), and no sandbox.
    pub fn new(config: &ShellEnvConfig, key_names: &[String]) -> Result<Self, ShellRuntimeError> {
        let temp_dir = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .map_err(ShellRuntimeError::TempDir)
        };
        let tmp = temp_dir("saki-shell-")?;
        let tmp_unasked = temp_dir("saki-shell-ro-")?;
        let mut env = config.build(std::env::vars(), key_names)?;
        let tmp_str = tmp.path().to_string_lossy().into_owned();
        for (name, value) in shell_env::unattended(&tmp_str) {
            env.retain(|(n, _)| n != name);
            env.push((name.to_owned(), value));
        }
        Ok(Self {
            env,
            tmp,
            tmp_unasked,
            sandbox: None,
            unasked: Mutex::new(HashSet::new()),
        })
    }

    /// Runs commands through `program sandbox-exec` (the saki binary) with `policy`, and
    /// those that run unasked with `unasked` ([`SandboxPolicy::for_unasked`]).
    pub fn set_sandbox(
        &mut self,
        program: PathBuf,
        policy: &SandboxPolicy,
        unasked: Option<&SandboxPolicy>,
    ) {
        self.sandbox = Some(Launcher {
            program,
            policy_json: serde_json::to_string(policy).unwrap_or_default(),
            unasked_json: unasked.and_then(|p| serde_json::to_string(p).ok()),
        });
    }

    /// The private temp dir commands get as `TMPDIR`.
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// The temp dir of commands that run unasked.
    pub fn tmp_unasked(&self) -> &Path {
        self.tmp_unasked.path()
    }

    /// Says that the call `call_id` runs without anyone having been asked (a command
    /// proven read-only and in scope): it gets the unasked policy, whatever the
    /// classifier thought of it. Whoever lets a shell call through unasked (the approval
    /// policy, the speculation gate) marks it before it runs.
    pub fn mark_unasked(&self, call_id: &str) {
        let mut marks = self.unasked.lock().unwrap_or_else(PoisonError::into_inner);
        if marks.len() >= MAX_UNASKED_MARKS {
            marks.clear();
        }
        marks.insert(call_id.to_owned());
    }

    /// Whether `call_id` was marked unasked; the mark is used up.
    pub fn take_unasked(&self, call_id: &str) -> bool {
        self.unasked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id)
    }

    /// The environment commands run with.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ShellRuntimeError {
    #[error("cannot create the private temp dir for shell commands: {0}")]
    TempDir(std::io::Error),
    #[error(transparent)]
    Env(#[from] ShellEnvError),
}

#[derive(Deserialize)]
struct ShellArgs {
    command: String,
    timeout_secs: Option<u64>,
}

/// Keeps the first and the last bytes of a long output.
struct HeadTail {
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

/// Ends what a command started when dropped (cancel, timeout, or normal end, which also
/// reaps background jobs that would keep the pipes open). Through the helper it asks the
/// helper to stop (SIGTERM), which kills every descendant, also those outside the process
/// group, and exits; without it, the whole process group gets SIGKILL.
struct GroupGuard {
    pgid: Option<i32>,
    helper: bool,
    /// The leader was reaped: its id may belong to someone else now.
    leader_done: bool,
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

fn pump(
    mut reader: impl AsyncRead + Unpin + Send + 'static,
    sink: Arc<Mutex<HeadTail>>,
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
                "description": format!("Default {DEFAULT_TIMEOUT_SECS}")}
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
        let runtime = self.0.shell_runtime();
        let launcher = runtime.and_then(|r| r.sandbox.as_ref());
        let unasked = runtime.is_some_and(|r| r.take_unasked(&ctx.call_id));
        let mut command = match launcher {
            Some(l) => {
                let policy = match (&l.unasked_json, unasked) {
                    (Some(json), true) => json,
                    _ => &l.policy_json,
                };
                let mut c = tokio::process::Command::new(&l.program);
                c.args([HELPER_SUBCOMMAND, "--policy", policy, "--"]);
                c.arg("bash");
                c
            }
            None => tokio::process::Command::new("bash"),
        };
        command.arg("-c").arg(&args.command).env_clear();
        match runtime {
            Some(r) => {
                command.envs(r.env.iter().map(|(k, v)| (k, v)));
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
        let mut child = command
            .current_dir(self.0.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            // The helper must get the chance to clean up; the guard handles it.
            .kill_on_drop(launcher.is_none())
            .spawn()
            .map_err(|e| ToolError::Failed(format!("cannot start bash: {e}")))?;
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
