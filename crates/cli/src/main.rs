//! The `saki` command.

mod acp_cmd;
mod args;
mod compact;
mod config;
mod delegation_output;
mod diagnostics;
mod exec;
mod exec_front;
mod exit;
mod export;
mod interactive;
mod interactive_extras;
mod last_message;
mod mcp_cmd;
mod mcp_config;
mod open;
mod output;
mod output_schema;
mod panics;
mod pricing;
mod sandbox_exec;
mod session;
mod setup;
mod telemetry;
mod trust;
mod undo_cmd;
mod vision;

use clap::{Parser, Subcommand};
use exit::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "saki",
    version,
    about = "A terminal coding agent that reads ahead",
    long_about = "A terminal coding agent that reads ahead.\n\nWithout a subcommand, saki opens the interactive UI in the current directory.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    interactive: interactive::InteractiveArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one prompt non-interactively and stream the answer.
    Exec(exec::ExecArgs),
    /// Compact a saved session's context now (prune old tool output, then summarize).
    Compact(compact::CompactArgs),
    /// List saved sessions, newest first.
    Sessions {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Trust a directory: its own .saki/config.toml may then set providers' base_url,
    /// env_key and headers, hooks, the sandbox, the shell environment, MCP servers,
    /// web_fetch and undo, and its slash commands may pick their model and approval mode.
    Trust {
        /// The directory (default: the current one).
        dir: Option<std::path::PathBuf>,
    },
    /// MCP servers: list them (and whether they start), add or remove one.
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCommand),
    /// Take back the file changes of a session's last turns (no git needed): `--list`
    /// shows the checkpoints, `--redo` puts back what the last undo took back.
    Undo(undo_cmd::UndoArgs),
    /// Serve the Agent Client Protocol on stdin and stdout, for editors (Zed, JetBrains
    /// IDEs, Neovim, Emacs): each session the editor opens is a saki session in the
    /// folder it names.
    Acp(acp_cmd::AcpArgs),
    /// Export a saved session as a readable transcript (Markdown or one self-contained
    /// HTML file) or as JSON, API keys redacted.
    Export(export::ExportArgs),
    /// Tools for looking inside saki.
    #[command(subcommand)]
    Debug(DebugCommand),
}

#[derive(Debug, Subcommand)]
enum DebugCommand {
    /// Classify a shell command: prints read-only, write or unknown, a tab, and whether it
    /// stays in scope in the workspace (`in-scope`, or `out-of-scope: REASONS`); only
    /// read-only commands in scope run unasked. Without an argument, reads one command per
    /// line from stdin and prints one line per command.
    ShellSafety {
        command: Option<String>,
        /// The workspace to judge the scope in (default: the current directory).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        cd: Option<std::path::PathBuf>,
    },
    /// Estimate the base prompt (system prompt + tool schemas, MCP servers' each) in tokens
    /// for a workspace.
    PromptSize {
        /// The workspace (default: the current directory).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        cd: Option<std::path::PathBuf>,
    },
}

fn prompt_size(cd: Option<std::path::PathBuf>) -> ExitCode {
    let dir = cd
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    let workspace = match saki_tools::Workspace::new(&dir) {
        Ok(w) => std::sync::Arc::new(w),
        Err(e) => {
            eprintln!("error: {}: {e}", dir.display());
            return ExitCode::Usage;
        }
    };
    // What a session with the full tool set sends: the skills are listed too.
    let mut system = session::build_system_prompt(workspace.root());
    let global_dir = config::global_config_dir(&|k: &str| std::env::var(k).ok());
    let (skills, _) = saki_pod::skills::discover(workspace.root(), global_dir.as_deref());
    system.push_str(&saki_pod::skills::prompt_section(&skills));
    let tools = match saki_tools::builtin_server(workspace) {
        Ok(t) => t.definitions(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::Internal;
        }
    };
    let schemas = serde_json::to_string(&tools).unwrap_or_default();
    let (s, t) = (
        saki_pod::estimate_tokens(&system),
        saki_pod::estimate_tokens(&schemas),
    );
    println!("system prompt: {s} tokens ({} bytes)", system.len());
    println!(
        "tool schemas:  {t} tokens ({} bytes, {} tools)",
        schemas.len(),
        tools.len()
    );
    let (mcp, m) = match mcp_cmd::prompt_size(&dir) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("error: {}", saki_tools::sanitize::sanitize(&e));
            return ExitCode::Config;
        }
    };
    // A line may quote a server's stderr.
    for line in mcp {
        println!("{}", saki_tools::sanitize::sanitize(&line));
    }
    println!("base prompt:   {} tokens (target: under 2000)", s + t + m);
    ExitCode::Success
}

fn shell_safety(command: Option<String>, cd: Option<std::path::PathBuf>) -> ExitCode {
    use saki_shell_safety::{check_scope, classify};
    use std::io::{BufRead, Write};
    let dir = cd
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    let workspace = match saki_tools::Workspace::new(&dir) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {}: {e}", dir.display());
            return ExitCode::Usage;
        }
    };
    let unasked = unasked_sandbox(&workspace);
    let verdict = |command: &str| {
        let scope = check_scope(command, &workspace);
        let safety = classify(command);
        let runs_unasked = scope.in_scope() && safety == saki_shell_safety::Safety::ReadOnly;
        let scope = if scope.in_scope() {
            "in-scope".to_owned()
        } else {
            format!("out-of-scope: {}", scope.problems().join("; "))
        };
        let sandbox = if runs_unasked {
            unasked.as_str()
        } else {
            "sandbox: asks first"
        };
        // One line per command, whatever the reasons quote.
        format!(
            "{}\t{}\t{sandbox}",
            safety.as_str(),
            scope.replace('\n', " ")
        )
    };
    match command {
        Some(c) => println!("{}", verdict(&c)),
        None => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else {
                    eprintln!("error: stdin is not valid UTF-8 text");
                    return ExitCode::Usage;
                };
                if writeln!(out, "{}", verdict(&line)).is_err() {
                    break;
                }
            }
        }
    }
    ExitCode::Success
}

/// What a command that runs unasked gets here, as `saki debug shell-safety` says it: the
/// read-only sandbox, and whether this kernel enforces it.
fn unasked_sandbox(workspace: &saki_tools::Workspace) -> String {
    use saki_sandbox::{SandboxMode, SandboxPolicy};
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let tmp = std::env::temp_dir();
    let policy = SandboxPolicy::new(
        SandboxMode::WorkspaceWrite,
        workspace.roots(),
        &tmp,
        home.as_deref(),
        &[],
        false,
    );
    let probed = policy
        .for_unasked(
            workspace.roots(),
            &tmp,
            &|name| std::env::var_os(name),
            home.as_deref(),
        )
        .ok_or_else(|| "the sandbox is off".to_owned())
        .and_then(|unasked| {
            let saki = std::env::current_exe().map_err(|e| e.to_string())?;
            saki_sandbox::probe(&saki_sandbox::helper_program(&saki), &unasked)
        });
    match probed {
        Ok(status) if status.read_only_unasked => "sandbox: read-only-unasked".to_owned(),
        Ok(status) => format!(
            "sandbox: read-only-unasked, not enforced ({})",
            status.detail
        ),
        Err(e) => format!("sandbox: read-only-unasked, not enforced ({e})"),
    }
}

fn trust(dir: Option<std::path::PathBuf>) -> ExitCode {
    let dir = dir
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    let env = |k: &str| std::env::var(k).ok();
    let Some(config_dir) = config::global_config_dir(&env) else {
        eprintln!("error: no config directory: set HOME or XDG_CONFIG_HOME");
        return ExitCode::Config;
    };
    let file = config_dir.join("config.toml");
    match trust::record(&file, &dir, trust::Decision::Trust) {
        Ok(added) => {
            let shown = dir.canonicalize().unwrap_or(dir);
            let verb = if added { "trusted" } else { "already trusted" };
            println!(
                "{verb}: {} (recorded in {})",
                shown.display(),
                file.display()
            );
            ExitCode::Success
        }
        Err(e @ trust::TrustError::NotADirectory(_)) => {
            eprintln!("error: {e}");
            ExitCode::Usage
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::Config
        }
    }
}

/// `saki sandbox-exec ...`: the sandbox helper every shell command runs through. Handled
/// before anything else, so a command starts as fast as a process can.
fn main() -> std::process::ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw.get(1).and_then(|a| a.to_str()) == Some(saki_sandbox::HELPER_SUBCOMMAND) {
        return sandbox_exec::run(&raw[2..]);
    }
    // Parse before anything else so `--version` and `--help` stay instant.
    let cli = Cli::parse_from(raw);
    protect_process();
    let interactive = cli.command.is_none();
    diagnostics::init(interactive);
    let Some(command) = cli.command else {
        return finish(interactive::run(cli.interactive));
    };
    let code = match command {
        Command::Exec(args) => block_on(exec::run(args)),
        Command::Compact(args) => block_on(compact::run(args)),
        Command::Sessions { json } => session::list(json),
        Command::Trust { dir } => trust(dir),
        Command::Mcp(command) => mcp_cmd::run(command),
        Command::Undo(args) => undo_cmd::run(args),
        Command::Acp(args) => acp_cmd::run(args),
        Command::Export(args) => export::run(args),
        Command::Debug(DebugCommand::ShellSafety { command, cd }) => shell_safety(command, cd),
        Command::Debug(DebugCommand::PromptSize { cd }) => prompt_size(cd),
    };
    finish(code)
}

/// Processes that outlive the commands that started them come back to saki (it is a
/// child subreaper) and are killed at exit. Other processes of the same user, sandboxed
/// commands among them, cannot read saki's memory or `/proc/PID/environ`, where the API
/// keys are (it is not dumpable).
fn protect_process() {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::prctl;
        if let Err(e) = prctl::set_child_subreaper(true) {
            tracing::debug!(error = %e, "cannot become a child subreaper");
        }
        if let Err(e) = prctl::set_dumpable(false) {
            tracing::debug!(error = %e, "cannot make the process non-dumpable");
        }
    }
}

/// The exit code, unless SIGTERM or SIGHUP ended the run; leftover processes are killed.
fn finish(code: ExitCode) -> std::process::ExitCode {
    saki_sandbox::kill_descendants();
    setup::terminated_by().unwrap_or(code).into()
}

fn block_on(task: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(task),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::Internal
        }
    }
}
