//! `saki` with no subcommand: the interactive terminal UI (saki-tui) as a front end of
//! the engine, which owns the session exactly as it does for `exec`.

use crate::args::{ProviderArgs, RunArgs};
use crate::exit::ExitCode;
use crate::setup;
use saki_tools::sanitize::sanitize;
use saki_tui::{App, Theme};

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
            eprintln!("error: {}", sanitize(&message));
            return ExitCode::Usage;
        }
    };
    let resume = match args.run.resume() {
        Ok(resume) => resume,
        Err(message) => {
            eprintln!("error: {}", sanitize(&message));
            return ExitCode::Usage;
        }
    };
    let (action_tx, action_rx) = tokio::sync::mpsc::unbounded_channel();
    let no_suggestions = args.no_suggestions;
    // Everything that can fail does so before the UI takes the terminal (a local server
    // may need seconds to start; a session to resume may not exist).
    let opened = crate::open::open(crate::open::Open {
        provider: &args.provider,
        run: &args.run,
        workspace: (*workspace).clone(),
        resume,
        approver: None,
        suggestions: &|resolved| crate::config::suggestions_on(resolved, no_suggestions),
        ask_trust: Some(&ask_trust),
        note: &|n| eprintln!("note: {}", sanitize(n)),
        extra_mcp: Vec::new(),
        session_id: None,
        shared_local: None,
    })
    .await;
    let crate::open::Opened {
        engine,
        events: ui_rx,
        events_tx: ui_tx,
        resolved,
        hooks,
        mut mcp,
        local: _local_server,
        suggestions,
        telemetry,
        alerts,
        ..
    } = match opened {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("error: {}", sanitize(&e.message));
            return e.code;
        }
    };
    for alert in alerts {
        let _ = ui_tx.send(alert.into());
    }
    mcp.forward_alerts(&ui_tx);
    let extras =
        crate::interactive_extras::Parts::new(&resolved, &hooks, workspace.root().to_path_buf());
    let app = App::new(
        engine.status(),
        Theme::from_env(),
        workspace.root().to_path_buf(),
        suggestions,
    );
    let mut app = app;
    extras.install(&mut app, engine.background_usage());
    app.set_custom_commands(
        engine
            .commands()
            .iter()
            .map(|c| (c.name.clone(), c.description.clone().unwrap_or_default()))
            .collect(),
    );
    app.transcript.info(format!(
        "saki in {} · /help for commands · Ctrl+D quits",
        workspace.root().display()
    ));
    // The engine holds the only senders now: when it ends (or panics), the UI sees its
    // channel close.
    drop(ui_tx);
    let engine_task = tokio::spawn(engine.run(action_rx));
    // SIGTERM / SIGHUP: quit like /quit (the turn is cancelled, its commands killed, the
    // session kept), and exit with the signal's code.
    let quit = action_tx.clone();
    setup::on_termination(move || {
        let _ = quit.send(saki_tui::Action::Quit);
    });
    let result = saki_tui::terminal::run(app, ui_rx, action_tx).await;
    crate::telemetry::finish(telemetry).await;
    // The servers' processes end with the session.
    mcp.shutdown().await;
    // The UI is gone: the engine sees its channel close and stops what runs. An engine
    // that panicked closed the UI's channel first; say so, and fail.
    match engine_task.await {
        Err(e) if e.is_panic() => {
            let message = crate::panics::message(e.into_panic());
            eprintln!("error: {}", crate::panics::failure(&message));
            return ExitCode::Internal;
        }
        // One line on what reading ahead did and cost, once the terminal is back.
        Ok(stats) => {
            if suggestions || !stats.background.is_empty() {
                eprintln!("{}", stats.summary_line());
            }
            if let Some(line) = crate::pricing::session_line(&stats) {
                eprintln!("{line}");
            }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::config::FileConfig;

    #[test]
    fn the_trust_question_records_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let config = dir.path().join("config.toml");
        let ignored = ["ws/.saki/config.toml: providers.openai.base_url\u{1b}[2J".to_owned()];
        let mut shown = Vec::new();
        assert!(!super::ask_trust_on(
            &mut "n\n".as_bytes(),
            &mut shown,
            &ws,
            &ignored,
            Some(&config)
        ));
        let shown = String::from_utf8(shown).unwrap();
        assert!(shown.contains("providers.openai.base_url") && !shown.contains('\u{1b}'));
        let file: FileConfig = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        assert_eq!(file.untrusted_directories.len(), 1);
        assert!(super::ask_trust_on(
            &mut "y\n".as_bytes(),
            &mut Vec::new(),
            &ws,
            &ignored,
            Some(&config)
        ));
        let file: FileConfig = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        assert!(crate::trust::is_trusted(&file.trusted_directories, &ws));
        assert!(file.untrusted_directories.is_empty());
    }
}
