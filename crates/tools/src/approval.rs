//! Approval modes and the policy interceptor that enforces them.
//!
//! | mode | read-only tools | edits | sensitive edits | shell, proven read-only and in scope | other shell |
//! | --- | --- | --- | --- | --- | --- |
//! | `plan` | allow | deny | deny | allow | deny |
//! | `default` | allow | ask | ask | allow | ask |
//! | `auto-edit` | allow | allow | ask | allow | ask |
//! | `yolo` | allow | allow | allow | allow | allow |
//!
//! Tools from MCP servers (`mcp__…`, see [`crate::mcp_approval`]) run unasked when their
//! trusted server annotates them read-only, or in `default` and `auto-edit` when the server
//! has `approval = "auto"`; otherwise they are asked about, denied in `plan`, and run in
//! `yolo`.
//!
//! `web_fetch` is asked about in `plan` and `default` ("allow for this session" remembers
//! the domain), runs unasked in `auto-edit` only for domains in `web_fetch.allowed_domains`,
//! and always in `yolo`.
//!
//! "In scope" ([`check_scope`]): every path the command names stays inside the workspace
//! and it reads no environment. "Sensitive" ([`sensitive_path`]): files that make tools
//! run code (`.git/`, `.saki/`, ...). "Ask" goes to an [`Approver`]; `exec` has no one to
//! ask and denies, telling the model. Session grants never cover sensitive edits or
//! shell commands out of scope.

use crate::grants::SessionGrants;
use crate::mcp_approval::{assess_mcp, is_mcp_tool, McpLookup};
use crate::workspace::Workspace;
use saki_llm_worker::{Interceptor, ToolAction, ToolCallInfo};
use saki_shell_safety::{check_scope, classify, Safety};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    Plan,
    Default,
    AutoEdit,
    Yolo,
}

impl ApprovalMode {
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::Plan,
        ApprovalMode::Default,
        ApprovalMode::AutoEdit,
        ApprovalMode::Yolo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Yolo => "yolo",
        }
    }
}

impl std::str::FromStr for ApprovalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ApprovalMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!("unknown approval mode `{s}` (expected plan, default, auto-edit or yolo)")
            })
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a call is, for approval purposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallClass {
    /// Reads only, inside the workspace: read tools, and shell commands proven read-only
    /// and in scope.
    ReadOnly,
    /// Writes an ordinary file in the workspace.
    Edit,
    /// Writes a file that makes tools run code or changes saki itself (`.git/`, `.saki/`,
    /// ...; see [`sensitive_path`]): asked about in every mode but `yolo`.
    Sensitive,
    /// A shell command not proven read-only and in scope, or an unknown tool.
    Exec,
    /// A tool from an MCP server not known to be read-only; `auto` when its server has
    /// `approval = "auto"`.
    Mcp { auto: bool },
    /// `web_fetch`; `listed` when its domain is in `web_fetch.allowed_domains`.
    Web { listed: bool },
}

/// A call's class and, when it is not read-only, why (for the person and the model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    pub class: CallClass,
    pub reason: Option<String>,
    /// Whether an "allow for this session" grant may cover it: not for sensitive files,
    /// and not for shell commands that reach outside the workspace or read the environment.
    pub grantable: bool,
}

impl Assessment {
    pub(crate) fn new(class: CallClass, reason: Option<String>, grantable: bool) -> Self {
        Self {
            class,
            reason,
            grantable,
        }
    }
}

/// Files that make a tool, git or saki run code or change their rules, by path relative
/// to a workspace root (lower case); a component match anywhere for directories.
const SENSITIVE_DIRS: &[&str] = &[".git", ".saki", ".vscode", ".devcontainer", ".husky"];
const SENSITIVE_FILES: &[&str] = &[
    ".gitattributes",
    ".gitmodules",
    ".envrc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
];

/// Why writing `path` needs the person even in `auto-edit`, or `None`. The path is
/// resolved like the tools resolve it (symlinks included), so a link cannot hide it.
pub fn sensitive_path(workspace: &Workspace, path: &str) -> Option<String> {
    let resolved = workspace.resolve_for_write(path).ok()?;
    let relative = workspace
        .roots()
        .iter()
        .find_map(|root| resolved.strip_prefix(root).ok())?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_ascii_lowercase())
        .collect();
    let name = parts.last()?;
    let dir = parts
        .iter()
        .take(parts.len().saturating_sub(1))
        .find(|p| SENSITIVE_DIRS.contains(&p.as_str()))
        .or_else(|| SENSITIVE_DIRS.contains(&name.as_str()).then_some(name));
    let cargo_config = parts.len() >= 2
        && parts[parts.len() - 2] == ".cargo"
        && (name == "config" || name == "config.toml");
    if let Some(dir) = dir {
        Some(format!(
            "`{path}` is inside `{dir}/`, which can make tools run code"
        ))
    } else if SENSITIVE_FILES.contains(&name.as_str()) || cargo_config {
        Some(format!("`{path}` can make tools run code"))
    } else {
        None
    }
}

/// Classifies a call against the workspace it would run in.
pub fn assess(call: &ToolCallInfo, workspace: &Workspace) -> Assessment {
    match call.name.as_str() {
        // `update_plan` only shows a checklist; `lsp` only asks language servers.
        "read_file" | "ls" | "glob" | "grep" | "update_plan" | "lsp" => {
            Assessment::new(CallClass::ReadOnly, None, true)
        }
        "web_fetch" => match crate::web_fetch::target_host(&call.input) {
            Some(host) => Assessment::new(
                CallClass::Web {
                    listed: workspace.web().allows(&host),
                },
                Some(format!("fetches from {host}")),
                true,
            ),
            None => Assessment::new(CallClass::Web { listed: false }, None, false),
        },
        // Asking, loading a skill's text and presenting a plan change nothing; a subagent's
        // own calls pass its own policy (`explore`: plan mode's rule; others: the session's).
        "skill" | "ask_user" | "exit_plan_mode" | "agent" => {
            Assessment::new(CallClass::ReadOnly, None, true)
        }
        // A write to an instruction file (the project's AGENTS.md, or the global one).
        "remember" => {
            let global = call.input.get("scope").and_then(|s| s.as_str()) == Some("global");
            let target = if global {
                "the global AGENTS.md"
            } else {
                "the project's AGENTS.md"
            };
            Assessment::new(CallClass::Edit, Some(format!("appends to {target}")), true)
        }
        "write_file" | "edit" | "delete_file" => {
            let path = call
                .input
                .get("path")
                .and_then(|p| p.as_str())
                .unwrap_or("");
            match sensitive_path(workspace, path) {
                Some(reason) => Assessment::new(CallClass::Sensitive, Some(reason), false),
                None => Assessment::new(CallClass::Edit, None, true),
            }
        }
        "shell" => {
            let Some(command) = call.input.get("command").and_then(|c| c.as_str()) else {
                return Assessment::new(CallClass::Exec, None, false);
            };
            let scope = check_scope(command, workspace);
            let out_of_scope = (!scope.in_scope()).then(|| scope.problems().join("; "));
            match (classify(command), out_of_scope) {
                (Safety::ReadOnly, None) => Assessment::new(CallClass::ReadOnly, None, true),
                (Safety::ReadOnly, Some(why)) => Assessment::new(CallClass::Exec, Some(why), false),
                (_, None) => Assessment::new(CallClass::Exec, None, true),
                (_, Some(why)) => Assessment::new(CallClass::Exec, Some(why), false),
            }
        }
        // A background command's own output, or stopping it: the command was approved.
        "shell_output" | "shell_kill" => Assessment::new(CallClass::ReadOnly, None, true),
        // What its server said about the tool is the policy's to look up (`with_mcp`);
        // without that, it is a tool of a server nobody vouched for.
        name if is_mcp_tool(name) => assess_mcp(None),
        _ => Assessment::new(CallClass::Exec, None, true),
    }
}

pub enum Verdict {
    Allow,
    Deny(String),
    Ask,
}

pub fn decide(mode: ApprovalMode, class: CallClass) -> Verdict {
    match (mode, class) {
        (_, CallClass::ReadOnly)
        | (ApprovalMode::Yolo, _)
        | (ApprovalMode::AutoEdit, CallClass::Edit)
        | (ApprovalMode::AutoEdit, CallClass::Web { listed: true }) => Verdict::Allow,
        // Reading the web is research, which plan mode is for; it is asked about.
        (_, CallClass::Web { .. }) => Verdict::Ask,
        (ApprovalMode::Plan, CallClass::Mcp { .. }) => Verdict::Deny(
            "plan mode allows only MCP tools their server annotates read-only (readOnlyHint); \
             describe the call instead of making it"
                .into(),
        ),
        (_, CallClass::Mcp { auto: true }) => Verdict::Allow,
        (ApprovalMode::Plan, _) => Verdict::Deny(
            "plan mode allows read-only tools inside the workspace only; describe the change instead of making it"
                .into(),
        ),
        _ => Verdict::Ask,
    }
}

/// The person's answer to an approval prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call.
    Once,
    /// Run it, and the calls its grant covers for the rest of the session
    /// (see [`crate::grants`]).
    Session,
    /// Do not run it; the reason is sent to the model as the call's result.
    Deny(String),
}

/// What an approval prompt shows.
#[derive(Debug, Clone)]
pub struct ApprovalQuestion<'a> {
    pub call: &'a ToolCallInfo,
    pub mode: ApprovalMode,
    pub assessment: &'a Assessment,
}

/// Someone who can approve a call (the TUI asks the person).
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn approve(&self, question: ApprovalQuestion<'_>) -> Approval;
}

/// For non-interactive runs: nobody to ask, so the call is denied with a way forward.
pub struct DenyWithoutAsking;

#[async_trait::async_trait]
impl Approver for DenyWithoutAsking {
    async fn approve(&self, question: ApprovalQuestion<'_>) -> Approval {
        let hint = match question.assessment.class {
            CallClass::Edit => "--approval auto-edit",
            CallClass::Mcp { .. } => {
                "--approval yolo, or set approval = \"auto\" under [mcp_servers.NAME]"
            }
            CallClass::Web { .. } => {
                "--approval yolo, or list the domain in web_fetch.allowed_domains and use --approval auto-edit"
            }
            _ => "--approval yolo",
        };
        let why = question
            .assessment
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        Approval::Deny(format!(
            "`{}` needs approval in `{}` mode{why} and this run cannot ask; the person can rerun with {hint}",
            question.call.name, question.mode
        ))
    }
}

/// An approval mode that can change while a session runs (`/approval`, Shift+Tab); every
/// clone sees the change at the next tool call.
#[derive(Debug, Clone)]
pub struct SharedMode(Arc<AtomicU8>);

impl SharedMode {
    pub fn new(mode: ApprovalMode) -> Self {
        Self(Arc::new(AtomicU8::new(Self::index(mode))))
    }

    pub fn get(&self) -> ApprovalMode {
        let n = self.0.load(Ordering::Relaxed) as usize;
        ApprovalMode::ALL[n.min(ApprovalMode::ALL.len() - 1)]
    }

    pub fn set(&self, mode: ApprovalMode) {
        self.0.store(Self::index(mode), Ordering::Relaxed);
    }

    fn index(mode: ApprovalMode) -> u8 {
        ApprovalMode::ALL
            .iter()
            .position(|m| *m == mode)
            .unwrap_or(1) as u8
    }
}

impl ApprovalMode {
    /// The next mode in the cycle plan → default → auto-edit → yolo → plan.
    pub fn next(self) -> ApprovalMode {
        let i = ApprovalMode::ALL
            .iter()
            .position(|m| *m == self)
            .unwrap_or(0);
        ApprovalMode::ALL[(i + 1) % ApprovalMode::ALL.len()]
    }
}

pub struct ApprovalPolicy {
    mode: SharedMode,
    grants: Arc<SessionGrants>,
    approver: Arc<dyn Approver>,
    workspace: Arc<Workspace>,
    mcp: Option<Arc<dyn McpLookup>>,
}

impl ApprovalPolicy {
    /// A policy with a fixed mode and no grants (non-interactive runs).
    pub fn new(mode: ApprovalMode, approver: Arc<dyn Approver>, workspace: Arc<Workspace>) -> Self {
        Self::shared(SharedMode::new(mode), Arc::default(), approver, workspace)
    }

    /// A policy whose mode and grants the caller keeps handles to.
    pub fn shared(
        mode: SharedMode,
        grants: Arc<SessionGrants>,
        approver: Arc<dyn Approver>,
        workspace: Arc<Workspace>,
    ) -> Self {
        Self {
            mode,
            grants,
            approver,
            workspace,
            mcp: None,
        }
    }

    /// Where the policy learns what the session's MCP tools are (see
    /// [`crate::mcp_approval`]); without it every MCP call is asked about.
    pub fn with_mcp(mut self, mcp: Arc<dyn McpLookup>) -> Self {
        self.mcp = Some(mcp);
        self
    }
}

#[async_trait::async_trait]
impl Interceptor for ApprovalPolicy {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        let mode = self.mode.get();
        let assessment = match &self.mcp {
            Some(mcp) if is_mcp_tool(&call.name) => assess_mcp(mcp.facts(&call.name).as_ref()),
            _ => assess(call, &self.workspace),
        };
        match decide(mode, assessment.class) {
            Verdict::Allow => {
                // Nobody was asked: the kernel, not the classifier, holds it to reading
                // (`yolo` is the person's choice to run anything as asked).
                if call.name == "shell"
                    && assessment.class == CallClass::ReadOnly
                    && mode != ApprovalMode::Yolo
                {
                    if let Some(runtime) = self.workspace.shell_runtime() {
                        runtime.mark_unasked(&call.ctx.call_id);
                    }
                }
                ToolAction::Allow
            }
            Verdict::Deny(reason) => ToolAction::Deny(match &assessment.reason {
                Some(why) => format!("{reason} ({why})"),
                None => reason,
            }),
            Verdict::Ask if assessment.grantable && self.grants.covers(call) => ToolAction::Allow,
            Verdict::Ask => match self
                .approver
                .approve(ApprovalQuestion {
                    call,
                    mode,
                    assessment: &assessment,
                })
                .await
            {
                Approval::Once => ToolAction::Allow,
                Approval::Session => {
                    if assessment.grantable {
                        self.grants.grant(call);
                    }
                    ToolAction::Allow
                }
                Approval::Deny(reason) => ToolAction::Deny(reason),
            },
        }
    }
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
