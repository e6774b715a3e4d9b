//! Subagents and the session around them, through the mock provider: their tokens count
//! toward the turn that called them, and a later `/model` reaches them.
#![allow(clippy::unwrap_used)]

use crate::harness::{call, settings, turn_finished, unstarted, Harness};
use crate::{Action, Delegation, EngineEvent, ModelResolver, Settings, TurnEnd};
use saki_llm_worker::TurnOutcome;
use saki_pod::agents::AgentDef;
use saki_testkit::{MockServer, Turn};
use saki_tools::ApprovalMode;
use serde_json::json;
use std::sync::Arc;

/// The session's models as `/model` names them; the fast one stays `fast` unless named.
struct Resolver;

impl ModelResolver for Resolver {
    fn resolve(&self, model: Option<&str>, fast: Option<&str>) -> Result<Settings, String> {
        let mut s = settings();
        if let Some(model) = model {
            s.worker.model = model.to_owned();
        }
        if let Some(fast) = fast {
            s.fast_model = fast.to_owned();
        }
        Ok(s)
    }
}

fn start(server: &MockServer) -> Harness {
    let (mut engine, actions, harness) = unstarted(
        server,
        ApprovalMode::Default,
        false,
        |_| {},
        |_| {},
        Vec::new(),
    );
    engine.resolver = Some(Arc::new(Resolver));
    let mut agents = saki_pod::agents::built_in();
    // A custom agent on the fast model (Claude Code's `model: haiku`).
    let quick = AgentDef {
        name: "quick".into(),
        model: Some("fast".into()),
        ..agents[0].clone()
    };
    agents.push(quick);
    engine.set_delegation(Delegation {
        agents,
        max_depth: 1,
        offer_tools: true,
        ..Delegation::default()
    });
    tokio::spawn(engine.run(actions));
    harness
}

fn agent_call(id: &str, agent: &str) -> Turn {
    call(
        id,
        "agent",
        json!({"description": "look", "prompt": "Where is main?", "agent": agent}),
    )
}

async fn turn(h: &mut Harness, text: &str) -> TurnOutcome {
    h.send(Action::Submit { text: text.into() });
    match h.until(turn_finished).await.pop() {
        Some(EngineEvent::TurnFinished {
            end: TurnEnd::Turn(Ok(outcome)),
            ..
        }) => outcome,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_tokens_count_toward_the_turn_that_called_it() {
    let server = MockServer::start().unwrap();
    server.push(agent_call("call_a", "explore").with_usage(50, 5));
    server.push(Turn::text("main is in src/main.rs").with_usage(100, 10));
    server.push(Turn::text("It is in src/main.rs.").with_usage(70, 7));
    server.push(Turn::text("Nothing else.").with_usage(1, 1));
    let mut h = start(&server);
    let outcome = turn(&mut h, "find main").await;
    assert_eq!(
        outcome.requests, 3,
        "two of the session's, one of the subagent's"
    );
    assert_eq!(outcome.usage.input_tokens, Some(220));
    assert_eq!(outcome.usage.output_tokens, Some(22));
    // Counted once: the next turn starts from its own requests.
    let next = turn(&mut h, "anything else?").await;
    assert_eq!(next.requests, 1);
    assert_eq!(next.usage.input_tokens, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_model_switch_reaches_subagents() {
    let server = MockServer::start().unwrap();
    for id in ["call_a", "call_b"] {
        server.push(
            agent_call(id, "general").with_tool_call(
                format!("{id}_quick"),
                "agent",
                json!({"description": "look", "prompt": "Where is main?", "agent": "quick"})
                    .to_string(),
            ),
        );
        server.push(Turn::text("found it"));
        server.push(Turn::text("found it"));
        server.push(Turn::text("Done."));
    }
    let mut h = start(&server);
    turn(&mut h, "find main").await;
    for (model, fast) in [("bigger", false), ("tiny", true)] {
        h.send(Action::SetModel {
            model: model.into(),
            fast,
        });
        h.until(|e| matches!(e, EngineEvent::Alert { message, .. } if message.contains(model)))
            .await;
    }
    turn(&mut h, "find main again").await;
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_owned())
        .collect();
    // Before: the session's model for `general`, the fast one for `quick` (the two run
    // in parallel, so their order is either); after: the models `/model` chose.
    let mut before = models[1..3].to_vec();
    before.sort();
    assert_eq!(before, ["fast", "main"], "{models:?}");
    let mut after = models[5..7].to_vec();
    after.sort();
    assert_eq!(after, ["bigger", "tiny"], "{models:?}");
    assert_eq!(models[4], "bigger", "{models:?}");
}
