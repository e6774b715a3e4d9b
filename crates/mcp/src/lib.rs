//! saki-mcp: an MCP client on the official Rust SDK (`rmcp`). Servers from
//! `[mcp_servers.NAME]` are reached over stdio or streamable HTTP, started in parallel
//! without blocking the session, and each of their tools becomes a saki tool named
//! `mcp__<server>__<tool>`.

pub mod config;
mod connect;
pub mod convert;
mod http;
pub mod listing;
pub mod manager;
pub mod names;
mod stderr;
pub mod tool;

pub use config::{ApprovalSetting, ConfigError, ServerConfig, Transport};
pub use connect::ConnectError;
pub use manager::{
    Decorate, McpEvent, McpManager, ServerState, ServerStatus, StartOptions, ToolSummary,
};
pub use names::{exposed_name, sanitize, NameMap};
pub use tool::{McpTool, ToolInfo};
