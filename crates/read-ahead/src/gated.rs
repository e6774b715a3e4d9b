//! The speculation's tools and gate as pieces of the Worker's own loop: a speculation is
//! a Worker turn (text-call recovery, the schema check, the loop guard, help for invented
//! tools, the answer request: everything the main loop does for a weak model) whose
//! interceptor is the [`ToolGate`] and whose tools are the overlay's.
//!
//! - [`GateInterceptor`]: each call the model makes is judged by the gate (a boundary
//!   stops the turn before it runs: [`ToolAction::Stop`]) and then by the person's
//!   `PreToolUse` hooks (a block is a boundary too); a shell call it lets through is
//!   marked unasked, so it runs in the read-only sandbox.
//! - [`GatedTool`]: runs a call with the paths the gate rewrote (into the overlay).
//! - [`Stopper`]: what ends the turn from inside a tool or the observer (a result the main
//!   loop must judge, such as an image; the message cap): it cancels the turn and keeps
//!   the reason, which makes the speculation a boundary.
//! - Tools the main request offers that the speculation has no tool for (MCP tools) get a
//!   stand-in of the same definition, so a call to one reaches the gate (a boundary)
//!   instead of failing as an unknown tool.

use crate::gate::{BoundaryKind, GateDecision, ToolGate};
use crate::overlay::Unaccepted;
use saki_llm_client::{CancellationToken, ToolDefinition};
use saki_llm_worker::hook::{HookDecision, Hooks};
use saki_llm_worker::{
    Interceptor, Tool, ToolAction, ToolCallInfo, ToolError, ToolExecutionContext, ToolOutput,
    ToolServer,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Ends a speculation's turn from inside it, keeping why; also where the turn's
/// boundary kind and the commands it ran are counted.
#[derive(Debug, Default, Clone)]
pub struct Stopper {
    token: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
    kind: Arc<Mutex<Option<BoundaryKind>>>,
    commands: Arc<AtomicUsize>,
}

impl Stopper {
    /// A stopper whose token is a child of `cancel`: the person's cancel still cancels.
    pub fn new(cancel: &CancellationToken) -> Self {
        Self {
            token: cancel.child_token(),
            ..Self::default()
        }
    }

    /// The token the turn runs with.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Stops the turn; the first reason given is kept.
    pub fn stop(&self, kind: BoundaryKind, reason: String) {
        self.note(kind);
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(reason);
        self.token.cancel();
    }

    /// Records the kind of a boundary the turn stops at by other means (an
    /// interceptor's `Stop`); the first is kept.
    pub fn note(&self, kind: BoundaryKind) {
        self.kind
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(kind);
    }

    /// The kind of the boundary the turn stopped at, if one was recorded.
    pub fn kind(&self) -> Option<BoundaryKind> {
        *self.kind.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Shell commands the speculation ran.
    pub fn commands_run(&self) -> usize {
        self.commands.load(Ordering::SeqCst)
    }

    /// Why it stopped the turn, if it did.
    pub fn reason(&self) -> Option<String> {
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The gate and the person's hooks, as the speculation Worker's interceptor.
pub struct GateInterceptor {
    pub gate: Arc<ToolGate>,
    pub hooks: Option<Hooks>,
    pub stopper: Stopper,
}

#[async_trait::async_trait]
impl Interceptor for GateInterceptor {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        let overlay = match self.gate.check(&call.name, &call.arguments) {
            GateDecision::Boundary { reason, kind } => {
                self.stopper.note(kind);
                return ToolAction::Stop(reason);
            }
            GateDecision::Allow { overlay, .. } => overlay,
        };
        // The hook sees the input as the model meant it (workspace paths), not the
        // overlay's rewrite.
        if let Some(hooks) = self.hooks.as_ref().filter(|h| !h.is_empty()) {
            if let HookDecision::Block(reason) = hooks.pre_speculated_call(call).await {
                self.stopper.note(BoundaryKind::ApprovalMode);
                return ToolAction::Stop(format!(
                    "a PreToolUse hook blocked `{}`: {reason}",
                    call.name
                ));
            }
        }
        if !self
            .gate
            .mark_unasked(&call.name, &call.ctx.call_id, overlay)
        {
            self.stopper.note(BoundaryKind::OverlayUnavailable);
            return ToolAction::Stop(format!(
                "`{}` would run in an overlay of the workspace, which cannot be mounted",
                call.name
            ));
        }
        ToolAction::Allow
    }
}

/// A speculation tool: the gate rewrites the call's paths (into the overlay), then the
/// real tool runs it. A result the main loop must judge (an image: whether the main model
/// reads images is its to say) stops the speculation.
pub struct GatedTool {
    inner: Arc<dyn Tool>,
    gate: Arc<ToolGate>,
    stopper: Stopper,
}

#[async_trait::async_trait]
impl Tool for GatedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> serde_json::Value {
        self.inner.input_schema()
    }
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = self.inner.name();
        match self.gate.check(name, input) {
            GateDecision::Allow { input, overlay } => {
                let hide = |text: &str| self.gate.overlay().hide_dir(text);
                let mut output = self
                    .inner
                    .execute(&input, ctx)
                    .await
                    .map_err(|e| ToolError::Failed(hide(&e.to_string())))?;
                output.content = hide(&output.content);
                if !output.images.is_empty() {
                    self.stopper
                        .stop(BoundaryKind::Limit, format!("`{name}` returned an image"));
                }
                if overlay {
                    self.after_command(&output.content);
                }
                Ok(output)
            }
            // The interceptor stops such a call before it runs; the overlay changed in
            // between (a parallel call of the batch) is the only way here.
            GateDecision::Boundary { reason, kind } => {
                self.stopper.stop(kind, reason.clone());
                Err(ToolError::Failed(format!("not run: {reason}")))
            }
        }
    }
}

impl GatedTool {
    /// After a command ran in the overlay: what it wrote joins the overlay's files, and
    /// a change accept cannot take, or a failure the sandbox caused, stops the
    /// speculation (the command runs for real after the person accepts).
    fn after_command(&self, output: &str) {
        self.stopper.commands.fetch_add(1, Ordering::SeqCst);
        if let Err(unaccepted) = self.gate.overlay().absorb_commands() {
            let (kind, what) = match unaccepted {
                Unaccepted::Sensitive(path) => (BoundaryKind::SensitivePath, path),
                Unaccepted::Deletion(path) => (BoundaryKind::Limit, format!("removed {path}")),
            };
            self.stopper
                .stop(kind, format!("a speculated command changed {what}"));
            return;
        }
        if let Some(sign) = sandbox_denied(output) {
            self.stopper.stop(
                BoundaryKind::SandboxDenied,
                format!("a speculated command failed where the sandbox stopped it ({sign})"),
            );
        }
    }
}

/// What in a failed command's output says the sandbox stopped it (a denied write or
/// connect, no network), if anything.
fn sandbox_denied(output: &str) -> Option<&'static str> {
    const SIGNS: &[&str] = &[
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "nodename nor servname",
    ];
    if output.trim_end().ends_with("[exit code: 0]") {
        return None;
    }
    SIGNS.iter().copied().find(|sign| output.contains(sign))
}

/// A tool the main request offers that the speculation cannot run: its definition, so
/// the call reaches the gate, which stops there.
struct StandIn(ToolDefinition);

#[async_trait::async_trait]
impl Tool for StandIn {
    fn name(&self) -> &str {
        &self.0.name
    }
    fn description(&self) -> &str {
        &self.0.description
    }
    fn input_schema(&self) -> serde_json::Value {
        self.0.input_schema.clone()
    }
    async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed(format!(
            "not run: `{}` is not run ahead of the person",
            self.0.name
        )))
    }
}

/// The speculation's tool server: each of `tools` behind the gate, and a stand-in for
/// every tool of `offered` (the main request's list) it lacks.
pub fn gated_server(
    tools: &ToolServer,
    offered: &[ToolDefinition],
    gate: &Arc<ToolGate>,
    stopper: &Stopper,
) -> ToolServer {
    let mut server = ToolServer::new();
    for tool in tools.names().into_iter().filter_map(|name| tools.get(name)) {
        let gated = GatedTool {
            inner: tool.clone(),
            gate: gate.clone(),
            stopper: stopper.clone(),
        };
        if let Err(e) = server.register(Arc::new(gated)) {
            tracing::error!(error = %e, "speculation tool server");
        }
    }
    for definition in offered {
        if server.get(&definition.name).is_none() {
            if let Err(e) = server.register(Arc::new(StandIn(definition.clone()))) {
                tracing::error!(error = %e, "speculation tool server");
            }
        }
    }
    server
}
