//! User hooks: external commands a person configures for the events UserPromptSubmit,
//! PreToolUse, PostToolUse, Stop and PreCompress. A hook sees the event as JSON on
//! stdin and may block (cancel a prompt, deny a tool call) — nothing more: it cannot add
//! items, which is what keeps hooks read-only. Protocol: docs/hooks.md.

use crate::interceptor::{
    Interceptor, PromptAction, ToolAction, ToolCallInfo, ToolResultInfo, TurnEndAction,
};
use crate::item::Item;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Output;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
pub enum HookEvent {
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    PreCompress,
    /// A desktop notification is due (a turn ended, an approval waits) while the terminal
    /// is not in focus.
    Notification,
}

impl HookEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompress => "PreCompress",
            HookEvent::Notification => "Notification",
        }
    }
}

/// One configured hook command.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Run with `sh -c` in the workspace.
    pub command: String,
    /// Regex on the tool name (tool events only); absent matches every tool.
    pub matcher: Option<String>,
    /// Seconds before the hook is killed and ignored (default 30).
    pub timeout_secs: Option<u64>,
}

/// What a hook may say: nothing more than "go on" or "stop this".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    Continue,
    Block(String),
}

#[derive(Debug, Clone)]
struct Registered {
    event: HookEvent,
    config: HookConfig,
    /// The compiled `matcher`; `None` matches every tool.
    matcher: Option<regex::Regex>,
}

#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Registered>,
    cwd: PathBuf,
}

impl Hooks {
    pub fn new(cwd: PathBuf) -> Self {
        Self {
            hooks: Vec::new(),
            cwd,
        }
    }

    /// Registers a hook, compiling its matcher once. An invalid matcher is reported and
    /// the hook runs for every tool: silently skipping it would drop a guard.
    pub fn add(&mut self, event: HookEvent, config: HookConfig) {
        let matcher = config.matcher.as_deref().and_then(|pattern| {
            regex::Regex::new(&format!("^(?:{pattern})$"))
                .map_err(|e| tracing::warn!(%pattern, error = %e, "invalid hook matcher; the hook runs for every tool"))
                .ok()
        });
        self.hooks.push(Registered {
            event,
            config,
            matcher,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Runs every hook for `event` (in configuration order) until one blocks.
    pub async fn run(
        &self,
        event: HookEvent,
        tool_name: Option<&str>,
        payload: Value,
    ) -> HookDecision {
        for Registered {
            event: e,
            config: hook,
            matcher,
        } in &self.hooks
        {
            let applies = match (matcher, tool_name) {
                (Some(re), Some(name)) => re.is_match(name),
                _ => true,
            };
            if *e != event || !applies {
                continue;
            }
            let mut input = json!({"event": event.as_str(), "cwd": self.cwd});
            if let (Value::Object(i), Value::Object(p)) = (&mut input, &payload) {
                i.extend(p.clone());
            }
            if let HookDecision::Block(reason) = run_one(hook, &self.cwd, &input).await {
                return HookDecision::Block(reason);
            }
        }
        HookDecision::Continue
    }
}

impl Hooks {
    /// `UserPromptSubmit` for `prompt`: a typed prompt (through [`HookInterceptor`]) and
    /// an accepted speculation's prompt (by the front end) pass the same hooks.
    pub async fn prompt_submit(&self, prompt: &str) -> HookDecision {
        self.run(HookEvent::UserPromptSubmit, None, json!({"prompt": prompt}))
            .await
    }

    /// `Notification`: `kind` is `turn_finished` or `approval`; it observes.
    pub async fn notification(&self, kind: &str, message: &str) {
        let _ = self
            .run(
                HookEvent::Notification,
                None,
                json!({"kind": kind, "message": message}),
            )
            .await;
    }

    /// `Stop` with the turn's last answer; it observes, nothing is left to block.
    pub async fn stop(&self, last_assistant_message: Option<&str>) {
        let _ = self
            .run(
                HookEvent::Stop,
                None,
                json!({"last_assistant_message": last_assistant_message}),
            )
            .await;
    }

    /// `PreToolUse` for a call a speculation is about to run ahead of the person:
    /// `"speculation": true` tells the hook nothing is decided yet (its writes would land
    /// in an overlay). A block is a boundary: the speculation stops before the call.
    pub async fn pre_speculated_call(&self, call: &ToolCallInfo) -> HookDecision {
        let mut payload = call_payload(call);
        if let Value::Object(p) = &mut payload {
            p.insert("speculation".into(), json!(true));
        }
        self.run(HookEvent::PreToolUse, Some(&call.name), payload)
            .await
    }
}

#[derive(Deserialize)]
struct HookReply {
    decision: Option<String>,
    reason: Option<String>,
}

/// Exit 0: continue, unless stdout is JSON with `"decision": "block" | "deny"`.
/// Exit 2: block, with stderr as the reason. Any other failure (other exit codes,
/// timeout, cannot start) is reported and does not block.
async fn run_one(hook: &HookConfig, cwd: &PathBuf, input: &Value) -> HookDecision {
    let timeout = Duration::from_secs(hook.timeout_secs.unwrap_or(30));
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(command = %hook.command, error = %e, "hook could not start");
            return HookDecision::Continue;
        }
    };
    // The timeout covers the whole exchange: a hook that never reads a large input (or
    // never closes its output) cannot hold the turn longer than it.
    let bytes = input.to_string();
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let exchange = async {
        let write = async {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input is fine.
                let _ = stdin.write_all(bytes.as_bytes()).await;
            }
        };
        let ((), stdout, stderr) = tokio::join!(write, read_capped(stdout), read_capped(stderr));
        child.wait().await.map(|status| (status, stdout, stderr))
    };
    let output = match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok((status, stdout, stderr))) => Output {
            status,
            stdout,
            stderr,
        },
        Ok(Err(e)) => {
            tracing::warn!(command = %hook.command, error = %e, "hook failed");
            return HookDecision::Continue;
        }
        Err(_) => {
            tracing::warn!(command = %hook.command, secs = timeout.as_secs(), "hook timed out and was ignored");
            return HookDecision::Continue;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    match output.status.code() {
        Some(0) => match serde_json::from_str::<HookReply>(stdout.trim()) {
            Ok(HookReply {
                decision: Some(d),
                reason,
            }) if d == "block" || d == "deny" => HookDecision::Block(
                reason.unwrap_or_else(|| format!("blocked by hook `{}`", hook.command)),
            ),
            _ => HookDecision::Continue,
        },
        Some(2) => HookDecision::Block(if stderr.is_empty() {
            format!("blocked by hook `{}`", hook.command)
        } else {
            stderr
        }),
        code => {
            tracing::warn!(command = %hook.command, ?code, %stderr, "hook exited with an error; ignored");
            HookDecision::Continue
        }
    }
}

/// The most of a hook's stdout or stderr that is read (a reason, a small JSON reply).
const HOOK_OUTPUT_MAX_BYTES: u64 = 64 * 1024;

async fn read_capped(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(stream) = stream {
        let _ = stream
            .take(HOOK_OUTPUT_MAX_BYTES)
            .read_to_end(&mut bytes)
            .await;
    }
    bytes
}

/// Adapts hooks onto the Worker's interceptor points, keeping them read-only.
pub struct HookInterceptor {
    hooks: Hooks,
}

impl HookInterceptor {
    pub fn new(hooks: Hooks) -> Self {
        Self { hooks }
    }
}

fn call_payload(call: &ToolCallInfo) -> Value {
    json!({"tool_name": call.name, "tool_input": call.input, "call_id": call.ctx.call_id,
        "batch_id": call.ctx.batch_id, "call_index": call.ctx.call_index})
}

#[async_trait::async_trait]
impl Interceptor for HookInterceptor {
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        let prompt = match user {
            Item::User { text } => text.as_str(),
            _ => "",
        };
        match self.hooks.prompt_submit(prompt).await {
            HookDecision::Continue => PromptAction::Continue,
            HookDecision::Block(reason) => PromptAction::Cancel(reason),
        }
    }

    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        match self
            .hooks
            .run(HookEvent::PreToolUse, Some(&call.name), call_payload(call))
            .await
        {
            HookDecision::Continue => ToolAction::Allow,
            HookDecision::Block(reason) => ToolAction::Deny(reason),
        }
    }

    async fn post_tool_call(&self, result: &ToolResultInfo) {
        let mut payload = call_payload(&result.call);
        if let Value::Object(p) = &mut payload {
            p.insert("tool_output".into(), json!(result.content));
            p.insert("status".into(), json!(result.status));
        }
        // PostToolUse observes; a block here has nothing left to stop.
        let _ = self
            .hooks
            .run(HookEvent::PostToolUse, Some(&result.call.name), payload)
            .await;
    }

    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let last = history.iter().rev().find_map(|i| match i {
            Item::AssistantText { text } => Some(text.as_str()),
            _ => None,
        });
        self.hooks.stop(last).await;
        TurnEndAction::Finish
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(command: &str, timeout_secs: u64) -> Hooks {
        let mut hooks = Hooks::new(std::env::temp_dir());
        hooks.add(
            HookEvent::PreToolUse,
            HookConfig {
                command: command.into(),
                matcher: None,
                timeout_secs: Some(timeout_secs),
            },
        );
        hooks
    }

    #[tokio::test]
    async fn the_timeout_covers_writing_an_input_the_hook_never_reads() {
        // 4 MiB of input, far past a pipe buffer; the hook never reads it and would
        // leave a mark only after 30 s.
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("mark");
        let payload = json!({"tool_input": "x".repeat(4 * 1024 * 1024)});
        let decision = hooks(&format!("sleep 30; touch {}", mark.display()), 1)
            .run(HookEvent::PreToolUse, Some("shell"), payload)
            .await;
        assert_eq!(decision, HookDecision::Continue);
        assert!(!mark.exists(), "the hook was ended by its timeout");
    }

    #[tokio::test]
    async fn a_hook_reason_is_read_with_a_cap() {
        let decision = hooks("head -c 1000000 /dev/zero | tr '\\0' r >&2; exit 2", 10)
            .run(HookEvent::PreToolUse, Some("shell"), json!({}))
            .await;
        match decision {
            HookDecision::Block(reason) => {
                assert_eq!(reason.len() as u64, HOOK_OUTPUT_MAX_BYTES);
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn the_notification_hook_gets_its_kind_and_message() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got.json");
        let mut hooks = Hooks::new(std::env::temp_dir());
        hooks.add(
            HookEvent::Notification,
            HookConfig {
                command: format!("cat > {}", out.display()),
                matcher: None,
                timeout_secs: Some(10),
            },
        );
        hooks.notification("approval", "saki: approve shell?").await;
        let got: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(got["event"], "Notification");
        assert_eq!(got["kind"], "approval");
        assert_eq!(got["message"], "saki: approve shell?");
    }
}
