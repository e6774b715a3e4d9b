//! `saki mcp list | add | remove`, and the MCP part of `saki debug prompt-size`.
//!
//! `list` connects to every configured server (global config, and a trusted workspace's)
//! the way a session does, waits for each (bounded by its `startup_timeout_sec`) and
//! shows its state and tools. `add` and `remove` edit the global `config.toml`, keeping
//! the rest of the file (comments included) as written.

use crate::config;
use crate::exit::ExitCode;
use saki_llm_client::ToolDefinition;
use saki_llm_worker::SharedTools;
use saki_mcp::{ServerConfig, ServerState, ServerStatus};
use saki_tools::sanitize::sanitize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Subcommand)]
pub enum McpCommand {
    /// List the configured MCP servers: whether each connects (or why not) and its tools.
    List {
        /// One JSON document: {"servers": [...]}.
        #[arg(long)]
        json: bool,
        /// The workspace whose config counts too, when trusted (default: the current
        /// directory).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        cd: Option<PathBuf>,
    },
    /// Add a server to the global config: `saki mcp add NAME -- COMMAND ARGS…` (stdio),
    /// or `saki mcp add NAME --url URL` (streamable HTTP).
    Add(AddArgs),
    /// Remove a server from the global config.
    Remove {
        /// The server's name.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server's name: letters, digits, `_` and `-` (its tools are `mcp__NAME__TOOL`).
    name: String,
    /// A variable set for the server (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// A streamable HTTP server at this URL instead of a command.
    #[arg(long, conflicts_with = "command")]
    url: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn run(command: McpCommand) -> ExitCode {
    match command {
        McpCommand::List { json, cd } => list(json, cd),
        McpCommand::Add(args) => add(args),
        McpCommand::Remove { name } => remove(&name),
    }
}

fn workspace_dir(cd: Option<PathBuf>) -> PathBuf {
    cd.or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into())
}

/// Starts `servers` as a session would, waits for every one to settle, and returns
/// their status (the servers are stopped again).
fn probe(
    servers: BTreeMap<String, ServerConfig>,
    root: &Path,
) -> Result<Vec<ServerStatus>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    Ok(runtime.block_on(async {
        let cap = saki_tools::common::TOOL_OUTPUT_MAX_BYTES;
        let session = saki_engine::mcp::start_servers(servers, root, cap, SharedTools::default());
        session.ready().await;
        let status = session.status();
        session.shutdown().await;
        status
    }))
}

fn list(json: bool, cd: Option<PathBuf>) -> ExitCode {
    let dir = workspace_dir(cd);
    let (servers, ignored) = match crate::mcp_config::configured(&dir) {
        Ok(found) => found,
        Err(e) => {
            // A TOML error quotes the file, which may be the workspace's own.
            eprintln!("error: {}", sanitize(&e.to_string()));
            return ExitCode::Config;
        }
    };
    for key in &ignored {
        // The key holds a server name the (untrusted) workspace file chose.
        eprintln!(
            "warning: ignored {}: this workspace is not trusted (`saki trust` trusts it)",
            sanitize(key)
        );
    }
    let status = match probe(servers, &dir) {
        Ok(status) => status,
        Err(e) => {
            eprintln!("error: {}", sanitize(&e));
            return ExitCode::Internal;
        }
    };
    if json {
        println!("{}", serde_json::json!({ "servers": status }));
        return ExitCode::Success;
    }
    if status.is_empty() {
        println!(
            "No MCP servers are configured. Add one with `saki mcp add NAME -- COMMAND ARGS…`."
        );
        return ExitCode::Success;
    }
    for (i, server) in status.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", sanitize(&saki_engine::mcp::describe(server)));
    }
    ExitCode::Success
}

/// Per connected server: a line with what its tool schemas add to every request, and
/// the tokens; a line for each server that did not connect.
pub fn prompt_size(dir: &Path) -> Result<(Vec<String>, usize), String> {
    let (servers, _) = crate::mcp_config::configured(dir).map_err(|e| e.to_string())?;
    if servers.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let mut lines = Vec::new();
    let mut total = 0;
    for server in probe(servers, dir)? {
        let definitions: Vec<ToolDefinition> = server
            .tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect();
        let schemas = serde_json::to_string(&definitions).unwrap_or_default();
        let tokens = saki_pod::estimate_tokens(&schemas);
        lines.push(match &server.state {
            ServerState::Connected => {
                total += tokens;
                format!(
                    "mcp {}: {tokens} tokens ({} bytes, {} tools)",
                    server.name,
                    schemas.len(),
                    definitions.len()
                )
            }
            ServerState::Failed { reason } => {
                format!("mcp {}: not counted, failed: {reason}", server.name)
            }
            _ => format!("mcp {}: not counted, disabled", server.name),
        });
    }
    Ok((lines, total))
}

fn global_config() -> Result<PathBuf, ExitCode> {
    let env = |k: &str| std::env::var(k).ok();
    match config::global_config_dir(&env) {
        Some(dir) => Ok(dir.join("config.toml")),
        None => {
            eprintln!("error: no config directory: set HOME or XDG_CONFIG_HOME");
            Err(ExitCode::Config)
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn add(args: AddArgs) -> ExitCode {
    if !valid_name(&args.name) {
        eprintln!(
            "error: invalid server name `{}`: use letters, digits, `_` and `-`",
            sanitize(&args.name)
        );
        return ExitCode::Usage;
    }
    let mut server = match (&args.url, args.command.split_first()) {
        (Some(url), _) => ServerConfig::http(url.clone()),
        (None, Some((command, rest))) => ServerConfig::stdio(command.clone(), rest.to_vec()),
        (None, None) => {
            eprintln!("error: give the server's command after `--` (saki mcp add NAME -- COMMAND ARGS…), or --url URL");
            return ExitCode::Usage;
        }
    };
    for pair in &args.env {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            eprintln!("error: --env takes KEY=VALUE, not `{}`", sanitize(pair));
            return ExitCode::Usage;
        };
        server.env.insert(key.to_owned(), value.to_owned());
    }
    if let Err(e) = server.transport() {
        eprintln!("error: {}", sanitize(&e.to_string()));
        return ExitCode::Usage;
    }
    let file = match global_config() {
        Ok(f) => f,
        Err(code) => return code,
    };
    match crate::mcp_config::add(&file, &args.name, &server) {
        Ok(()) => {
            println!(
                "added MCP server `{}` to {} (`saki mcp list` checks that it starts)",
                args.name,
                file.display()
            );
            ExitCode::Success
        }
        Err(e @ crate::mcp_config::EditError::Exists { .. }) => {
            eprintln!("error: {}", sanitize(&e.to_string()));
            ExitCode::Usage
        }
        Err(e) => {
            eprintln!("error: {}", sanitize(&e.to_string()));
            ExitCode::Config
        }
    }
}

fn remove(name: &str) -> ExitCode {
    let file = match global_config() {
        Ok(f) => f,
        Err(code) => return code,
    };
    match crate::mcp_config::remove(&file, name) {
        Ok(()) => {
            println!(
                "removed MCP server `{}` from {}",
                sanitize(name),
                file.display()
            );
            ExitCode::Success
        }
        Err(e @ crate::mcp_config::EditError::Missing { .. }) => {
            eprintln!("error: {}", sanitize(&e.to_string()));
            ExitCode::Usage
        }
        Err(e) => {
            eprintln!("error: {}", sanitize(&e.to_string()));
            ExitCode::Config
        }
    }
}
