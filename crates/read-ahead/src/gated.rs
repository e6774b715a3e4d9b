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

use crate::gate::{GateDecision, ToolGate};
use saki_llm_client::{CancellationToken, ToolDefinition};
use saki_llm_worker::hook::{HookDecision, Hooks};
use saki_llm_worker::{
    Interceptor, Tool, ToolAction, ToolCallInfo, ToolError, ToolExecutionContext, ToolOutput,
    ToolServer,
};
use std::sync::{Arc, Mutex, PoisonError};

/// Ends a speculation's turn from inside it, keeping why.
#[derive(Debug, Default, Clone)]
pub struct Stopper {
    token: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
}

impl Stopper {
    /// A stopper whose token is a child of `cancel`: the person's cancel still cancels.
    pub fn new(cancel: &CancellationToken) -> Self {
        Self {
            token: cancel.child_token(),
            reason: Arc::default(),
        }
    }

    /// The token the turn runs with.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Stops the turn; the first reason given is kept.
    pub fn stop(&self, reason: String) {
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(reason);
        self.token.cancel();
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
}

#[async_trait::async_trait]
impl Interceptor for GateInterceptor {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        if let GateDecision::Boundary { reason } = self.gate.check(&call.name, &call.arguments) {
            return ToolAction::Stop(reason);
        }
        // The hook sees the input as the model meant it (workspace paths), not the
        // overlay's rewrite.
        if let Some(hooks) = self.hooks.as_ref().filter(|h| !h.is_empty()) {
            if let HookDecision::Block(reason) = hooks.pre_speculated_call(call).await {
                return ToolAction::Stop(format!(
                    "a PreToolUse hook blocked `{}`: {reason}",
                    call.name
                ));
            }
        }
        self.gate.mark_unasked(&call.name, &call.ctx.call_id);
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
            GateDecision::Allow { input } => {
                let output = self.inner.execute(&input, ctx).await?;
                if !output.images.is_empty() {
                    self.stopper.stop(format!("`{name}` returned an image"));
                }
                Ok(output)
            }
            // The interceptor stops such a call before it runs; the overlay changed in
            // between (a parallel call of the batch) is the only way here.
            GateDecision::Boundary { reason } => {
                self.stopper.stop(reason.clone());
                Err(ToolError::Failed(format!("not run: {reason}")))
            }
        }
    }
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
