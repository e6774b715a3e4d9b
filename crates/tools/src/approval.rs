//! Approval modes and the policy interceptor that enforces them.
//!
//! | mode | read-only tools | edits | shell, proven read-only | other shell |
//! | --- | --- | --- | --- | --- |
//! | `plan` | allow | deny | allow | deny |
//! | `default` | allow | ask | allow | ask |
//! | `auto-edit` | allow | allow | allow | ask |
//! | `yolo` | allow | allow | allow | allow |
//!
//! "Ask" goes to an [`Approver`]; `exec` has no one to ask and denies, telling the model.

use crate::shell_safety::{classify, Safety};
use saki_llm_worker::{Interceptor, ToolAction, ToolCallInfo};
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
    ReadOnly,
    Edit,
    /// A shell command (or unknown tool) not proven read-only.
    Exec,
}

pub fn classify_call(call: &ToolCallInfo) -> CallClass {
    match call.name.as_str() {
        "read_file" | "ls" | "glob" | "grep" => CallClass::ReadOnly,
        "write_file" | "edit" => CallClass::Edit,
        "shell" => match call
            .input
            .get("command")
            .and_then(|c| c.as_str())
            .map(classify)
        {
            Some(Safety::ReadOnly) => CallClass::ReadOnly,
            _ => CallClass::Exec,
        },
        _ => CallClass::Exec,
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
        | (ApprovalMode::AutoEdit, CallClass::Edit) => Verdict::Allow,
        (ApprovalMode::Plan, _) => Verdict::Deny(
            "plan mode allows read-only tools only; describe the change instead of making it"
                .into(),
        ),
        _ => Verdict::Ask,
    }
}

/// Someone who can approve a call (the TUI asks the person).
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn approve(&self, call: &ToolCallInfo, mode: ApprovalMode) -> ToolAction;
}

/// For non-interactive runs: nobody to ask, so the call is denied with a way forward.
pub struct DenyWithoutAsking;

#[async_trait::async_trait]
impl Approver for DenyWithoutAsking {
    async fn approve(&self, call: &ToolCallInfo, mode: ApprovalMode) -> ToolAction {
        let hint = match classify_call(call) {
            CallClass::Edit => "--approval auto-edit",
            _ => "--approval yolo",
        };
        ToolAction::Deny(format!(
            "`{}` needs approval in `{mode}` mode and this run cannot ask; the person can rerun with {hint}",
            call.name
        ))
    }
}

pub struct ApprovalPolicy {
    mode: ApprovalMode,
    approver: Arc<dyn Approver>,
}

impl ApprovalPolicy {
    pub fn new(mode: ApprovalMode, approver: Arc<dyn Approver>) -> Self {
        Self { mode, approver }
    }
}

#[async_trait::async_trait]
impl Interceptor for ApprovalPolicy {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        match decide(self.mode, classify_call(call)) {
            Verdict::Allow => ToolAction::Allow,
            Verdict::Deny(reason) => ToolAction::Deny(reason),
            Verdict::Ask => self.approver.approve(call, self.mode).await,
        }
    }
}
