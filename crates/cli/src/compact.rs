//! `saki compact [SESSION_ID | --last]`: compacts a saved session by hand, with the same
//! provider and model flags as `exec` (default: the provider and model the session used).

use crate::args::{ProviderArgs, RunArgs};
use crate::exit::ExitCode;
use crate::output::{compaction_json, compaction_line, emit};
use crate::setup;
use saki_engine::{Action, EngineEvent, WorkerEvent};
use saki_llm_worker::CompactionStatus;
use saki_tools::Workspace;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    /// The session to compact (`saki sessions` lists them).
    pub session: Option<String>,
    /// The newest session of this workspace.
    #[arg(long, conflicts_with = "session")]
    pub last: bool,
    /// Print the result as one `compaction` JSON object.
    #[arg(long)]
    pub json: bool,
    /// The workspace (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    #[command(flatten)]
    pub provider: ProviderArgs,
}

fn fail(json_mode: bool, kind: &str, message: &str, code: ExitCode) -> ExitCode {
    if json_mode {
        emit(&json!({"type": "error", "error": {"kind": kind, "message": message}}));
    }
    eprintln!("error: {}", saki_tools::sanitize::sanitize(message));
    code
}

pub async fn run(args: CompactArgs) -> ExitCode {
    let json_mode = args.json;
    let dir = args
        .cd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    let workspace = match Workspace::new(&dir) {
        Ok(w) if w.root().is_dir() => w,
        _ => {
            let message = format!("not a directory: {}", dir.display());
            return fail(json_mode, "usage", &message, ExitCode::Usage);
        }
    };
    let resume = match (&args.session, args.last) {
        (Some(id), _) => saki_engine::Resume::Id(id.clone()),
        (None, true) => saki_engine::Resume::Last,
        (None, false) => {
            let message = "name the session to compact (`saki compact ID`, see `saki sessions`) or pass --last";
            return fail(json_mode, "usage", message, ExitCode::Usage);
        }
    };
    // The session is opened as every front end opens one, and compacted by its engine.
    let run = RunArgs {
        cd: Some(dir),
        approval: saki_tools::ApprovalMode::Default,
        resume: None,
        sandbox: None,
        add_dir: Vec::new(),
        last: false,
        max_turns: 1,
    };
    let opened = crate::open::open(crate::open::Open {
        provider: &args.provider,
        run: &run,
        workspace,
        resume,
        approver: Some(Arc::new(saki_tools::DenyWithoutAsking)),
        suggestions: &|_| false,
        ask_trust: None,
        note: &|n| eprintln!("note: {}", saki_tools::sanitize::sanitize(n)),
        extra_mcp: Vec::new(),
        session_id: None,
        shared_local: None,
    })
    .await;
    let crate::open::Opened {
        engine,
        mut events,
        mcp,
        local: _local_server,
        telemetry,
        ..
    } = match opened {
        Ok(opened) => opened,
        Err(e) => return fail(json_mode, e.kind, &e.message, e.code),
    };
    let session_id = engine.session_id().unwrap_or_default();
    let (actions, action_rx) = tokio::sync::mpsc::unbounded_channel();
    let engine_task = tokio::spawn(engine.run(action_rx));
    let cancel = setup::cancel_on_ctrl_c();
    let _ = actions.send(Action::Compress);
    let mut compaction = None;
    let mut cancelled = false;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                let _ = actions.send(Action::Cancel);
                continue;
            }
        };
        match event {
            Some(EngineEvent::Worker(WorkerEvent::Compacted(c))) => compaction = Some(c),
            Some(EngineEvent::Alert { level, message }) if level != saki_engine::Level::Info => {
                eprintln!("warning: {}", saki_tools::sanitize::sanitize(&message));
            }
            Some(EngineEvent::TurnFinished { .. }) | None => break,
            Some(_) => {}
        }
    }
    let _ = actions.send(Action::Quit);
    let _ = engine_task.await;
    crate::telemetry::finish(telemetry).await;
    mcp.shutdown().await;
    let Some(compaction) = compaction else {
        return fail(
            json_mode,
            "internal",
            "the compactor did not answer",
            ExitCode::Internal,
        );
    };
    if json_mode {
        let mut event = compaction_json(&compaction.report);
        event["session_id"] = json!(session_id);
        emit(&event);
    } else {
        eprintln!(
            "{}",
            saki_tools::sanitize::sanitize(&compaction_line(&compaction.report))
        );
    }
    match compaction.report.status {
        CompactionStatus::Compressed | CompactionStatus::Pruned | CompactionStatus::Noop => {
            ExitCode::Success
        }
        CompactionStatus::FailedRequest if cancel.is_cancelled() => ExitCode::Interrupted,
        CompactionStatus::FailedRequest => ExitCode::Provider,
        CompactionStatus::Blocked => ExitCode::PromptCancelled,
        CompactionStatus::FailedInflated
        | CompactionStatus::FailedEmptySummary
        | CompactionStatus::FailedMissingSections => ExitCode::Internal,
    }
}
