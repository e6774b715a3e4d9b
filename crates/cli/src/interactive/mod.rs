//! `saki` with no subcommand: the interactive terminal UI (saki-tui) driven by the
//! engine here, which owns the same Worker, tools, session log and follow-up machinery
//! as `exec`.

mod bridge;
mod engine;
mod prewarm;
mod sessions;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ahead;

use crate::config::Resolved;
use crate::exec::{ProviderArgs, RunArgs};
use crate::exit::ExitCode;
use crate::session::{self, Resume};
use crate::setup;
use bridge::{RecorderSlot, StreamForwarder, UiApprover, UiSender};
use engine::Engine;
use saki_llm_client::ThinkingConfig;
use saki_llm_worker::hook::{HookInterceptor, Hooks};
use saki_llm_worker::{BackgroundUsage, Worker, WorkerConfig};
use saki_pod::{PodInterceptor, SessionStore};
use saki_tools::sandbox::SandboxStatus;
use saki_tools::{ApprovalPolicy, SessionGrants, SharedMode, Workspace};
use saki_tui::{App, Theme};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Flags for the interactive UI (the same as `exec` where they mean the same).
#[derive(Debug, Clone, clap::Args)]
pub struct InteractiveArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Do not predict next prompts or speculate them (config: `suggestions = false`;
    /// environment: `SAKI_SUGGESTIONS=0`, which also wins over config).
    #[arg(long)]
    pub no_suggestions: bool,
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// Everything the engine starts with.
pub(crate) struct Setup {
    worker: Worker,
    ui: UiSender,
    workspace: Arc<Workspace>,
    args: ProviderArgs,
    resolved: Resolved,
    hooks: Hooks,
    pod: Arc<PodInterceptor>,
    mode: SharedMode,
    grants: Arc<SessionGrants>,
    slot: RecorderSlot,
    store: Option<SessionStore>,
    tokens: Arc<AtomicU64>,
    suggestions: bool,
    sandbox: SandboxStatus,
    /// Background tokens (suggestions, speculations, compaction summaries).
    spent: BackgroundUsage,
    main_usage: bridge::MainUsage,
}

pub fn run(args: InteractiveArgs) -> ExitCode {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("error: the interactive UI needs a terminal; use `saki exec PROMPT` in scripts and pipes");
        return ExitCode::Usage;
    }
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
    runtime.block_on(run_async(args))
}

async fn run_async(args: InteractiveArgs) -> ExitCode {
    let workspace = match args.run.workspace() {
        Ok(w) => w,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::Usage;
        }
    };
    let resume = match args.run.resume() {
        Ok(resume) => resume,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::Usage;
        }
    };
    let (ui_tx, ui_rx) = tokio::sync::mpsc::unbounded_channel();
    let (action_tx, action_rx) = tokio::sync::mpsc::unbounded_channel();
    let store = session::store();
    // A session to resume is loaded first: it fails before the UI opens, and its provider
    // and model are used unless flags name others (as in `exec`).
    let loaded = match (&resume, &store) {
        (Resume::New, _) => Ok(None),
        (_, Err(e)) => Err(e.clone()),
        (Resume::Id(id), Ok(store)) => store.load(id).map(Some).map_err(|e| e.to_string()),
        (Resume::Last, Ok(store)) => store
            .latest_for(&workspace.root().display().to_string())
            .map(Some)
            .map_err(|e| e.to_string()),
    };
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::Usage;
        }
    };
    let session = loaded
        .as_ref()
        .map(|l| (l.meta.provider.as_str(), l.meta.model.as_str()));
    let mut resolved = setup::resolve(workspace.root(), &args.provider, session);
    if let Ok((r, _)) = &resolved {
        if !r.ignored.is_empty() && !r.trust_refused && ask_trust(workspace.root(), &r.ignored) {
            resolved = setup::resolve(workspace.root(), &args.provider, session);
        }
    }
    let mut resolved = resolved.map_err(|e| (ExitCode::Config, e.to_string()));
    // Before the UI takes the terminal: a local server may need seconds to start.
    let local_server = match &mut resolved {
        Ok((r, _)) => setup::prepare(r, &|n| eprintln!("note: {n}"))
            .await
            .map_err(|e| (ExitCode::Config, e)),
        Err(e) => Err(e.clone()),
    };
    let _local_server = match local_server {
        Ok(server) => server,
        Err((code, message)) => {
            eprintln!("error: {message}");
            return code;
        }
    };
    // Before anything reads or writes the workspace: what a killed saki left is repaired.
    for message in setup::recover() {
        let _ = ui_tx.send(saki_tui::EngineEvent::Alert {
            level: saki_tui::Level::Warn,
            message,
        });
    }
    let system_prompt = crate::exec::system_prompt_for(workspace.root()).await;
    let setup = match resolved.and_then(|(resolved, hooks)| {
        let store = store.ok();
        build(
            &args,
            resolved,
            hooks,
            workspace.clone(),
            ui_tx,
            store,
            system_prompt,
        )
    }) {
        Ok(s) => s,
        Err((code, message)) => {
            eprintln!("error: {message}");
            return code;
        }
    };
    let suggestions = setup.suggestions;
    let mut engine = Engine::new(setup);
    if let Some(loaded) = loaded {
        engine.continue_loaded(loaded).await;
    }
    let app = App::new(
        engine.status(),
        Theme::from_env(),
        workspace.root().to_path_buf(),
        suggestions,
    );
    let mut app = app;
    app.transcript.info(format!(
        "saki in {} · /help for commands · Ctrl+D quits",
        workspace.root().display()
    ));
    let engine_task = tokio::spawn(engine.run(action_rx));
    // SIGTERM / SIGHUP: quit like /quit (the turn is cancelled, its commands killed, the
    // session kept), and exit with the signal's code.
    let quit = action_tx.clone();
    setup::on_termination(move || {
        let _ = quit.send(saki_tui::Action::Quit);
    });
    let result = saki_tui::terminal::run(app, ui_rx, action_tx).await;
    // The UI is gone: the engine sees its channel close and stops what runs. An engine
    // that panicked closed the UI's channel first; say so, and fail.
    match engine_task.await {
        Err(e) if e.is_panic() => {
            let message = crate::panics::message(e.into_panic());
            eprintln!("error: {}", crate::panics::failure(&message));
            return ExitCode::Internal;
        }
        // One line on what reading ahead did and cost, once the terminal is back.
        Ok(stats) if suggestions || !stats.background.is_empty() => {
            eprintln!("{}", stats.summary_line());
        }
        _ => {}
    }
    match result {
        Ok(()) => ExitCode::Success,
        Err(e) => {
            eprintln!("error: the terminal failed: {e}");
            ExitCode::Internal
        }
    }
}

/// Asks once, on the terminal before the UI opens, whether to trust a workspace whose
/// config sets keys only trusted directories may set; records the answer.
fn ask_trust(workspace: &std::path::Path, ignored: &[String]) -> bool {
    let env = |k: &str| std::env::var(k).ok();
    let config = crate::config::global_config_dir(&env).map(|d| d.join("config.toml"));
    ask_trust_on(
        &mut std::io::stdin().lock(),
        &mut std::io::stderr(),
        workspace,
        ignored,
        config.as_deref(),
    )
}

fn ask_trust_on(
    input: &mut impl std::io::BufRead,
    out: &mut impl std::io::Write,
    workspace: &std::path::Path,
    ignored: &[String],
    config: Option<&std::path::Path>,
) -> bool {
    let _ = writeln!(
        out,
        "This workspace's config sets keys that only a trusted directory may set:"
    );
    for key in ignored {
        // Key names come from the repository: no control characters reach the terminal.
        let key: String = key.chars().filter(|c| !c.is_control()).collect();
        let _ = writeln!(out, "  {key}");
    }
    let _ = write!(
        out,
        "Trust {}? Its config could then send your API keys elsewhere and run commands. [y/N] ",
        workspace.display()
    );
    let _ = out.flush();
    let mut answer = String::new();
    if input.read_line(&mut answer).is_err() {
        return false;
    }
    let decision = if answer.trim().eq_ignore_ascii_case("y") {
        crate::trust::Decision::Trust
    } else {
        crate::trust::Decision::Refuse
    };
    if let Some(config) = config {
        if let Err(e) = crate::trust::record(config, workspace, decision) {
            let _ = writeln!(out, "warning: {e}");
        }
    }
    decision == crate::trust::Decision::Trust
}

/// Wires the Worker like `exec` does, with a UI approver and a shared approval mode.
fn build(
    args: &InteractiveArgs,
    resolved: Resolved,
    hooks: Hooks,
    workspace: Arc<Workspace>,
    ui: UiSender,
    store: Option<SessionStore>,
    system_prompt: String,
) -> Result<Setup, (ExitCode, String)> {
    let client =
        setup::client(&resolved).map_err(|e| (crate::exec::exit_code_for(&e), e.to_string()))?;
    let (workspace, sandbox) = setup::shell(&workspace, &resolved, args.run.sandbox)
        .map_err(|e| (ExitCode::Internal, e))?;
    for alert in crate::exec::setup_alerts(&resolved, &sandbox) {
        let _ = ui.send(saki_tui::EngineEvent::Alert {
            level: saki_tui::Level::Warn,
            message: alert.message,
        });
    }
    let tools = saki_tools::builtin_server(workspace.clone())
        .map_err(|e| (ExitCode::Internal, e.to_string()))?;
    let mut config = WorkerConfig::new(resolved.model.clone());
    config.max_output_tokens = args
        .provider
        .max_output_tokens
        .or(resolved.requested_max_output);
    config.thinking = args.provider.thinking.then(ThinkingConfig::default);
    config.max_turns = args.run.max_turns as usize;
    config.tool_call_recovery = resolved.tool_call_recovery;
    config.first_tool_call_required = resolved.first_tool_call_required;
    config.temperature = resolved.temperature;
    let mut worker = Worker::new(client.clone(), Arc::new(tools), config);
    let spent = BackgroundUsage::new();
    worker.set_context_guard(Arc::new(
        setup::compactor(&resolved, client, &hooks, workspace.clone())
            .with_background_usage(spent.clone()),
    ));
    worker.set_system_prompt(Some(system_prompt));
    let pod = Arc::new(PodInterceptor::default());
    worker.add_interceptor(pod.clone());
    let mode = SharedMode::new(args.run.approval);
    let grants = Arc::new(SessionGrants::default());
    worker.add_interceptor(Arc::new(ApprovalPolicy::shared(
        mode.clone(),
        grants.clone(),
        Arc::new(UiApprover(ui.clone())),
        workspace.clone(),
    )));
    if !hooks.is_empty() {
        worker.add_interceptor(Arc::new(HookInterceptor::new(hooks.clone())));
    }
    let forwarder = StreamForwarder(ui.clone());
    worker
        .timeline_mut()
        .on_text_block(forwarder.clone())
        .on_thinking_block(forwarder);
    let slot = RecorderSlot::default();
    let tokens = Arc::new(AtomicU64::new(0));
    let main_usage = bridge::MainUsage::default();
    worker.set_observer(bridge::observer(
        ui.clone(),
        slot.clone(),
        tokens.clone(),
        main_usage.clone(),
        resolved.wire_api,
    ));
    worker.set_durability(Arc::new(bridge::SlotDurability(slot.clone())));
    let suggestions = crate::config::suggestions_on(&resolved, args.no_suggestions);
    if suggestions {
        saki_followup::cleanup_stale(&saki_followup::default_base());
    }
    Ok(Setup {
        worker,
        ui,
        workspace,
        args: args.provider.clone(),
        resolved,
        hooks,
        pod,
        mode,
        grants,
        slot,
        store,
        tokens,
        suggestions,
        sandbox,
        spent,
        main_usage,
    })
}
