//! shell: `bash -c` in the workspace root, in its own process group so that a timeout,
//! a cancel (the future is dropped) or the end of the command kills everything it
//! started. Output (stdout and stderr, interleaved) is capped keeping head and tail.

use crate::common::{parse_args, prefix_at_boundary, suffix_at_boundary, TOOL_OUTPUT_MAX_BYTES};
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
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
}

/// Keeps the first and the last bytes of a long output.
#[derive(Default)]
struct HeadTail {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: usize,
}

impl HeadTail {
    const HALF: usize = TOOL_OUTPUT_MAX_BYTES / 2;

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = Self::HALF.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 4 * Self::HALF {
            self.tail.drain(..self.tail.len() - Self::HALF);
        }
    }

    fn render(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&self.tail);
        if self.head.len() + self.tail.len() <= TOOL_OUTPUT_MAX_BYTES
            && self.total == self.head.len() + self.tail.len()
        {
            return format!("{head}{tail}");
        }
        let tail = suffix_at_boundary(&tail, Self::HALF);
        let omitted = self.total - prefix_at_boundary(&head, Self::HALF).len() - tail.len();
        format!(
            "{}\n[...{omitted} bytes of output omitted...]\n{tail}",
            prefix_at_boundary(&head, Self::HALF)
        )
    }
}

/// Kills the whole process group when dropped (cancel, timeout, or normal end, which
/// also reaps background jobs that would keep the pipes open).
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
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
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: ShellArgs = parse_args(input)?;
        let timeout = Duration::from_secs(
            args.timeout_secs
                .unwrap_or(DEFAULT_TIMEOUT_SECS)
                .clamp(1, MAX_TIMEOUT_SECS),
        );
        let mut child = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&args.command)
            .current_dir(self.0.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ToolError::Failed(format!("cannot start bash: {e}")))?;
        let mut guard = GroupGuard(child.id().and_then(|id| i32::try_from(id).ok()));
        let output = Arc::new(Mutex::new(HeadTail::default()));
        let readers: Vec<_> = [
            child.stdout.take().map(|r| pump(r, output.clone())),
            child.stderr.take().map(|r| pump(r, output.clone())),
        ]
        .into_iter()
        .flatten()
        .collect();
        let status = tokio::time::timeout(timeout, child.wait()).await;
        drop(std::mem::replace(&mut guard, GroupGuard(None))); // kill leftovers now
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
