//! The `agent` tool: a subagent runs a task in the same Worker loop as the session, with
//! a fresh context (the conversation is not sent, only the agent's system prompt and the
//! task), the agent's tools only, and the session's client. Its final answer is the
//! call's result, capped like any tool's.
//!
//! - **Parallel.** Several `agent` calls of one response are one batch, which the Worker
//!   runs in parallel like any calls.
//! - **Cancel.** Cancelling the turn drops the batch's futures, and with them each
//!   subagent's Worker and its own cancellation token (cancelled on drop), so its stream
//!   and its tools stop.
//! - **Approvals.** `explore` runs under plan mode's rule (looking only, read-only shell);
//!   `general` and custom agents under the session's mode and grants, asking the same
//!   approver. The person's `PreToolUse`/`PostToolUse` hooks and undo's checkpoints see
//!   their calls (but not their prompt: `UserPromptSubmit` and `Stop` are the session's).
//! - **Depth.** A subagent gets no `agent` tool unless `max_depth` allows another level.
//! - **Where it shows.** Every Worker event of a subagent goes to the front end as
//!   [`EngineEvent::Subagent`] under the parent call id, its usage counts toward the
//!   session's and toward the turn that called it ([`Shared::take_turn`]: the turn's
//!   `TurnOutcome`, so `turn.completed` in `--json`), and its items go to the session
//!   log under the parent call (never into the conversation's history).
//! - **Model.** A subagent starts with the session's model settings as they are then
//!   ([`Shared::set_models`]: a `/model` after the tool was installed reaches it).

use crate::bridge::{recorder, MainUsage, RecorderSlot, SlotDurability, UiSender};
use crate::protocol::{EngineEvent, SubagentEvent};
use saki_llm_client::{CancellationToken, Client, UsageEvent, WireApi};
use saki_llm_worker::hook::{HookInterceptor, Hooks};
use saki_llm_worker::{
    BatchIds, Interceptor, Item, SharedTools, Tool, ToolAction, ToolCallInfo, ToolError,
    ToolExecutionContext, ToolOutput, ToolResultInfo, ToolServer, TurnStatus, Worker, WorkerConfig,
    WorkerEvent,
};
use saki_pod::agents::{AgentDef, AgentMode, AgentTools};
use saki_tools::{ApprovalMode, ApprovalPolicy, Approver, SessionGrants, SharedMode, Workspace};
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};

pub const TOOL_NAME: &str = "agent";
/// Tools a subagent never gets: leaving plan mode is the session's business.
const NEVER: &[&str] = &[crate::ask::EXIT_PLAN_MODE];

/// What the session changes under its subagents once the `agent` tool is installed:
/// the model settings (`/model`), and the usage of the subagents of the running turn.
#[derive(Clone)]
pub struct Shared(Arc<Mutex<SharedState>>);

struct SharedState {
    config: WorkerConfig,
    fast_model: String,
    /// Summed over the requests since the last [`Shared::take_turn`], and how many.
    usage: UsageEvent,
    requests: usize,
}

impl Shared {
    pub fn new(config: WorkerConfig, fast_model: String) -> Self {
        Self(Arc::new(Mutex::new(SharedState {
            config,
            fast_model,
            usage: UsageEvent::default(),
            requests: 0,
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SharedState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session switched models: subagents started from now on use these.
    pub fn set_models(&self, config: &WorkerConfig, fast_model: &str) {
        let mut state = self.lock();
        state.config = config.clone();
        state.fast_model = fast_model.to_owned();
    }

    fn models(&self) -> (WorkerConfig, String) {
        let state = self.lock();
        (state.config.clone(), state.fast_model.clone())
    }

    fn add_request(&self, usage: &UsageEvent) {
        let mut state = self.lock();
        add_usage(&mut state.usage, usage);
        state.requests += 1;
    }

    /// The subagents' usage and requests since the last call (the turn that ran them),
    /// reset for the next.
    pub fn take_turn(&self) -> (UsageEvent, usize) {
        let mut state = self.lock();
        let taken = (state.usage, state.requests);
        state.usage = UsageEvent::default();
        state.requests = 0;
        taken
    }
}

/// `more` summed into `into`, field by field (a field neither reported stays `None`).
pub fn add_usage(into: &mut UsageEvent, more: &UsageEvent) {
    fn sum(a: &mut Option<u64>, b: Option<u64>) {
        if let Some(b) = b {
            *a = Some(a.unwrap_or(0) + b);
        }
    }
    sum(&mut into.input_tokens, more.input_tokens);
    sum(&mut into.output_tokens, more.output_tokens);
    sum(&mut into.total_tokens, more.total_tokens);
    sum(
        &mut into.cache_read_input_tokens,
        more.cache_read_input_tokens,
    );
    sum(
        &mut into.cache_creation_input_tokens,
        more.cache_creation_input_tokens,
    );
}

/// What every subagent of a session shares.
pub struct SubagentEnv {
    pub client: Client,
    /// The model settings (as `/model` left them) and the running turn's usage.
    pub shared: Shared,
    /// The session's system prompt (built-in agents start from it).
    pub system_prompt: String,
    pub tools: SharedTools,
    pub agents: Vec<AgentDef>,
    pub mode: SharedMode,
    pub grants: Arc<SessionGrants>,
    pub approver: Arc<dyn Approver>,
    pub workspace: Arc<Workspace>,
    pub hooks: Hooks,
    pub checkpoints: Option<Arc<dyn Interceptor>>,
    pub batch_ids: BatchIds,
    pub ui: UiSender,
    pub slot: RecorderSlot,
    pub main_usage: MainUsage,
    pub max_depth: u32,
}

pub struct AgentTool {
    env: Arc<SubagentEnv>,
    /// How deep this tool's subagents run (1: called by the session).
    depth: u32,
    description: String,
}

impl AgentTool {
    pub fn new(env: Arc<SubagentEnv>, depth: u32) -> Self {
        let mut description = "Run a task in a subagent with a fresh context and give back its final answer. \
             Several agent calls in one response run in parallel. The prompt must hold everything the agent needs: it does not see this conversation. Agents:"
            .to_owned();
        for agent in &env.agents {
            description.push_str(&format!("\n- {}: {}", agent.name, agent.description));
        }
        Self {
            env,
            depth,
            description,
        }
    }
}

#[async_trait::async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> serde_json::Value {
        let names: Vec<&str> = self.env.agents.iter().map(|a| a.name.as_str()).collect();
        serde_json::json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short title for the task (3-5 words)"},
                "prompt": {"type": "string", "description": "The task, with all the context it needs"},
                "agent": {"type": "string", "enum": names, "description": "Which agent (default general)"}
            },
            "required": ["description", "prompt"]
        })
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let input: Value = saki_tools::common::parse_args(input)?;
        let field = |key: &str| {
            input
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let Some(prompt) = field("prompt") else {
            return Err(ToolError::InvalidInput("`prompt` is empty".into()));
        };
        let title = field("description").unwrap_or("task");
        let name = field("agent").unwrap_or("general");
        let Some(def) = self.env.agents.iter().find(|a| a.name == name) else {
            let names: Vec<&str> = self.env.agents.iter().map(|a| a.name.as_str()).collect();
            return Err(ToolError::InvalidInput(format!(
                "no agent named `{name}`; agents: {}",
                names.join(", ")
            )));
        };
        let mut worker = self.worker(def, &ctx.call_id);
        // Dropped with this future when the batch is cancelled: the subagent stops too.
        let cancel = CancellationToken::new();
        let _stop = cancel.clone().drop_guard();
        let outcome = worker.run_turn(prompt, cancel).await;
        let answer = worker.history().iter().rev().find_map(|item| match item {
            Item::AssistantText { text } if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        });
        let summary = format!("{} ({title})", def.name);
        match outcome {
            Ok(outcome) => {
                let note = match &outcome.status {
                    TurnStatus::Completed { .. } => None,
                    TurnStatus::MaxTurns => Some("it used all its requests"),
                    TurnStatus::Cancelled => Some("it was cancelled"),
                    TurnStatus::Incomplete => Some("its answer was cut off"),
                    TurnStatus::Failed { .. } => Some("its model request failed"),
                    TurnStatus::Stopped { .. } | TurnStatus::PromptCancelled { .. } => {
                        Some("it was stopped")
                    }
                };
                match (answer, note) {
                    (Some(answer), None) => Ok(ToolOutput::new(answer).with_summary(summary)),
                    (Some(answer), Some(note)) => Ok(ToolOutput::new(format!(
                        "{answer}\n\n[the agent did not finish: {note}]"
                    ))
                    .with_summary(summary)),
                    (None, note) => Err(ToolError::Failed(format!(
                        "the agent gave no answer{}",
                        note.map(|n| format!(": {n}")).unwrap_or_default()
                    ))),
                }
            }
            Err(e) => Err(ToolError::Failed(format!(
                "the agent's model request failed: {e}"
            ))),
        }
    }
}

impl AgentTool {
    /// A Worker for one run of `def`, its events reported under `parent`.
    fn worker(&self, def: &AgentDef, parent: &str) -> Worker {
        let env = &self.env;
        let (mut config, fast_model) = env.shared.models();
        match def.model.as_deref() {
            Some("fast") => config.model = fast_model,
            Some(model) => config.model = model.to_owned(),
            None => {}
        }
        config.system_prompt = None;
        let mut worker = Worker::new(env.client.clone(), Arc::new(self.tools(def)), config);
        worker.set_system_prompt(Some(self.system_prompt(def)));
        worker.set_batch_ids(env.batch_ids.clone());
        let mode = match def.mode {
            AgentMode::ReadOnly => SharedMode::new(ApprovalMode::Plan),
            AgentMode::Session => env.mode.clone(),
        };
        worker.add_interceptor(Arc::new(ApprovalPolicy::shared(
            mode,
            env.grants.clone(),
            env.approver.clone(),
            env.workspace.clone(),
        )));
        if !env.hooks.is_empty() {
            worker.add_interceptor(Arc::new(CallsOnly(Arc::new(HookInterceptor::new(
                env.hooks.clone(),
            )))));
        }
        if let Some(checkpoints) = &env.checkpoints {
            worker.add_interceptor(Arc::new(CallsOnly(checkpoints.clone())));
        }
        worker.set_observer(observer(
            env,
            parent.to_owned(),
            def.name.clone(),
            worker.client().config().wire_api,
        ));
        worker.set_durability(Arc::new(SlotDurability(env.slot.clone())));
        worker
    }

    /// The agent's tools, from the session's set as it is now.
    fn tools(&self, def: &AgentDef) -> ToolServer {
        let session = self.env.tools.snapshot();
        let mut server = ToolServer::new();
        for name in session.names() {
            let wanted = match &def.tools {
                AgentTools::All => true,
                AgentTools::Only(names) => names.iter().any(|n| n == name),
            };
            if !wanted || NEVER.contains(&name) {
                continue;
            }
            let tool: Arc<dyn Tool> = if name == TOOL_NAME {
                if self.depth >= self.env.max_depth {
                    continue;
                }
                let cap = self.env.workspace.output_cap();
                saki_tools::capped::wrap_async(
                    Arc::new(AgentTool::new(self.env.clone(), self.depth + 1)),
                    cap,
                )
            } else {
                match session.get(name) {
                    Some(tool) => tool.clone(),
                    None => continue,
                }
            };
            if let Err(e) = server.register(tool) {
                tracing::debug!(error = %e, "subagent tool set");
            }
        }
        server
    }

    fn system_prompt(&self, def: &AgentDef) -> String {
        let role = match def.mode {
            AgentMode::ReadOnly => {
                "You are a read-only explore subagent: search and read to answer the task; you cannot change files. \
                 Answer with what you found: the relevant paths, line numbers and short excerpts, and what they mean for the task."
            }
            AgentMode::Session => {
                "Do the task you are given completely, then answer with what you did and found; \
                 the answer is all the caller sees."
            }
        };
        match &def.prompt {
            Some(body) => format!(
                "{body}\n\n# Subagent\nYou are the `{}` subagent of saki, working in {}. {role}",
                def.name,
                self.env.workspace.root().display()
            ),
            None => format!(
                "{}\n\n# Subagent\nYou run as saki's `{}` subagent, for a task another agent gave you; you do not see its conversation. {role}",
                self.env.system_prompt, def.name
            ),
        }
    }
}

/// An interceptor for a subagent's tool calls only: the prompt and the turn's end are
/// the session's (its `UserPromptSubmit` and `Stop` hooks, undo's turn numbering).
struct CallsOnly(Arc<dyn Interceptor>);

#[async_trait::async_trait]
impl Interceptor for CallsOnly {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        self.0.pre_tool_call(call).await
    }
    async fn post_tool_call(&self, result: &ToolResultInfo) {
        self.0.post_tool_call(result).await;
    }
}

/// Reports a subagent's events under its parent call, records its items, and counts its
/// usage toward the session's.
fn observer(
    env: &SubagentEnv,
    parent: String,
    agent: String,
    wire_api: WireApi,
) -> saki_llm_worker::Observer {
    let (ui, slot, usage) = (env.ui.clone(), env.slot.clone(), env.main_usage.clone());
    let shared = env.shared.clone();
    Arc::new(move |event: &WorkerEvent| {
        if let WorkerEvent::Usage(report) = event {
            usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add_report(report, wire_api);
            // Counted here, per request, so a subagent that fails or is cancelled
            // still counts what it spent.
            shared.add_request(report);
        }
        if let Some(recorder) = recorder(&slot) {
            recorder.observe_subagent(&parent, &agent, event);
        }
        let _ = ui.send(EngineEvent::Subagent(SubagentEvent {
            parent_call_id: parent.clone(),
            agent: agent.clone(),
            event: event.clone(),
        }));
    })
}
