//! The model's checklist (`update_plan`) as engine events: the tool itself is stateless
//! and its arguments are history, so the engine reports a plan when a call to it
//! succeeds, and the plan history holds when history is replaced (`/new`, `/resume`, a
//! resumed session). Front ends only render [`EngineEvent::Plan`].

use crate::protocol::EngineEvent;
use crate::Engine;
use saki_llm_worker::{Item, ToolResultStatus, WorkerEvent};
use saki_tools::plan::{latest_plan, Plan, TOOL_NAME};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Follows committed items: a call's arguments wait for its result, and only a call that
/// succeeded is the plan (a denied or failed one never was shown to anyone).
#[derive(Default)]
pub struct PlanTracker {
    calls: Mutex<HashMap<String, String>>,
}

impl PlanTracker {
    /// The plan `event` makes current, if any.
    pub fn observe(&self, event: &WorkerEvent) -> Option<Plan> {
        match event {
            WorkerEvent::Committed(item) => self.item(item),
            // An accepted speculation: its items arrive together, calls with results.
            WorkerEvent::CommittedMany(items) => latest_plan(items),
            _ => None,
        }
    }

    fn item(&self, item: &Item) -> Option<Plan> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        match item {
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } if name == TOOL_NAME => {
                calls.insert(ctx.call_id.clone(), arguments.clone());
                None
            }
            Item::ToolResult {
                name, status, ctx, ..
            } if name == TOOL_NAME => {
                let arguments = calls.remove(&ctx.call_id)?;
                if *status != ToolResultStatus::Success {
                    return None;
                }
                match Plan::from_arguments(&arguments) {
                    Ok(plan) => Some(plan),
                    Err(e) => {
                        // The tool accepted it, so this cannot happen unless the two disagree.
                        tracing::warn!(error = %e, "a successful update_plan call is unreadable");
                        None
                    }
                }
            }
            _ => None,
        }
    }
}

impl Engine {
    /// Replaces the front end's history, and tells it the plan that history holds.
    pub(crate) fn send_history(&self, items: Vec<Item>) {
        let plan = latest_plan(&items).unwrap_or_default();
        self.send(EngineEvent::History(items));
        self.send(EngineEvent::Plan {
            plan,
            restored: true,
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use saki_llm_worker::ToolExecutionContext;

    fn ctx(id: &str) -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: id.into(),
            batch_id: "batch_1".into(),
            call_index: 0,
        }
    }

    fn call(id: &str, arguments: &str) -> WorkerEvent {
        WorkerEvent::Committed(Item::ToolCall {
            name: TOOL_NAME.into(),
            arguments: arguments.into(),
            signature: None,
            ctx: ctx(id),
        })
    }

    fn result(id: &str, status: ToolResultStatus) -> WorkerEvent {
        WorkerEvent::Committed(Item::ToolResult {
            name: TOOL_NAME.into(),
            content: "Plan updated.".into(),
            status,
            ctx: ctx(id),
        })
    }

    #[test]
    fn a_plan_is_reported_when_its_call_succeeds() {
        let tracker = PlanTracker::default();
        let args = r#"{"plan":[{"step":"a","status":"in_progress"}]}"#;
        assert_eq!(tracker.observe(&call("c1", args)), None);
        let plan = tracker
            .observe(&result("c1", ToolResultStatus::Success))
            .unwrap();
        assert_eq!(plan.summary(), "0/1 done");
        // Denied: no plan; a result without its call: none either.
        assert_eq!(tracker.observe(&call("c2", args)), None);
        assert_eq!(
            tracker.observe(&result("c2", ToolResultStatus::Denied)),
            None
        );
        assert_eq!(
            tracker.observe(&result("c9", ToolResultStatus::Success)),
            None
        );
    }

    fn plan_of(event: &EngineEvent) -> Option<(&Plan, bool)> {
        match event {
            EngineEvent::Plan { plan, restored } => Some((plan, *restored)),
            _ => None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_plan_is_reported_cleared_by_new_and_restored_by_resume() {
        use crate::harness::{start, turn_finished};
        use crate::Action;
        use saki_testkit::{MockServer, Turn};
        let server = MockServer::start().unwrap();
        let args = r#"{"plan":[{"step":"look","status":"completed"},{"step":"fix","status":"in_progress"}]}"#;
        server.push(Turn::new().with_tool_call("p1", TOOL_NAME, args));
        server.push(Turn::text("Working on it."));
        // Plan mode: the checklist is read-only, so it runs unasked there too.
        let mut h = start(&server, saki_tools::ApprovalMode::Plan, false);
        h.send(Action::Submit {
            text: "fix it".into(),
        });
        let events = h.until(turn_finished).await;
        let plans: Vec<_> = events.iter().filter_map(plan_of).collect();
        assert_eq!(plans.len(), 1, "{events:?}");
        assert_eq!(plans[0].0.checklist(), "- [x] look\n- [~] fix");
        assert!(!plans[0].1);

        h.send(Action::NewSession);
        let events = h.until(|e| plan_of(e).is_some()).await;
        let (cleared, restored) = plan_of(events.last().unwrap()).unwrap();
        assert!(cleared.is_empty() && restored);

        h.send(Action::ListSessions);
        let listed = h.until(|e| matches!(e, EngineEvent::Sessions(_))).await;
        let Some(EngineEvent::Sessions(sessions)) = listed.last() else {
            unreachable!()
        };
        h.send(Action::Resume {
            id: sessions[0].id.clone(),
        });
        let events = h.until(|e| plan_of(e).is_some()).await;
        let (plan, restored) = plan_of(events.last().unwrap()).unwrap();
        assert!(restored);
        assert_eq!(plan.summary(), "1/2 done");
    }
}
