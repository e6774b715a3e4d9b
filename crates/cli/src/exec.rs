//! `saki exec`: one non-interactive turn, streamed as plain text or JSON Lines.

use crate::args::{ProviderArgs, RunArgs};
use crate::exec_front::{ExecFront, Next};
use crate::exit::ExitCode;
use crate::output::emit;
use crate::output_schema::OutputSchema;
use crate::session::Resume;
use crate::setup;
use saki_engine::Action;
use saki_llm_client::{ClientError, StopReason};
use saki_llm_worker::{BackgroundUsage, TurnOutcome, TurnStatus};
use saki_pod::{Alert, AlertLevel};
use saki_tools::sanitize::sanitize;
use saki_tools::DenyWithoutAsking;
use serde_json::json;
use std::io::Read;
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
    /// Run the custom slash command NAME (`.saki/commands/NAME.md`, or `NAME.md` in the
    /// global config's `commands/`); the prompt argument is then its arguments.
    #[arg(long, value_name = "NAME")]
    pub command: Option<String>,
    /// Write the final assistant message to FILE (atomically) when the run succeeds.
    #[arg(long, value_name = "FILE")]
    pub output_last_message: Option<std::path::PathBuf>,
    /// The final answer must be JSON that validates against the JSON schema in FILE:
    /// asked for as structured output where the provider has it, checked at the end
    /// (exit 8 when it does not validate).
    #[arg(long, value_name = "FILE", conflicts_with = "follow_ups")]
    pub output_schema: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub provider: ProviderArgs,
}

pub(crate) fn report_alert(alert: &Alert, json_mode: bool) {
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
    let resume = match args.run.resume() {
        Ok(resume) => resume,
        Err(message) => {
            failed(json_mode, "usage", &message);
            return ExitCode::Usage;
        }
    };
    let mut prompt = match prompt_of(&args) {
        Ok(p) => p,
        Err(message) => {
            failed(json_mode, "usage", &message);
            return ExitCode::Usage;
        }
    };
    let schema = match args.output_schema.as_deref().map(OutputSchema::load) {
        None => None,
        Some(Ok(schema)) => Some(schema),
        Some(Err(message)) => {
            failed(json_mode, "usage", &message);
            return ExitCode::Usage;
        }
    };
    let follow_ups = args.follow_ups;
    let opened = crate::open::open(crate::open::Open {
        provider: &args.provider,
        run: &args.run,
        workspace: (*workspace).clone(),
        resume: resume.clone(),
        approver: Some(Arc::new(DenyWithoutAsking)),
        suggestions: &|_| follow_ups > 0,
        ask_trust: None,
        note: &|n| eprintln!("note: {}", sanitize(n)),
        extra_mcp: Vec::new(),
        session_id: None,
        shared_local: None,
    })
    .await;
    let crate::open::Opened {
        mut engine,
        mut events,
        resolved,
        sandbox,
        mut mcp,
        local: _local_server,
        resumed,
        telemetry,
        alerts,
        ..
    } = match opened {
        Ok(opened) => opened,
        Err(e) => {
            failed(json_mode, e.kind, &e.message);
            return e.code;
        }
    };
    let structured = OutputSchema::enforced(resolved.wire_api, &resolved.model);
    if let Some(schema) = schema.as_ref().filter(|_| !structured) {
        // No structured output here: the prompt says it (history first: the model
        // sees nothing the session does not hold).
        prompt = format!("{prompt}\n\n{}", schema.instruction());
    }
    if let Some(message) = too_long(&prompt, &resolved) {
        failed(json_mode, "usage", &message);
        return ExitCode::Usage;
    }
    if let Some(schema) = schema.as_ref().filter(|_| structured) {
        engine.set_response_schema(Some(schema.response_schema()));
    }
    if let Some(name) = &args.command {
        let name = name.trim_start_matches('/');
        if !engine.commands().iter().any(|c| c.name == name) {
            let known: Vec<String> = engine
                .commands()
                .iter()
                .map(|c| format!("/{}", c.name))
                .collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            failed(
                json_mode,
                "usage",
                &format!("--command: no custom command /{name} (yours: {known})"),
            );
            return ExitCode::Usage;
        }
    }
    let opened = if resumed {
        Ok(())
    } else {
        engine.ensure_session(&prompt)
    };
    let session_id = match opened.and_then(|()| {
        engine
            .session_id()
            .ok_or_else(|| "the session log could not be opened".to_owned())
    }) {
        Ok(id) => id,
        Err(message) => {
            failed(json_mode, "session", &message);
            return if matches!(resume, Resume::New) {
                ExitCode::Internal
            } else {
                ExitCode::Usage
            };
        }
    };
    if json_mode {
        emit(
            &json!({"type": "turn.started", "provider": resolved.provider, "model": resolved.model,
            "wire_api": resolved.wire_api, "context_window": resolved.limits.context_window,
            "tool_calling": resolved.tool_calling().as_str(),
            "approval": args.run.approval, "cwd": workspace.root(), "session_id": session_id,
            "resumed": resumed, "sandbox": sandbox}),
        );
    }
    for alert in &alerts {
        report_alert(alert, json_mode);
    }
    // A script's one prompt should see every tool: the servers get their startup time.
    mcp.ready().await;
    while let Ok(alert) = mcp.alerts.try_recv() {
        report_alert(&alert, json_mode);
    }
    let background = engine.background_usage();
    let (actions, action_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut engine_task = tokio::spawn(engine.run(action_rx));
    let cancel = setup::cancel_on_ctrl_c();
    let quit = actions.clone();
    tokio::spawn(async move {
        cancel.cancelled().await;
        let _ = quit.send(Action::Quit);
    });
    let _ = actions.send(Action::Submit { text: prompt });
    let mut front = ExecFront::new(
        json_mode,
        args.follow_ups,
        background.clone(),
        actions.clone(),
    );
    front.schema = schema;
    let mut ended = None;
    let code = loop {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { continue };
                if let Next::Done(code) = front.on_event(event) {
                    break Some(code);
                }
            }
            // The engine ended before the run did: quit between turns, or a panic.
            joined = &mut engine_task, if ended.is_none() => {
                ended = Some(joined);
                // What it reported before it ended still counts.
                let mut done = None;
                while let Ok(event) = events.try_recv() {
                    if let Next::Done(code) = front.on_event(event) {
                        done = Some(code);
                        break;
                    }
                }
                break done;
            }
        }
    };
    let _ = actions.send(Action::Quit);
    front.printer.finish_line();
    crate::telemetry::finish(telemetry).await;
    let joined = match ended {
        Some(joined) => joined,
        None => engine_task.await,
    };
    let stats = match joined {
        Ok(stats) => stats,
        Err(e) if e.is_panic() => {
            let message = crate::panics::message(e.into_panic());
            failed(json_mode, "internal", &crate::panics::failure(&message));
            return ExitCode::Internal;
        }
        Err(_) => Default::default(),
    };
    mcp.shutdown().await;
    let Some(code) = code else {
        // Quit before the turn reported its end: the run was interrupted between turns.
        failed_spent(json_mode, "cancelled", "cancelled", Some(&background));
        return ExitCode::Interrupted;
    };
    if args.follow_ups > 0 {
        // What reading ahead did and cost: `--json` reports background tokens no
        // `turn.completed` carried yet (after a failure `turn.failed` did, and it must
        // stay the last line); plain mode prints the read-ahead line.
        let rest = background.take();
        if json_mode {
            if !rest.is_empty() && code == ExitCode::Success {
                emit(&json!({"type": "background_usage", "background_usage": rest.to_json()}));
            }
        } else {
            eprintln!("[{}]", stats.summary_line());
            if let Some(line) = crate::pricing::session_line(&stats) {
                eprintln!("[{line}]");
            }
        }
    }
    if let (ExitCode::Success, Some(path)) = (code, &args.output_last_message) {
        let text = front.final_answer();
        if text.is_empty() {
            eprintln!(
                "warning: no assistant message; {} is empty",
                sanitize(&path.display().to_string())
            );
        }
        if let Err(message) = crate::last_message::write(path, &text) {
            failed(json_mode, "output_file", &message);
            return ExitCode::Internal;
        }
    }
    code
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

/// The prompt: `/NAME ARGS` for `--command NAME`, else the argument or stdin.
fn prompt_of(args: &ExecArgs) -> Result<String, String> {
    match &args.command {
        Some(name) => {
            let rest = args.prompt.as_deref().unwrap_or("");
            Ok(format!("/{} {rest}", name.trim_start_matches('/'))
                .trim_end()
                .to_owned())
        }
        None => read_prompt(args.prompt.as_deref()),
    }
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
            let spent = background.take();
            let mut event = json!({"type": "turn.completed", "status": status,
                "stop_reason": stop_reason, "requests": outcome.requests, "usage": usage,
                "background_usage": spent.to_json()});
            if let Some(cost) = crate::pricing::turn_cost(&outcome.usage, &spent) {
                event["cost_usd"] = cost.into();
            }
            emit(&event);
        }
    };
    // The words are the engine's, as every front end shows them.
    // They may quote a provider's words.
    let note = || {
        saki_engine::outcome_note(outcome)
            .map_or_else(String::new, |(_, m)| sanitize(&m).into_owned())
    };
    match &outcome.status {
        TurnStatus::Completed { stop_reason } => {
            completed("completed", *stop_reason);
            ExitCode::Success
        }
        TurnStatus::Incomplete => {
            completed("incomplete", None);
            eprintln!("warning: {}", note());
            ExitCode::Success
        }
        TurnStatus::MaxTurns => {
            completed("max_turns", None);
            eprintln!("warning: {}", note());
            ExitCode::MaxTurns
        }
        TurnStatus::Stopped { .. } => {
            completed("stopped", None);
            eprintln!("{}", note());
            ExitCode::Success
        }
        TurnStatus::PromptCancelled { .. } => {
            failed_spent(json_mode, "prompt_cancelled", &note(), Some(background));
            ExitCode::PromptCancelled
        }
        TurnStatus::Cancelled => {
            failed_spent(json_mode, "cancelled", &note(), Some(background));
            ExitCode::Interrupted
        }
        TurnStatus::Failed { .. } => {
            failed_spent(json_mode, "stream_failed", &note(), Some(background));
            ExitCode::Provider
        }
    }
}

pub(crate) fn exit_code_for(e: &ClientError) -> ExitCode {
    ExitCode::for_client_error(e)
}
