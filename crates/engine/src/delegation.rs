//! The tools that reach beyond the workspace's files: `skill`, `remember`, `ask_user`,
//! `exit_plan_mode` and `agent` (subagents), installed by [`Engine::set_delegation`]
//! once the front end knows the skills and agents; and `/skills` and `/memory`.

use crate::ask;
use crate::protocol::{EngineEvent, Level, SubagentEvent};
use crate::subagent::{AgentTool, SubagentEnv};
use crate::Engine;
use saki_llm_client::ClientError;
use saki_llm_worker::{Tool, TurnOutcome, WorkerEvent};
use saki_pod::agents::AgentDef;
use saki_pod::skills::Skill;
use std::path::PathBuf;
use std::sync::Arc;

/// What the engine needs for these tools.
#[derive(Debug, Clone, Default)]
pub struct Delegation {
    /// The session's skills (`saki_pod::skills::discover`).
    pub skills: Vec<Skill>,
    /// The agents the `agent` tool offers (`saki_pod::agents::load`).
    pub agents: Vec<AgentDef>,
    /// saki's config directory (`~/.config/saki`): the global AGENTS.md is there.
    pub global_dir: Option<PathBuf>,
    /// How many levels of subagents may run (1: subagents start none).
    pub max_depth: u32,
    /// Offer the tools to the model (a lean tool set for a small model leaves them out;
    /// `/skills` and `/memory` still work).
    pub offer_tools: bool,
}

impl Engine {
    /// Installs the tools (see the module doc). Call once, after [`Engine::new`].
    pub fn set_delegation(&mut self, delegation: Delegation) {
        if delegation.offer_tools {
            let tools = self.delegation_tools(&delegation);
            if let Err(e) = self.worker.shared_tools().register_all(tools) {
                tracing::warn!(error = %e, "the delegation tools could not be added");
            }
        }
        self.delegation = Some(Arc::new(delegation));
    }

    fn delegation_tools(&mut self, delegation: &Delegation) -> Vec<Arc<dyn Tool>> {
        let cap = self.workspace.output_cap();
        let root = self.workspace.root().to_path_buf();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if !delegation.skills.is_empty() {
            tools.push(saki_tools::capped::wrap(
                Arc::new(saki_pod::skill_tool::SkillTool::new(Arc::new(
                    delegation.skills.clone(),
                ))),
                cap,
            ));
        }
        tools.push(saki_tools::capped::wrap(
            Arc::new(saki_pod::memory::Remember::new(
                root,
                delegation.global_dir.clone(),
            )),
            cap,
        ));
        tools.push(saki_tools::capped::wrap_async(
            Arc::new(ask::AskUser(self.ui.clone())),
            cap,
        ));
        let (gate, exit) = ask::exit_plan_mode(self.ui.clone(), self.mode.clone());
        self.worker.add_interceptor(Arc::new(gate));
        tools.push(saki_tools::capped::wrap_async(Arc::new(exit), cap));
        if delegation.max_depth > 0 && !delegation.agents.is_empty() {
            let shared = crate::subagent::Shared::new(
                self.settings.worker.clone(),
                self.settings.fast_model.clone(),
            );
            self.subagents = Some(shared.clone());
            let env = SubagentEnv {
                client: self.worker.client().clone(),
                shared,
                system_prompt: self
                    .worker
                    .config()
                    .system_prompt
                    .clone()
                    .unwrap_or_default(),
                tools: self.worker.shared_tools(),
                agents: delegation.agents.clone(),
                mode: self.mode.clone(),
                grants: self.grants.clone(),
                approver: self.approver.clone(),
                workspace: self.workspace.clone(),
                hooks: self.hooks.clone(),
                checkpoints: self.checkpoints.is_on().then(|| {
                    Arc::new(self.checkpoints.clone()) as Arc<dyn saki_llm_worker::Interceptor>
                }),
                batch_ids: self.worker.batch_ids(),
                ui: self.ui.clone(),
                slot: self.slot.clone(),
                main_usage: self.main_usage.clone(),
                max_depth: delegation.max_depth,
            };
            tools.push(saki_tools::capped::wrap_async(
                Arc::new(AgentTool::new(Arc::new(env), 1)),
                cap,
            ));
        }
        tools
    }

    /// A turn's outcome with its subagents' usage and requests added: they ran for it.
    pub(crate) fn with_subagent_usage(
        &self,
        outcome: Result<TurnOutcome, ClientError>,
    ) -> Result<TurnOutcome, ClientError> {
        let Some(shared) = &self.subagents else {
            return outcome;
        };
        // Taken whatever the outcome, so a failed turn's subagents never count twice.
        let (usage, requests) = shared.take_turn();
        outcome.map(|mut o| {
            crate::subagent::add_usage(&mut o.usage, &usage);
            o.requests += requests;
            o
        })
    }

    /// `/skills`.
    pub(crate) fn list_skills(&self) {
        let skills = self
            .delegation
            .as_ref()
            .map(|d| d.skills.as_slice())
            .unwrap_or_default();
        self.alert(Level::Info, saki_pod::skills::report(skills));
    }

    /// `/memory`.
    pub(crate) fn list_memory(&self) {
        let root = self.workspace.root();
        let cwd = std::env::current_dir()
            .ok()
            .filter(|c| c.starts_with(root))
            .unwrap_or_else(|| root.to_path_buf());
        let global = self.delegation.as_ref().and_then(|d| d.global_dir.clone());
        self.alert(
            Level::Info,
            saki_pod::memory::report(root, &cwd, global.as_deref()),
        );
    }

    /// After a resumed session's history: its subagents' items, as the events they were.
    pub(crate) fn replay_subagents(&self, log: &std::path::Path) {
        for recorded in saki_pod::subagent_log::load(log) {
            self.send(EngineEvent::Subagent(SubagentEvent {
                parent_call_id: recorded.parent_call_id,
                agent: recorded.agent,
                event: WorkerEvent::Committed(recorded.item),
            }));
        }
    }
}
