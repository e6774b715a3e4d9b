//! What a session's delegation tools start with (see saki-engine's `Delegation`): the
//! skills and agents found for the workspace, saki's config directory (the global
//! AGENTS.md) and `subagent_depth`. Problems with skill and agent files are alerts.

use crate::config::{self, Resolved};
use saki_engine::{Delegation, EngineEvent, Level};
use std::path::Path;

pub fn delegation(
    resolved: &Resolved,
    workspace: &Path,
    events: &tokio::sync::mpsc::UnboundedSender<EngineEvent>,
) -> Delegation {
    let global_dir = config::global_config_dir(&|k: &str| std::env::var(k).ok());
    let (skills, skill_problems) = saki_pod::skills::discover(workspace, global_dir.as_deref());
    let (agents, agent_problems) = saki_pod::agents::load(global_dir.as_deref(), workspace);
    for message in skill_problems.into_iter().chain(agent_problems) {
        let _ = events.send(EngineEvent::Alert {
            level: Level::Warn,
            message,
        });
    }
    Delegation {
        skills,
        agents,
        global_dir,
        max_depth: resolved.subagent_depth,
        // Small local models pick worse from a longer list (see `lean_tools`).
        offer_tools: !resolved.lean_tools,
    }
}

/// The system prompt's skill list for `workspace` (empty when there are none).
pub fn skills_section(workspace: &Path, global_dir: Option<&Path>) -> String {
    let (skills, _) = saki_pod::skills::discover(workspace, global_dir);
    saki_pod::skills::prompt_section(&skills)
}
