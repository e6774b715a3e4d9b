//! saki-acp: saki as an Agent Client Protocol agent. An editor (Zed, a JetBrains IDE,
//! Neovim, Emacs) starts `saki acp` and speaks JSON-RPC on its stdin and stdout; each ACP
//! session is one engine session, driven by the same [`Action`]s and rendered from the
//! same [`EngineEvent`]s as `exec` and the terminal UI. What starts a session (config,
//! the provider, MCP servers, the sandbox) is the front end's [`SessionFactory`]; this
//! crate only translates. See README.md.

mod agent;
mod commands;
mod content;
mod editor_fs;
mod flags;
mod question;
mod session;
mod updates;

pub use agent::{serve, serve_stdio};
pub use content::{prompt_of, PromptParts};
pub use updates::{tool_kind, tool_title};

use async_trait::async_trait;
use saki_engine::fs::Fs;
use saki_engine::{ApprovalMode, Engine, EngineEvent};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

/// The ACP protocol version this agent speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// An MCP server the client asks a session to use, beside the configured ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerSpec {
    Stdio {
        name: String,
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// What a client asks for when it opens a session.
#[derive(Debug, Clone)]
pub struct SessionRequest {
    /// The session's workspace (absolute, as ACP requires).
    pub cwd: PathBuf,
    pub mcp_servers: Vec<McpServerSpec>,
    /// The session's id: a fresh one ([`saki_engine::new_session_id`]) the engine is to
    /// create its log under, or, with `resume`, the saved session to continue.
    pub session_id: String,
    pub resume: bool,
    /// Where its file tools read and write, when not the disk (the editor's buffers): the
    /// factory gives it to the session's workspace.
    pub fs: Option<Arc<dyn Fs>>,
}

/// A session the factory started: its engine (not running yet) and the events it sends.
pub struct StartedSession {
    pub engine: Engine,
    pub events: UnboundedReceiver<EngineEvent>,
    /// The models `session/set_config_option` offers (the current one first).
    pub models: Vec<String>,
    /// The approval mode the session starts in.
    pub mode: ApprovalMode,
    /// Ends what the session started beside the engine (MCP servers, a local model
    /// server) once the session closes.
    pub closer: Box<dyn SessionCloser>,
}

/// Ends what a session started beside its engine.
#[async_trait]
pub trait SessionCloser: Send {
    async fn close(self: Box<Self>);
}

/// Why a session could not start, in words for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StartError {
    pub message: String,
    /// No credentials: the message names the variable to set.
    pub auth: bool,
}

/// One saved session, for `session/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSession {
    pub id: String,
    pub cwd: PathBuf,
    pub title: String,
    /// RFC 3339.
    pub updated_at: Option<String>,
}

/// What starts sessions: config, the provider, the sandbox and MCP servers, as `exec`
/// and the terminal UI start theirs.
#[async_trait]
pub trait SessionFactory: Send + Sync + 'static {
    async fn start(&self, request: SessionRequest) -> Result<StartedSession, StartError>;
    /// Saved sessions, newest first; `cwd` limits them to one workspace.
    fn list(&self, cwd: Option<&std::path::Path>) -> Vec<ListedSession>;
}
