//! Background commands: `shell` with `background: true` starts the command as any shell
//! call runs (the same approval before it, the same sandbox helper, policy and
//! environment, its own process group) and returns at once with an id; `shell_output`
//! returns what it wrote since the last look and whether it ended; `shell_kill` stops it.
//!
//! The jobs belong to the session's [`crate::ShellRuntime`]: at most
//! [`Jobs::limit`] run at once, each keeps at most the output cap of unread output (the
//! oldest is dropped, and the next read says how much), and every job is killed when the
//! runtime is dropped (the session ends), when its leader ends (what it left behind), or
//! on `shell_kill`. Should saki die without dropping anything, the sandbox helper's
//! parent-death signal ends them.

use crate::common::parse_args;
use crate::shell::{pump, GroupGuard, OutputSink};
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Background commands running at once, unless config says otherwise.
pub const DEFAULT_MAX_BACKGROUND: usize = 4;

/// Output a command wrote and nobody read yet, bounded.
#[derive(Debug, Default)]
struct Unread {
    bytes: Vec<u8>,
    /// Dropped (the oldest first) since the last read, to stay under the cap.
    dropped: usize,
    cap: usize,
}

impl OutputSink for Unread {
    fn push(&mut self, more: &[u8]) {
        self.bytes.extend_from_slice(more);
        if self.bytes.len() > self.cap {
            let excess = self.bytes.len() - self.cap;
            self.bytes.drain(..excess);
            self.dropped += excess;
        }
    }
}

impl Unread {
    fn take(&mut self) -> (String, usize) {
        let text = String::from_utf8_lossy(&self.bytes).into_owned();
        self.bytes.clear();
        (text, std::mem::take(&mut self.dropped))
    }
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exit(i32),
    Signal,
    Killed,
}

struct Job {
    command: String,
    started: Instant,
    output: Arc<Mutex<Unread>>,
    ended: Arc<Mutex<Option<Ended>>>,
    /// Kills what runs when dropped (see [`GroupGuard`]); the waiter marks the leader
    /// reaped.
    guard: Arc<Mutex<GroupGuard>>,
    waiter: tokio::task::JoinHandle<()>,
}

impl Job {
    fn ended(&self) -> Option<Ended> {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills everything the job still runs.
    fn kill(&self) {
        let mut guard = self.guard.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = std::mem::replace(
            &mut *guard,
            GroupGuard {
                pgid: None,
                helper: false,
                leader_done: true,
            },
        );
        drop(taken);
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended.get_or_insert(Ended::Killed);
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.kill();
        // The child goes with the waiter (killed on drop when no helper runs it).
        self.waiter.abort();
    }
}

/// One job as `/shells` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: String,
    pub command: String,
    pub ended: Option<Ended>,
    pub seconds: u64,
}

/// A session's background commands.
pub struct Jobs {
    limit: AtomicUsize,
    next: AtomicU64,
    jobs: Mutex<BTreeMap<u64, Job>>,
}

impl Default for Jobs {
    fn default() -> Self {
        Self {
            limit: AtomicUsize::new(DEFAULT_MAX_BACKGROUND),
            next: AtomicU64::new(1),
            jobs: Mutex::new(BTreeMap::new()),
        }
    }
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("limit", &self.limit())
            .finish_non_exhaustive()
    }
}

fn parse_id(id: &str) -> Option<u64> {
    id.strip_prefix("bg")?.parse().ok()
}

impl Jobs {
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// At most `n` background commands at once (0: none).
    pub fn set_limit(&self, n: usize) {
        self.limit.store(n, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Job>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every job, oldest first.
    pub fn list(&self) -> Vec<JobInfo> {
        self.lock()
            .iter()
            .map(|(id, job)| JobInfo {
                id: format!("bg{id}"),
                command: job.command.clone(),
                ended: job.ended(),
                seconds: job.started.elapsed().as_secs(),
            })
            .collect()
    }

    /// Kills every job (the session ends).
    pub fn kill_all(&self) {
        let jobs = std::mem::take(&mut *self.lock());
        drop(jobs);
    }

    /// New output of job `id` and how it stands; a job that ended is forgotten once read.
    pub fn output(&self, id: &str) -> Result<String, ToolError> {
        let n = parse_id(id).ok_or_else(|| unknown(id))?;
        let mut jobs = self.lock();
        let job = jobs.get(&n).ok_or_else(|| unknown(id))?;
        // Read how it stands before the output, so output written before it ended is in.
        let ended = job.ended();
        let (text, dropped) = job
            .output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if ended.is_some() {
            jobs.remove(&n);
        }
        Ok(render(id, &text, dropped, ended))
    }

    /// Stops job `id`, with what it wrote since the last look.
    pub fn kill(&self, id: &str) -> Result<String, ToolError> {
        let n = parse_id(id).ok_or_else(|| unknown(id))?;
        let job = self.lock().remove(&n).ok_or_else(|| unknown(id))?;
        let was = job.ended();
        job.kill();
        let (text, dropped) = job
            .output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        Ok(render(
            id,
            &text,
            dropped,
            Some(was.unwrap_or(Ended::Killed)),
        ))
    }
}

fn unknown(id: &str) -> ToolError {
    ToolError::Failed(format!(
        "no background command `{id}` (ended ones are forgotten once their output is read)"
    ))
}

fn render(id: &str, text: &str, dropped: usize, ended: Option<Ended>) -> String {
    let mut out = String::new();
    if dropped > 0 {
        out.push_str(&format!(
            "[...{dropped} earlier bytes of output dropped...]\n"
        ));
    }
    out.push_str(text);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if text.is_empty() && dropped == 0 {
        out.push_str("[no new output]\n");
    }
    out.push_str(&match ended {
        None => format!("[{id} is still running]"),
        Some(Ended::Exit(code)) => format!("[{id} ended: exit code {code}]"),
        Some(Ended::Signal) => format!("[{id} ended: killed by a signal]"),
        Some(Ended::Killed) => format!("[{id} killed]"),
    });
    out
}

fn jobs_of(workspace: &Workspace) -> Result<&Jobs, ToolError> {
    workspace
        .shell_runtime()
        .map(|r| r.background())
        .ok_or_else(|| ToolError::Failed("background commands are not available here".into()))
}

/// `shell` with `background: true`.
pub(crate) async fn start(
    workspace: &Workspace,
    command: &str,
    ctx: &ToolExecutionContext,
) -> Result<ToolOutput, ToolError> {
    let jobs = jobs_of(workspace)?;
    let running = jobs.list().iter().filter(|j| j.ended.is_none()).count();
    if running >= jobs.limit() {
        return Err(ToolError::Failed(format!(
            "{running} background commands run already (at most {}); stop one with shell_kill",
            jobs.limit()
        )));
    }
    let (mut child, helper) = crate::shell::spawn(workspace, command, ctx)?;
    let guard = Arc::new(Mutex::new(GroupGuard {
        pgid: child.id().and_then(|id| i32::try_from(id).ok()),
        helper,
        leader_done: false,
    }));
    let output = Arc::new(Mutex::new(Unread {
        cap: workspace.output_cap(),
        ..Unread::default()
    }));
    let readers: Vec<_> = [
        child.stdout.take().map(|r| pump(r, output.clone())),
        child.stderr.take().map(|r| pump(r, output.clone())),
    ]
    .into_iter()
    .flatten()
    .collect();
    let ended = Arc::new(Mutex::new(None));
    let waiter = {
        let (guard, ended) = (guard.clone(), ended.clone());
        tokio::spawn(async move {
            let status = child.wait().await;
            // What it left behind dies with it, as for a command run in the foreground.
            {
                let mut guard = guard.lock().unwrap_or_else(PoisonError::into_inner);
                guard.leader_done = true;
                let taken = std::mem::replace(
                    &mut *guard,
                    GroupGuard {
                        pgid: None,
                        helper: false,
                        leader_done: true,
                    },
                );
                drop(taken);
            }
            for reader in readers {
                let _ = reader.await;
            }
            let how = match status.map(|s| s.code()) {
                Ok(Some(code)) => Ended::Exit(code),
                _ => Ended::Signal,
            };
            ended
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(how);
        })
    };
    let n = jobs.next.fetch_add(1, Ordering::Relaxed);
    jobs.lock().insert(
        n,
        Job {
            command: command.to_owned(),
            started: Instant::now(),
            output,
            ended,
            guard,
            waiter,
        },
    );
    let id = format!("bg{n}");
    Ok(ToolOutput::new(format!(
        "[started in the background as {id}; read its output with shell_output {{\"id\": \"{id}\"}}, \
         stop it with shell_kill]"
    ))
    .with_summary(format!("background {id}")))
}

#[derive(Deserialize)]
struct IdArgs {
    id: String,
}

fn id_schema() -> Value {
    json!({"type": "object", "properties": {
        "id": {"type": "string", "description": "The id shell returned, e.g. bg1"}
    }, "required": ["id"]})
}

/// `shell_output {"id"}`.
pub struct ShellOutput(pub Arc<Workspace>);

/// `shell_kill {"id"}`.
pub struct ShellKill(pub Arc<Workspace>);

#[async_trait::async_trait]
impl Tool for ShellOutput {
    fn name(&self) -> &str {
        "shell_output"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "New output of a background shell command since the last call, and whether it ended (with its exit code)."
    }
    fn input_schema(&self) -> Value {
        id_schema()
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: IdArgs = parse_args(input)?;
        Ok(ToolOutput::new(jobs_of(&self.0)?.output(&args.id)?))
    }
}

#[async_trait::async_trait]
impl Tool for ShellKill {
    fn name(&self) -> &str {
        "shell_kill"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "Stop a background shell command and everything it started."
    }
    fn input_schema(&self) -> Value {
        id_schema()
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: IdArgs = parse_args(input)?;
        Ok(ToolOutput::new(jobs_of(&self.0)?.kill(&args.id)?))
    }
}

#[cfg(test)]
#[path = "shell_background_tests.rs"]
mod tests;
