//! Approval facts about tools from MCP servers (`mcp__<server>__<tool>`).
//!
//! The policy cannot tell from a call what an MCP tool does, so it asks the session
//! ([`McpLookup`]) what the server said: a tool annotated `readOnlyHint: true` by a
//! trusted server (from the global config or a trusted workspace) is read-only; any
//! other is [`CallClass::Mcp`], which runs unasked only when its server has
//! `approval = "auto"` (and never in `plan`). A tool the session does not know (its
//! server is gone) is asked about.

use crate::approval::{Assessment, CallClass};

/// Names of MCP tools start with this.
pub const MCP_PREFIX: &str = "mcp__";

pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

/// What the session knows about one MCP tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolFacts {
    /// The server's name in config.
    pub server: String,
    /// The server annotates the tool `readOnlyHint: true`.
    pub read_only_hint: bool,
    /// The server has `approval = "auto"`.
    pub auto_approve: bool,
    /// The server comes from the global config or a trusted workspace.
    pub trusted: bool,
}

/// The session's MCP tools, by the name the model uses.
pub trait McpLookup: Send + Sync {
    fn facts(&self, name: &str) -> Option<McpToolFacts>;
}

impl<F> McpLookup for F
where
    F: Fn(&str) -> Option<McpToolFacts> + Send + Sync,
{
    fn facts(&self, name: &str) -> Option<McpToolFacts> {
        self(name)
    }
}

/// A call to an MCP tool, classified by what its server said about it.
pub fn assess_mcp(facts: Option<&McpToolFacts>) -> Assessment {
    match facts {
        Some(f) if f.read_only_hint && f.trusted => {
            Assessment::new(CallClass::ReadOnly, None, true)
        }
        Some(f) => Assessment::new(
            CallClass::Mcp {
                auto: f.auto_approve,
            },
            Some(format!("a tool of the MCP server `{}`", f.server)),
            true,
        ),
        None => Assessment::new(
            CallClass::Mcp { auto: false },
            Some("a tool of an MCP server this session does not know".to_owned()),
            true,
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::approval::{
        Approval, ApprovalMode, ApprovalPolicy, ApprovalQuestion, Approver, DenyWithoutAsking,
        SharedMode,
    };
    use crate::Workspace;
    use saki_llm_worker::{Interceptor, ToolAction, ToolCallInfo, ToolExecutionContext};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Says yes, counting how often it was asked.
    #[derive(Default)]
    struct Yes(AtomicUsize);

    #[async_trait::async_trait]
    impl Approver for Yes {
        async fn approve(&self, _: ApprovalQuestion<'_>) -> Approval {
            self.0.fetch_add(1, Ordering::Relaxed);
            Approval::Once
        }
    }

    fn call(name: &str) -> ToolCallInfo {
        ToolCallInfo {
            name: name.into(),
            arguments: "{}".into(),
            input: serde_json::json!({}),
            ctx: ToolExecutionContext {
                call_id: "c".into(),
                batch_id: "b1".into(),
                call_index: 0,
            },
        }
    }

    /// Tools of two servers: `docs` (trusted, asks; `search` read-only, `publish` not),
    /// `tracker` (trusted, auto; `file_bug`), and `stray` (not trusted; `peek` read-only).
    fn lookup(name: &str) -> Option<McpToolFacts> {
        let facts = |server: &str, read_only_hint, auto_approve, trusted| McpToolFacts {
            server: server.into(),
            read_only_hint,
            auto_approve,
            trusted,
        };
        match name {
            "mcp__docs__search" => Some(facts("docs", true, false, true)),
            "mcp__docs__publish" => Some(facts("docs", false, false, true)),
            "mcp__tracker__file_bug" => Some(facts("tracker", false, true, true)),
            "mcp__stray__peek" => Some(facts("stray", true, false, false)),
            _ => None,
        }
    }

    /// What each mode does with each tool: `run` unasked, `ask`ed, or `deny`.
    #[tokio::test]
    async fn mcp_calls_in_each_mode() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
        let tools = [
            "mcp__docs__search",
            "mcp__docs__publish",
            "mcp__tracker__file_bug",
            "mcp__stray__peek",
            "mcp__gone__tool",
        ];
        let expected = [
            (ApprovalMode::Plan, ["run", "deny", "deny", "deny", "deny"]),
            (ApprovalMode::Default, ["run", "ask", "run", "ask", "ask"]),
            (ApprovalMode::AutoEdit, ["run", "ask", "run", "ask", "ask"]),
            (ApprovalMode::Yolo, ["run", "run", "run", "run", "run"]),
        ];
        for (mode, verdicts) in expected {
            for (tool, verdict) in tools.iter().zip(verdicts) {
                let approver = Arc::new(Yes::default());
                let policy = ApprovalPolicy::shared(
                    SharedMode::new(mode),
                    Arc::default(),
                    approver.clone(),
                    workspace.clone(),
                )
                .with_mcp(Arc::new(lookup));
                let action = policy.pre_tool_call(&call(tool)).await;
                let asked = approver.0.load(Ordering::Relaxed) > 0;
                let got = match (&action, asked) {
                    (ToolAction::Deny(_), _) => "deny",
                    (_, true) => "ask",
                    _ => "run",
                };
                assert_eq!(got, verdict, "{tool} in {mode}");
                if let ToolAction::Deny(reason) = action {
                    assert!(reason.contains("readOnlyHint"), "{reason}");
                }
            }
        }
    }

    #[tokio::test]
    async fn a_run_that_cannot_ask_says_how_to_allow_mcp_calls() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
        let policy = ApprovalPolicy::new(
            ApprovalMode::Default,
            Arc::new(DenyWithoutAsking),
            workspace,
        )
        .with_mcp(Arc::new(lookup));
        let ToolAction::Deny(reason) = policy.pre_tool_call(&call("mcp__docs__publish")).await
        else {
            panic!("not denied");
        };
        assert!(reason.contains("the MCP server `docs`"), "{reason}");
        assert!(
            reason.contains("approval = \"auto\" under [mcp_servers.NAME]"),
            "{reason}"
        );
    }
}
