//! `saki compact [SESSION_ID | --last]`: compacts a saved session by hand, with the same
//! provider and model flags as `exec` (default: the provider and model the session used).

use crate::args::ProviderArgs;
use crate::exit::ExitCode;
use crate::output::{compaction_json, compaction_line, emit};
use crate::session;
use crate::setup;
use saki_llm_worker::{CompactionStatus, CompactionTrigger, ContextGuard, ContextView};
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
        Ok(w) if w.root().is_dir() => Arc::new(w),
        _ => {
            let message = format!("not a directory: {}", dir.display());
            return fail(json_mode, "usage", &message, ExitCode::Usage);
        }
    };
    let store = match session::store() {
        Ok(s) => s,
        Err(e) => return fail(json_mode, "session", &e, ExitCode::Config),
    };
    let resume = match (&args.session, args.last) {
        (Some(id), _) => saki_engine::Resume::Id(id.clone()),
        (None, true) => saki_engine::Resume::Last,
        (None, false) => {
            let message = "name the session to compact (`saki compact ID`, see `saki sessions`) or pass --last";
            return fail(json_mode, "usage", message, ExitCode::Usage);
        }
    };
    let loaded = match session::load(&store, &resume, workspace.root()) {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return fail(json_mode, "usage", "no session to compact", ExitCode::Usage),
        Err(e) => return fail(json_mode, "session", &e, ExitCode::Usage),
    };
    let stderr: session::FailureReporter = std::sync::Arc::new(|message: String| {
        eprintln!("warning: {}", saki_tools::sanitize::sanitize(&message));
    });
    let continued = session::continue_session(&store, loaded, String::new, Some(stderr));
    let opened = match continued {
        Ok(o) => o,
        Err(e) => return fail(json_mode, "session", &e.to_string(), ExitCode::Usage),
    };
    for warning in &opened.warnings {
        eprintln!("warning: {}", saki_tools::sanitize::sanitize(warning));
    }
    let meta = &opened.meta;
    let session_choice = Some((meta.provider.as_str(), meta.model.as_str()));
    let (mut resolved, hooks) =
        match setup::resolve(workspace.root(), &args.provider, session_choice) {
            Ok(r) => r,
            Err(e) => return fail(json_mode, "config", &e.to_string(), ExitCode::Config),
        };
    let _local_server = match setup::prepare(&mut resolved, &|n| {
        eprintln!("note: {}", saki_tools::sanitize::sanitize(n))
    })
    .await
    {
        Ok(server) => server,
        Err(message) => return fail(json_mode, "config", &message, ExitCode::Config),
    };
    let client = match setup::client(&resolved) {
        Ok(c) => c,
        Err(e) => {
            let code = crate::exec::exit_code_for(&e);
            return fail(json_mode, e.kind(), &e.to_string(), code);
        }
    };
    let tools = match saki_tools::builtin_server(workspace.clone()) {
        Ok(t) => t.definitions(),
        Err(e) => return fail(json_mode, "internal", &e.to_string(), ExitCode::Internal),
    };
    let compactor = setup::compactor(&resolved, client, &hooks, workspace);
    let cancel = setup::cancel_on_ctrl_c();
    let view = ContextView {
        history: &opened.history,
        system_prompt: Some(opened.system_prompt.as_str()).filter(|s| !s.is_empty()),
        tools: &tools,
        last_report: None,
        cancel: &cancel,
    };
    let Some(compaction) = compactor.check(view, CompactionTrigger::Manual).await else {
        return fail(
            json_mode,
            "internal",
            "the compactor did not answer",
            ExitCode::Internal,
        );
    };
    if let Err(e) = opened.recorder.record_compaction(&compaction).await {
        return fail(json_mode, "session", &e.to_string(), ExitCode::Internal);
    }
    if json_mode {
        let mut event = compaction_json(&compaction.report);
        event["session_id"] = json!(meta.id);
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
