//! Subagents' items in a session log: `{"type": "subagent", "parent_call_id", "agent",
//! "item"}` lines ([`crate::SessionWriter::append_subagent`]), which the history loader
//! skips (they were never in the conversation) and [`load`] reads back for display.

use saki_llm_worker::Item;
use serde::Deserialize;
use std::path::Path;

/// One recorded item of a subagent.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentItem {
    pub parent_call_id: String,
    pub agent: String,
    pub item: Item,
}

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    parent_call_id: String,
    agent: String,
    item: Item,
}

/// The subagent items of the session log at `path`, in order (unreadable lines and
/// other records are skipped: the history loader reports those).
pub fn load(path: &Path) -> Vec<SubagentItem> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        // Cheap first look: most lines are not subagent lines.
        .filter(|line| line.contains("\"subagent\""))
        .filter_map(|line| serde_json::from_str::<Line>(line).ok())
        .filter(|line| line.kind == "subagent")
        .map(|line| SubagentItem {
            parent_call_id: line.parent_call_id,
            agent: line.agent,
            item: line.item,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionStore;

    #[test]
    fn subagent_items_are_kept_apart_from_history() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let mut writer = store.create("/ws", "p", "m", "t", None).unwrap();
        writer.append(&Item::user("main")).unwrap();
        writer
            .append_subagent(
                "call_1",
                "explore",
                &[
                    Item::user("task"),
                    Item::AssistantText {
                        text: "found".into(),
                    },
                ],
            )
            .unwrap();
        let id = writer.meta().id.clone();
        drop(writer);
        let loaded = store.load(&id).unwrap();
        assert_eq!(loaded.items, vec![Item::user("main")]);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let sub = load(&loaded.path);
        assert_eq!(sub.len(), 2);
        assert_eq!(
            (sub[1].parent_call_id.as_str(), sub[1].agent.as_str()),
            ("call_1", "explore")
        );
    }
}
