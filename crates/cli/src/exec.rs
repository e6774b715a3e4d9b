//! `saki exec`: one non-interactive turn, streamed as plain text or JSON Lines.

use crate::config;
use crate::exit::ExitCode;
use crate::followups::FollowUps;
use crate::output::{emit, JsonItems, PlainPrinter};
use crate::session::{self, Resume};
use crate::setup;
use saki_llm_client::{ClientError, StopReason, ThinkingConfig};
use saki_llm_worker::hook::HookInterceptor;
use saki_llm_worker::{BackgroundUsage, TurnOutcome, TurnStatus, Worker, WorkerConfig};
use saki_pod::{parse_prompt, Alert, AlertLevel, FsView, PodInterceptor};
use saki_tools::sandbox::{SandboxMode, SandboxStatus};
use saki_tools::sanitize::sanitize;
use saki_tools::{ApprovalMode, ApprovalPolicy, DenyWithoutAsking, Workspace};
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The prompt. Read from stdin when absent or `-`.
    pub prompt: Option<String>,
    /// Print one JSON object per line (schema: docs/events.md) instead of plain text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub run: RunArgs,
    /// After the prompt, up to N times: predict the next prompt, run it speculatively in a
    /// copy-on-write overlay, and accept it when it completed (a boundary runs it as a
    /// normal turn under --approval).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub follow_ups: u32,
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// Workspace, approval, session and turn limits: shared by `exec` and the interactive UI.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Run in this directory (the workspace) instead of the current one.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// When tool calls need approval: plan, default, auto-edit or yolo. `exec` cannot ask,
    /// so there a call that needs approval is denied and the model is told why.
    #[arg(long, value_name = "MODE", default_value = "default")]
    pub approval: ApprovalMode,
    /// Continue an earlier session (`saki sessions` lists them): `--resume ID`, or
    /// `--resume --last` (also just `--last`) for this workspace's newest one.
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
    /// How shell commands are confined: workspace-write (default: writes only in the
    /// workspace and a private temp dir, no network, no credential files), read-only, or
    /// off. Also `sandbox = "..."` in config.toml.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// Another directory the tools and `@path` references may use (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// With --resume: the newest session of this workspace.
    #[arg(long)]
    pub last: bool,
    /// Most model requests in one turn.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
}

impl RunArgs {
    /// The workspace directory: `--cd`, else the current directory.
    pub fn dir(&self) -> PathBuf {
        match &self.cd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    /// The workspace: `dir()` as its root, each `--add-dir` as another root. `Err` names
    /// the directory that does not exist.
    pub fn workspace(&self) -> Result<Arc<Workspace>, String> {
        let dir = self.dir();
        let mut workspace = match Workspace::new(&dir) {
            Ok(w) if w.root().is_dir() => w,
            _ => return Err(format!("not a directory: {}", dir.display())),
        };
        for extra in &self.add_dir {
            if !extra.is_dir() || workspace.add_root(extra).is_err() {
                return Err(format!("--add-dir: not a directory: {}", extra.display()));
            }
        }
        Ok(Arc::new(workspace))
    }

    /// Which session to continue; `Err` for `--resume` without an id or `--last`.
    pub fn resume(&self) -> Result<Resume, String> {
        match (&self.resume, self.last) {
            (_, true) => Ok(Resume::Last),
            (Some(Some(id)), false) => Ok(Resume::Id(id.clone())),
            (Some(None), false) => {
                Err("--resume needs a session id, or --last (see `saki sessions`)".to_owned())
            }
            (None, false) => Ok(Resume::New),
        }
    }
}

/// Provider and model selection, shared by every command that talks to a model.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProviderArgs {
    /// Provider name: openai, anthropic, gemini, openai-compatible, ollama, llamacpp, or one from config.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name as the provider spells it.
    #[arg(long, short = 'm', value_name = "MODEL")]
    pub model: Option<String>,
    /// Base URL of the provider's API (OpenAI style includes /v1; Anthropic and Gemini are the host root).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Ask the model to think before answering (where the provider supports it).
    #[arg(long)]
    pub thinking: bool,
    /// Upper bound on output tokens per response.
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u32>,
    /// The model for background work: compaction summaries, suggestions, speculation.
    #[arg(long, value_name = "MODEL")]
    pub fast_model: Option<String>,
    /// Serve this GGUF model with llama.cpp for the session (llama-server from PATH, else
    /// the prebuilt xllamacpp from PyPI, installed once) and use it. Config: `local_model`.
    #[arg(long, value_name = "PATH.gguf")]
    pub local: Option<PathBuf>,
}

/// The system prompt for a new session in `workspace`, built on the blocking pool (it
/// runs git and reads AGENTS.md files).
pub async fn system_prompt_for(workspace: &std::path::Path) -> String {
    let workspace = workspace.to_path_buf();
    tokio::task::spawn_blocking(move || build_system_prompt(&workspace))
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "building the system prompt failed");
            String::new()
        })
}

/// The system prompt for a new session in `workspace`. Blocking: runs git.
pub fn build_system_prompt(workspace: &std::path::Path) -> String {
    let global_dir = config::global_config_dir(&|k: &str| std::env::var(k).ok());
    let cwd = std::env::current_dir()
        .ok()
        .filter(|c| c.starts_with(workspace))
        .unwrap_or_else(|| workspace.to_path_buf());
    let paths = saki_pod::instructions::agents_md_paths(workspace, &cwd, global_dir.as_deref());
    let instructions = saki_pod::instructions::project_instructions(&paths);
    saki_pod::system_prompt(&saki_pod::WorkspaceFacts::gather(workspace), &instructions)
}

/// What the person should know about this session's setup: config keys ignored because
/// the workspace is not trusted, and a sandbox that is not in force.
pub fn setup_alerts(resolved: &config::Resolved, sandbox: &SandboxStatus) -> Vec<Alert> {
    let mut alerts: Vec<Alert> = resolved
        .ignored
        .iter()
        .map(|key| Alert {
            level: AlertLevel::Warn,
            message: format!(
                "ignored {key}: this workspace is not trusted (`saki trust` trusts it)"
            ),
        })
        .collect();
    if sandbox.mode != SandboxMode::Off && !sandbox.enforced {
        alerts.push(Alert {
            level: AlertLevel::Warn,
            message: format!(
                "shell commands run without a sandbox ({}); only approvals protect this machine",
                sandbox.detail
            ),
        });
    }
    alerts
}

fn report_alert(alert: &Alert, json_mode: bool) {
    if json_mode {
        emit(&json!({"type": "alert", "level": alert.level, "message": alert.message}));
    }
    let label = match alert.level {
        AlertLevel::Info => "note",
        AlertLevel::Warn => "warning",
        AlertLevel::Error => "error",
    };
    eprintln!("{label}: {}", sanitize(&alert.message));
}

pub(crate) fn failed(json_mode: bool, kind: &str, message: &str) {
    failed_spent(json_mode, kind, message, None);
}

/// `turn.failed`, carrying the background tokens no report carried yet (when there are
/// any): it is the last line, so nothing can report them after it.
pub(crate) fn failed_spent(
    json_mode: bool,
    kind: &str,
    message: &str,
    background: Option<&BackgroundUsage>,
) {
    if json_mode {
        let mut event = json!({"type": "turn.failed", "error": {"kind": kind, "message": message}});
        if let Some(spent) = background
            .map(BackgroundUsage::take)
            .filter(|b| !b.is_empty())
        {
            event["background_usage"] = spent.to_json();
        }
        emit(&event);
    }
    eprintln!("error: {}", sanitize(message));
}

pub async fn run(args: ExecArgs) -> ExitCode {
    let json_mode = args.json;
    let workspace = match args.run.workspace() {
        Ok(w) => w,
        Err(message) => {
            failed(json_mode, "usage", &message);
            return ExitCode::Usage;
        }
    };
    let (mut resolved, hooks) = match setup::resolve(workspace.root(), &args.provider, None) {
        Ok(r) => r,
        Err(e) => {
            failed(json_mode, "config", &e.to_string());
            return ExitCode::Config;
        }
    };
    let _local_server =
        match setup::prepare(&mut resolved, &|n| eprintln!("note: {}", sanitize(n))).await {
            Ok(server) => server,
            Err(message) => {
                failed(json_mode, "config", &message);
                return ExitCode::Config;
            }
        };
    let (workspace, sandbox) = match setup::shell(&workspace, &resolved, args.run.sandbox) {
        Ok(w) => w,
        Err(message) => {
            failed(json_mode, "internal", &message);
            return ExitCode::Internal;
        }
    };
    let prompt = match read_prompt(args.prompt.as_deref()) {
        Ok(p) => p,
        Err(message) => {
            failed(json_mode, "usage", &message);
            return ExitCode::Usage;
        }
    };
    if let Some(message) = too_long(&prompt, &resolved) {
        failed(json_mode, "usage", &message);
        return ExitCode::Usage;
    }
    // Before anything reads or writes the workspace: what a killed saki left is repaired.
    let recovered = setup::recover();
    let client = match setup::client(&resolved) {
        Ok(c) => c,
        Err(e) => {
            failed(json_mode, e.kind(), &e.to_string());
            return exit_code_for(&e);
        }
    };
    let tools = match saki_tools::builtin_server(workspace.clone()) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            failed(json_mode, "internal", &e.to_string());
            return ExitCode::Internal;
        }
    };
    let mut worker_config = WorkerConfig::new(resolved.model.clone());
    worker_config.max_output_tokens = args
        .provider
        .max_output_tokens
        .or(resolved.requested_max_output);
    worker_config.thinking = args.provider.thinking.then(ThinkingConfig::default);
    worker_config.max_turns = args.run.max_turns as usize;
    worker_config.tool_call_recovery = resolved.tool_call_recovery;
    worker_config.first_tool_call_required = resolved.first_tool_call_required;
    worker_config.temperature = resolved.temperature;
    let mut worker = Worker::new(client.clone(), tools, worker_config);
    // Tokens of background work (compaction summaries, follow-ups), apart from the turns.
    let background = BackgroundUsage::new();
    worker.set_context_guard(Arc::new(
        setup::compactor(&resolved, client, &hooks, workspace.clone())
            .with_background_usage(background.clone()),
    ));
    // `@path` references: resolved now, attached right after the user item.
    let (user_text, file_items, ref_alerts) = FsView::new(workspace.clone())
        .prepare(&parse_prompt(&prompt), resolved.tool_output_max_bytes);
    let pod = PodInterceptor::default();
    pod.stash(file_items);
    worker.add_interceptor(Arc::new(pod));
    worker.add_interceptor(Arc::new(ApprovalPolicy::new(
        args.run.approval,
        Arc::new(DenyWithoutAsking),
        workspace.clone(),
    )));
    if !hooks.is_empty() {
        worker.add_interceptor(Arc::new(HookInterceptor::new(hooks.clone())));
    }

    let resume = match args.run.resume() {
        Ok(resume) => resume,
        Err(message) => {
            failed(json_mode, "usage", &message);
            return ExitCode::Usage;
        }
    };
    // Reading or creating the session log, and the new session's system prompt (git),
    // are blocking work: off the runtime's threads.
    let (root, resume_as) = (workspace.root().to_path_buf(), resume.clone());
    let (provider, model, title) = (
        resolved.provider.clone(),
        resolved.model.clone(),
        prompt.clone(),
    );
    let opened = tokio::task::spawn_blocking(move || {
        let store = session::store()?;
        session::open(
            &store,
            &resume_as,
            &root.display().to_string(),
            &provider,
            &model,
            &title,
            || build_system_prompt(&root),
        )
        .map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|e| Err(format!("opening the session failed: {e}")));
    let mut alerts = setup_alerts(&resolved, &sandbox);
    alerts.extend(recovered.into_iter().map(|message| Alert {
        level: AlertLevel::Warn,
        message,
    }));
    let recorder = match opened {
        Ok(opened) => {
            worker.set_history(opened.history);
            worker.set_system_prompt(Some(opened.system_prompt));
            alerts.extend(opened.warnings.into_iter().map(|message| Alert {
                level: AlertLevel::Warn,
                message,
            }));
            // Items are written by the log's own thread; each is on disk before the next
            // request goes out.
            worker.set_durability(Arc::new(opened.recorder.clone()));
            let key = setup::prompt_cache_key(&resolved, &opened.recorder.id());
            worker.client().set_prompt_cache_key(key);
            opened.recorder
        }
        Err(e) => {
            failed(json_mode, "session", &e);
            return if matches!(resume, Resume::New) {
                ExitCode::Internal
            } else {
                ExitCode::Usage
            };
        }
    };

    let printer = PlainPrinter::default();
    if json_mode {
        let items = JsonItems::default();
        worker
            .timeline_mut()
            .on_text_block(items.clone())
            .on_thinking_block(items.clone());
        let r = recorder.clone();
        worker.set_observer(Arc::new(move |e| {
            r.observe(e);
            items.worker_event(e);
        }));
        emit(
            &json!({"type": "turn.started", "provider": resolved.provider, "model": resolved.model,
            "wire_api": resolved.wire_api, "context_window": resolved.limits.context_window,
            "approval": args.run.approval, "cwd": workspace.root(), "session_id": recorder.id(),
            "resumed": !matches!(resume, Resume::New), "sandbox": sandbox}),
        );
    } else {
        worker
            .timeline_mut()
            .on_text_block(printer.clone())
            .on_thinking_block(printer.clone());
        let p = printer.clone();
        let r = recorder.clone();
        worker.set_observer(Arc::new(move |e| {
            r.observe(e);
            p.worker_event(e);
        }));
    }

    let cancel = setup::cancel_on_ctrl_c();
    alerts.extend(ref_alerts);
    for alert in &alerts {
        report_alert(alert, json_mode);
    }
    let result = crate::panics::guarded(worker.run_turn(user_text, cancel.clone())).await;
    printer.finish_line();
    let code = match result {
        Ok(result) => finish_turn(result, json_mode, &background),
        Err(panic) => {
            failed(json_mode, "internal", &crate::panics::failure(&panic));
            return ExitCode::Internal;
        }
    };
    if code != ExitCode::Success || args.follow_ups == 0 {
        return code;
    }
    saki_followup::cleanup_stale(&saki_followup::default_base());
    let mut speculator = saki_followup::Speculator::new(
        worker.client().clone(),
        resolved.read_ahead_model.clone(),
        args.run.approval,
        workspace,
    );
    speculator.tool_call_recovery = resolved.tool_call_recovery;
    speculator.first_tool_call_required = resolved.first_tool_call_required;
    speculator.batch_ids = worker.batch_ids();
    speculator.hooks = Some(hooks.clone());
    speculator.usage = background.clone();
    let follow_ups = FollowUps {
        background,
        count: args.follow_ups,
        speculator,
        hooks,
        json: json_mode,
        printer,
    };
    follow_ups.run(&mut worker, cancel).await
}

/// Why a prompt cannot be sent, when it alone does not fit the model's window (less the
/// reserved output): compaction cannot shrink the person's own words, and the provider
/// would only refuse it after the upload.
fn too_long(prompt: &str, resolved: &crate::config::Resolved) -> Option<String> {
    let window = resolved.limits.context_window?;
    let usable = window.saturating_sub(resolved.reserved_output());
    let tokens = saki_pod::estimate_tokens(prompt) as u64;
    (tokens > usable).then(|| {
        format!(
            "the prompt is about {tokens} tokens ({} bytes), more than the {usable} the model's \
             window holds; put the text in a file and name it with @path (read with a cap), \
             or shorten it",
            prompt.len()
        )
    })
}

fn read_prompt(arg: Option<&str>) -> Result<String, String> {
    let prompt = match arg {
        Some(p) if p != "-" => p.to_owned(),
        _ => {
            let mut buf = String::new();
            std::io::stdin()
                .read_to_string(&mut buf)
                .map_err(|e| format!("could not read the prompt from stdin: {e}"))?;
            buf
        }
    };
    if prompt.trim().is_empty() {
        return Err("the prompt is empty: pass it as an argument or on stdin".to_owned());
    }
    Ok(prompt)
}

/// Reports a finished turn (or its failure) and gives its exit code. `turn.completed`
/// carries the background tokens spent since the last report.
pub(crate) fn finish_turn(
    result: Result<TurnOutcome, ClientError>,
    json_mode: bool,
    background: &BackgroundUsage,
) -> ExitCode {
    match result {
        Ok(outcome) => report(&outcome, json_mode, background),
        Err(e) => {
            failed_spent(json_mode, e.kind(), &e.to_string(), Some(background));
            exit_code_for(&e)
        }
    }
}

fn report(outcome: &TurnOutcome, json_mode: bool, background: &BackgroundUsage) -> ExitCode {
    let usage = serde_json::to_value(outcome.usage).unwrap_or_default();
    let completed = |status: &str, stop_reason: Option<StopReason>| {
        if json_mode {
            emit(
                &json!({"type": "turn.completed", "status": status, "stop_reason": stop_reason,
                "requests": outcome.requests, "usage": usage,
                "background_usage": background.take().to_json()}),
            );
        }
    };
    match &outcome.status {
        TurnStatus::Completed { stop_reason } => {
            completed("completed", *stop_reason);
            ExitCode::Success
        }
        TurnStatus::Incomplete => {
            completed("incomplete", None);
            eprintln!("warning: the provider ended the stream without a finish reason; the answer may be incomplete");
            ExitCode::Success
        }
        TurnStatus::MaxTurns => {
            completed("max_turns", None);
            eprintln!("warning: stopped after {} model requests (--max-turns); the task may be unfinished", outcome.requests);
            ExitCode::MaxTurns
        }
        TurnStatus::PromptCancelled { reason } => {
            failed_spent(
                json_mode,
                "prompt_cancelled",
                &format!("the prompt was cancelled by a hook: {reason}"),
                Some(background),
            );
            ExitCode::PromptCancelled
        }
        TurnStatus::Cancelled => {
            failed_spent(json_mode, "cancelled", "cancelled", Some(background));
            ExitCode::Interrupted
        }
        TurnStatus::Failed { error } => {
            let message = match &error.code {
                Some(code) => format!("the provider reported an error ({code}): {}", error.message),
                None => format!("the provider reported an error: {}", error.message),
            };
            failed_spent(json_mode, "stream_failed", &message, Some(background));
            ExitCode::Provider
        }
    }
}

pub(crate) fn exit_code_for(e: &ClientError) -> ExitCode {
    match e {
        ClientError::Auth { .. }
        | ClientError::QuotaExceeded { .. }
        | ClientError::ContextTooLong { .. }
        | ClientError::ModelNotFound { .. }
        | ClientError::EndpointNotFound { .. }
        | ClientError::BadRequest { .. } => ExitCode::Rejected,
        ClientError::Cancelled => ExitCode::Interrupted,
        ClientError::Config(_) => ExitCode::Config,
        _ => ExitCode::Provider,
    }
}
