//! The `saki` command.

mod config;
mod exec;
mod exit;
mod output;

use clap::{Parser, Subcommand};
use exit::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "saki",
    version,
    about = "A terminal coding agent that reads ahead",
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one prompt non-interactively and stream the answer.
    Exec(exec::ExecArgs),
}

fn main() -> std::process::ExitCode {
    // Parse before anything else so `--version` and `--help` stay instant.
    let cli = Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::Internal.into();
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            Command::Exec(args) => exec::run(args).await,
        }
    });
    code.into()
}

/// Diagnostics go to stderr; `SAKI_LOG` takes a tracing filter (default: warnings).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SAKI_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .try_init();
}
