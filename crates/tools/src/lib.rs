//! saki-tools: the built-in tools, all scoped to the workspace, and the approval policy.
//! The shell classifier is `saki-shell-safety`; the OS sandbox is `saki-sandbox`.

pub mod approval;
pub mod atomic;
pub mod blocking;
pub mod capped;
pub mod code_intel;
pub mod common;
mod doubled;
pub mod echo;
pub mod edit_match;
mod files;
pub mod fs;
pub mod grants;
pub mod grep;
pub mod guards;
pub mod image;
pub mod intent;
mod lean;
pub mod listing;
pub mod mcp_approval;
pub mod mentions;
pub mod plan;
pub mod project_commands;
pub mod rewrite;
pub mod sanitize;
pub mod shell;
pub mod shell_background;
pub mod shell_runtime;
pub mod state;
pub mod suggest;
#[cfg(test)]
mod test_support;
pub mod txn;
pub mod unlooked;
pub mod unsaved;
pub mod web_fetch;
pub mod web_guard;
pub mod workspace;

pub use approval::{
    assess, sensitive_path, Approval, ApprovalMode, ApprovalPolicy, ApprovalQuestion, Approver,
    Assessment, CallClass, DenyWithoutAsking, SharedMode,
};
pub use fs::{DiskFs, Fs};
pub use grants::SessionGrants;
pub use mcp_approval::{McpLookup, McpToolFacts};
pub use shell::{ShellRuntime, ShellRuntimeError};
pub use workspace::{Roots, ScopeError, Workspace};

use saki_llm_worker::{Tool, ToolServer, ToolServerError};
use std::sync::Arc;

/// The order the built-in tools are offered in: reading and searching first, then
/// running, then writing. Small models pick early tools more often (`edit` first made
/// them edit when asked to read); the order is fixed, so the request prefix stays stable.
pub const TOOL_ORDER: &[&str] = &[
    "read_file",
    "ls",
    "glob",
    "grep",
    "lsp",
    "shell",
    "shell_output",
    "shell_kill",
    "edit",
    "write_file",
    "delete_file",
    "web_fetch",
    "update_plan",
];

/// Built-in tools a lean tool set leaves out: the small local models these sets are for
/// pick worse from a longer list (one stopped calling `read_file` when these two joined).
pub const EXTRA_TOOLS: &[&str] = &[
    "update_plan",
    "web_fetch",
    "shell_output",
    "shell_kill",
    code_intel::TOOL_NAME,
];

/// A built-in tool's place in [`TOOL_ORDER`] (for [`saki_llm_worker::Tool::rank`]).
pub fn rank_of(name: &str) -> u32 {
    TOOL_ORDER
        .iter()
        .position(|n| *n == name)
        .map_or(u32::MAX, |i| i as u32)
}

/// The built-in tools, bound to one workspace.
pub fn builtin_tools(workspace: Arc<Workspace>) -> Vec<Arc<dyn Tool>> {
    let cap = workspace.output_cap();
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(files::ReadFile(workspace.clone())),
        Arc::new(files::WriteFile(workspace.clone())),
        Arc::new(files::Edit(workspace.clone())),
        Arc::new(files::DeleteFile(workspace.clone())),
        Arc::new(listing::Ls(workspace.clone())),
        Arc::new(listing::Glob(workspace.clone())),
        Arc::new(grep::Grep(workspace.clone())),
        Arc::new(shell::Shell(workspace.clone())),
        Arc::new(shell_background::ShellOutput(workspace.clone())),
        Arc::new(shell_background::ShellKill(workspace.clone())),
        Arc::new(plan::UpdatePlan),
        Arc::new(web_fetch::WebFetch::new(workspace.web().clone())),
    ];
    let mut tools: Vec<Arc<dyn Tool>> = tools
        .into_iter()
        .map(|tool| capped::wrap(tool, cap))
        .collect();
    if let Some(code_intel) = workspace.code_intel() {
        tools = with_code_intel(tools, code_intel.as_ref(), None, cap);
    }
    tools
}

/// `tools` with the `lsp` tool added and `edit` / `write_file` reporting diagnostics,
/// files read through `view` (a speculation's overlay; `None`: the disk).
pub fn with_code_intel(
    tools: Vec<Arc<dyn Tool>>,
    code_intel: &dyn code_intel::CodeIntel,
    view: Option<Arc<dyn code_intel::FileView>>,
    cap: usize,
) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = tools
        .into_iter()
        .map(|tool| match tool.name() {
            "edit" | "write_file" => code_intel.diagnosing(tool, view.clone()),
            _ => tool,
        })
        .collect();
    tools.push(capped::wrap(code_intel.tool(view), cap));
    tools
}

/// A tool server holding the built-in tools.
pub fn builtin_server(workspace: Arc<Workspace>) -> Result<ToolServer, ToolServerError> {
    tool_server(workspace, false)
}

/// A tool server holding the built-in tools; `lean`: without [`EXTRA_TOOLS`], and `shell`
/// and `read_file` narrowed (see [`lean`]).
pub fn tool_server(workspace: Arc<Workspace>, lean: bool) -> Result<ToolServer, ToolServerError> {
    let mut server = ToolServer::new();
    for tool in builtin_tools(workspace) {
        if lean && EXTRA_TOOLS.contains(&tool.name()) {
            continue;
        }
        let tool = if lean { lean::narrowed(tool) } else { tool };
        server.register(tool)?;
    }
    Ok(server)
}
