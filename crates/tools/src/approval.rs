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

use crate::grants::SessionGrants;
use crate::shell_safety::{classify, Safety};
use saki_llm_worker::{Interceptor, ToolAction, ToolCallInfo};
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

/// Someone who can approve a call (the TUI asks the person).
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn approve(&self, call: &ToolCallInfo, mode: ApprovalMode) -> Approval;
}

/// For non-interactive runs: nobody to ask, so the call is denied with a way forward.
pub struct DenyWithoutAsking;

#[async_trait::async_trait]
impl Approver for DenyWithoutAsking {
    async fn approve(&self, call: &ToolCallInfo, mode: ApprovalMode) -> Approval {
        let hint = match classify_call(call) {
            CallClass::Edit => "--approval auto-edit",
            _ => "--approval yolo",
        };
        Approval::Deny(format!(
            "`{}` needs approval in `{mode}` mode and this run cannot ask; the person can rerun with {hint}",
            call.name
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
}

impl ApprovalPolicy {
    /// A policy with a fixed mode and no grants (non-interactive runs).
    pub fn new(mode: ApprovalMode, approver: Arc<dyn Approver>) -> Self {
        Self::shared(SharedMode::new(mode), Arc::default(), approver)
    }

    /// A policy whose mode and grants the caller keeps handles to.
    pub fn shared(
        mode: SharedMode,
        grants: Arc<SessionGrants>,
        approver: Arc<dyn Approver>,
    ) -> Self {
        Self {
            mode,
            grants,
            approver,
        }
    }
}

#[async_trait::async_trait]
impl Interceptor for ApprovalPolicy {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        let mode = self.mode.get();
        match decide(mode, classify_call(call)) {
            Verdict::Allow => ToolAction::Allow,
            Verdict::Deny(reason) => ToolAction::Deny(reason),
            Verdict::Ask if self.grants.covers(call) => ToolAction::Allow,
            Verdict::Ask => match self.approver.approve(call, mode).await {
                Approval::Once => ToolAction::Allow,
                Approval::Session => {
                    self.grants.grant(call);
                    ToolAction::Allow
                }
                Approval::Deny(reason) => ToolAction::Deny(reason),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saki_llm_worker::ToolExecutionContext;
    use serde_json::json;
    use std::sync::atomic::AtomicUsize;

    struct Scripted {
        answer: Approval,
        asked: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Approver for Scripted {
        async fn approve(&self, _call: &ToolCallInfo, _mode: ApprovalMode) -> Approval {
            self.asked.fetch_add(1, Ordering::Relaxed);
            self.answer.clone()
        }
    }

    fn shell(command: &str) -> ToolCallInfo {
        let input = json!({ "command": command });
        ToolCallInfo {
            name: "shell".into(),
            arguments: input.to_string(),
            input,
            ctx: ToolExecutionContext {
                call_id: "c".into(),
                batch_id: "b1".into(),
                call_index: 0,
            },
        }
    }

    fn policy(answer: Approval) -> (ApprovalPolicy, Arc<Scripted>, SharedMode) {
        let approver = Arc::new(Scripted {
            answer,
            asked: AtomicUsize::new(0),
        });
        let mode = SharedMode::new(ApprovalMode::Default);
        let policy = ApprovalPolicy::shared(mode.clone(), Arc::default(), approver.clone());
        (policy, approver, mode)
    }

    #[tokio::test]
    async fn a_session_answer_is_not_asked_again_for_the_same_prefix() {
        let (policy, approver, _) = policy(Approval::Session);
        assert_eq!(
            policy.pre_tool_call(&shell("cargo test")).await,
            ToolAction::Allow
        );
        assert_eq!(
            policy.pre_tool_call(&shell("cargo test -q")).await,
            ToolAction::Allow
        );
        assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
        policy.pre_tool_call(&shell("cargo test && rm x")).await;
        assert_eq!(approver.asked.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn a_denial_carries_the_reason_and_mode_changes_apply_at_once() {
        let (policy, approver, mode) = policy(Approval::Deny("not now".into()));
        assert_eq!(
            policy.pre_tool_call(&shell("touch x")).await,
            ToolAction::Deny("not now".into())
        );
        mode.set(ApprovalMode::Yolo);
        assert_eq!(
            policy.pre_tool_call(&shell("touch x")).await,
            ToolAction::Allow
        );
        mode.set(ApprovalMode::Plan);
        assert!(matches!(
            policy.pre_tool_call(&shell("touch x")).await,
            ToolAction::Deny(_)
        ));
        assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
        assert_eq!(ApprovalMode::Yolo.next(), ApprovalMode::Plan);
    }
}
