//! The delegation tools through the mock provider: subagents, skills, ask_user,
//! exit_plan_mode and remember.
#![allow(clippy::unwrap_used)]

use crate::harness::{call, turn_finished, unstarted, Harness};
use crate::{Action, Delegation, EngineEvent, QuestionKind, TurnEnd};
use saki_llm_worker::{Item, ToolResultStatus, TurnStatus, WorkerEvent};
use saki_testkit::{Gate, MockServer, Turn};
use saki_tools::{Approval, ApprovalMode};
use serde_json::{json, Value};

fn start(server: &MockServer, mode: ApprovalMode, delegation: Delegation) -> Harness {
    let (mut engine, actions, harness) = unstarted(server, mode, false, |_| {}, |_| {}, Vec::new());
    engine.set_delegation(delegation);
    tokio::spawn(engine.run(actions));
    harness
}

fn agents() -> Delegation {
    Delegation {
        agents: saki_pod::agents::built_in(),
        max_depth: 1,
        offer_tools: true,
        ..Delegation::default()
    }
}

/// The result committed for `call_id` in the main loop.
fn result_of(events: &[EngineEvent], call_id: &str) -> (String, ToolResultStatus) {
    events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Worker(WorkerEvent::Committed(Item::ToolResult {
                content,
                status,
                ctx,
                ..
            })) if ctx.call_id == call_id => Some((content.clone(), *status)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id} in {events:?}"))
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn agent_call(id: &str, agent: &str, prompt: &str) -> Turn {
    call(
        id,
        "agent",
        json!({"description": "look around", "prompt": prompt, "agent": agent}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_starts_fresh_with_its_agents_tools_and_its_answer_is_the_result() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Hello."));
    server.push(agent_call("call_a", "explore", "Where is main defined?"));
    server.push(Turn::text("main is in src/main.rs:1").with_usage(100, 10));
    server.push(Turn::text("It is in src/main.rs."));
    let mut h = start(&server, ApprovalMode::Default, agents());
    h.send(Action::Submit {
        text: "earlier prompt".into(),
    });
    h.until(turn_finished).await;
    h.send(Action::Submit {
        text: "find main".into(),
    });
    let events = h.until(turn_finished).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let main = &requests[1].body;
    assert!(tool_names(main).contains(&"agent".to_owned()));
    let sub = &requests[2].body;
    let messages = sub["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "system prompt and the task only: {messages:?}"
    );
    assert_eq!(messages[1]["content"], "Where is main defined?");
    assert!(!sub.to_string().contains("earlier prompt"), "fresh context");
    assert!(messages[0]["content"].as_str().unwrap().contains("explore"));
    let mut tools = tool_names(sub);
    tools.sort();
    assert_eq!(tools, ["glob", "grep", "ls", "read_file", "shell"]);
    let (content, status) = result_of(&events, "call_a");
    assert_eq!(
        (content.as_str(), status),
        ("main is in src/main.rs:1", ToolResultStatus::Success)
    );
    assert!(requests[3]
        .body
        .to_string()
        .contains("main is in src/main.rs:1"));
    // Its items went to the front end under the parent call, not into history.
    let sub_items: Vec<&Item> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Subagent(s) if s.parent_call_id == "call_a" && s.agent == "explore" => {
                match &s.event {
                    WorkerEvent::Committed(item) => Some(item),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    assert!(
        matches!(sub_items.first(), Some(Item::User { text }) if text == "Where is main defined?")
    );
    assert!(
        matches!(sub_items.last(), Some(Item::AssistantText { text }) if text == "main is in src/main.rs:1")
    );
    assert!(events.iter().any(
        |e| matches!(e, EngineEvent::Subagent(s) if matches!(s.event, WorkerEvent::Usage(_)))
    ));

    // Resume shows them again, under the same call.
    let id = {
        h.send(Action::ListSessions);
        let listed = h.until(|e| matches!(e, EngineEvent::Sessions(_))).await;
        let Some(EngineEvent::Sessions(s)) = listed.last() else {
            unreachable!()
        };
        s[0].id.clone()
    };
    h.send(Action::NewSession);
    h.until(|e| matches!(e, EngineEvent::History(_))).await;
    h.send(Action::Resume { id });
    let resumed = h
        .until(
            |e| matches!(e, EngineEvent::Alert { message, .. } if message.starts_with("resumed")),
        )
        .await;
    let history = resumed
        .iter()
        .find_map(|e| match e {
            EngineEvent::History(items) => Some(items.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!history
        .iter()
        .any(|i| matches!(i, Item::User { text } if text == "Where is main defined?")));
    let replayed = resumed
        .iter()
        .filter(|e| matches!(e, EngineEvent::Subagent(s) if s.parent_call_id == "call_a"))
        .count();
    assert_eq!(replayed, sub_items.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_calls_of_one_response_run_in_parallel() {
    let server = MockServer::start().unwrap();
    server.push(agent_call("call_1", "explore", "task one").with_tool_call(
        "call_2",
        "agent",
        json!({"description": "b", "prompt": "task two", "agent": "general"}).to_string(),
    ));
    // The first subagent's answer is held until both subagents have sent their request:
    // the second could not have started if they ran one after the other.
    let gate = Gate::new();
    server.push(Turn::text("answer A").hold(&gate));
    server.push(Turn::text("answer B"));
    server.push(Turn::text("Both done."));
    let mut h = start(&server, ApprovalMode::Default, agents());
    h.send(Action::Submit { text: "go".into() });
    server.wait_for_requests(3).await;
    gate.open();
    let events = h.until(turn_finished).await;
    let mut answers = vec![
        result_of(&events, "call_1").0,
        result_of(&events, "call_2").0,
    ];
    answers.sort();
    assert_eq!(answers, ["answer A", "answer B"]);
    // `general` gets every tool but leaving plan mode, and (depth 1) no agent of its own.
    let requests = server.requests();
    let general = requests[1..3]
        .iter()
        .find(|r| r.body.to_string().contains("task two"))
        .unwrap();
    let tools = tool_names(&general.body);
    assert!(tools.contains(&"write_file".to_owned()) && tools.contains(&"ask_user".to_owned()));
    assert!(!tools.contains(&"agent".to_owned()) && !tools.contains(&"exit_plan_mode".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_running_subagents() {
    let server = MockServer::start().unwrap();
    server.push(agent_call("call_1", "explore", "slow task"));
    server.push(Turn::text("partial answer that never ends").stall_after(2));
    server.push(Turn::text("After the cancel."));
    let mut h = start(&server, ApprovalMode::Default, agents());
    h.send(Action::Submit { text: "go".into() });
    h.until(|e| matches!(e, EngineEvent::Worker(WorkerEvent::ToolStarted { name, .. }) if name == "agent"))
        .await;
    server.wait_for_requests(2).await;
    h.send(Action::Cancel);
    let events = h.until(turn_finished).await;
    assert!(matches!(
        events.last(),
        Some(EngineEvent::TurnFinished { end: TurnEnd::Turn(Ok(o)), .. }) if o.status == TurnStatus::Cancelled
    ));
    assert_eq!(result_of(&events, "call_1").1, ToolResultStatus::Cancelled);
    // Nothing more was asked of the model; the next turn gets the next reply.
    assert_eq!(server.requests().len(), 2);
    h.send(Action::Submit {
        text: "again".into(),
    });
    let next = h.until(turn_finished).await;
    assert!(next.iter().any(|e| matches!(e,
        EngineEvent::Worker(WorkerEvent::Committed(Item::AssistantText { text })) if text == "After the cancel.")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_waits_for_the_answer_and_fails_when_nobody_can_answer() {
    let server = MockServer::start().unwrap();
    server.push(call(
        "q1",
        "ask_user",
        json!({"question": "Which colour?", "options": ["red", "blue"]}),
    ));
    server.push(call("q2", "ask_user", json!({"question": "And the size?"})));
    server.push(Turn::text("Blue it is."));
    let mut h = start(&server, ApprovalMode::Default, agents());
    h.send(Action::Submit {
        text: "paint".into(),
    });
    let mut events = Vec::new();
    for answer in [Some("blue"), None] {
        let mut asked = h.until(|e| matches!(e, EngineEvent::Question(_))).await;
        let Some(EngineEvent::Question(request)) = asked.pop() else {
            unreachable!()
        };
        events.extend(asked);
        assert_eq!(request.kind, QuestionKind::Ask);
        assert!(request.free_text);
        match answer {
            Some(text) => {
                assert_eq!(request.options, ["red", "blue"]);
                request.reply.send(Some(text.to_owned())).unwrap();
            }
            // Dropping the request is what a front end that cannot ask does.
            None => drop(request),
        }
    }
    events.extend(h.until(turn_finished).await);
    assert_eq!(result_of(&events, "q1").0, "The person answered: blue");
    let (failed, status) = result_of(&events, "q2");
    assert_eq!(status, ToolResultStatus::Error);
    assert!(failed.contains("no person can answer"), "{failed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_plan_mode_switches_the_mode_or_ends_the_turn_with_the_plan() {
    let server = MockServer::start().unwrap();
    server.push(call(
        "p1",
        "exit_plan_mode",
        json!({"plan": "1. edit a.rs"}),
    ));
    server.push(Turn::text("Carrying it out."));
    server.push(call(
        "p2",
        "exit_plan_mode",
        json!({"plan": "2. edit b.rs"}),
    ));
    server.push(Turn::text("never sent"));
    let mut h = start(&server, ApprovalMode::Plan, agents());
    h.send(Action::Submit {
        text: "plan it".into(),
    });
    let asked = h.until(|e| matches!(e, EngineEvent::Question(_))).await;
    let Some(EngineEvent::Question(request)) = asked.into_iter().last() else {
        unreachable!()
    };
    assert_eq!(
        request.kind,
        QuestionKind::LeavePlan {
            plan: "1. edit a.rs".into()
        }
    );
    assert_eq!(request.options, crate::LEAVE_PLAN_OPTIONS);
    request.reply.send(Some("auto-edit".into())).unwrap();
    let events = h.until(turn_finished).await;
    assert!(result_of(&events, "p1")
        .0
        .contains("switched to auto-edit mode"));
    let status = h.until(|e| matches!(e, EngineEvent::Status(_))).await;
    assert!(
        matches!(status.last(), Some(EngineEvent::Status(s)) if s.approval == Some(ApprovalMode::AutoEdit))
    );

    // Back in plan mode, with nobody to answer: the turn ends with the plan.
    h.send(Action::SetApproval(ApprovalMode::Plan));
    h.send(Action::Submit {
        text: "plan more".into(),
    });
    let asked = h.until(|e| matches!(e, EngineEvent::Question(_))).await;
    drop(asked);
    let events = h.until(turn_finished).await;
    assert!(matches!(
        events.last(),
        Some(EngineEvent::TurnFinished { end: TurnEnd::Turn(Ok(o)), .. }) if matches!(o.status, TurnStatus::Stopped { .. })
    ));
    assert_eq!(server.requests().len(), 3, "no request after the plan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_appends_only_once_approved() {
    let server = MockServer::start().unwrap();
    server.push(call("r1", "remember", json!({"fact": "Use tabs."})));
    server.push(call("r2", "remember", json!({"fact": "Never this."})));
    server.push(Turn::text("Noted."));
    let mut h = start(&server, ApprovalMode::Default, agents());
    h.send(Action::Submit {
        text: "remember tabs".into(),
    });
    for answer in [Approval::Once, Approval::Deny("no".into())] {
        let asked = h.until(|e| matches!(e, EngineEvent::Approval(_))).await;
        let Some(EngineEvent::Approval(request)) = asked.into_iter().last() else {
            unreachable!()
        };
        assert_eq!(request.call.name, "remember");
        assert_eq!(
            request.why.as_deref(),
            Some("appends to the project's AGENTS.md")
        );
        request.reply.send(answer).unwrap();
    }
    h.until(turn_finished).await;
    let agents_md = std::fs::read_to_string(h.ws.path().join("AGENTS.md")).unwrap();
    assert_eq!(agents_md, "- Use tabs.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_load_on_demand_and_are_listed() {
    let server = MockServer::start().unwrap();
    server.push(call("s1", "skill", json!({"name": "pdf"})));
    server.push(Turn::text("Done."));
    let skills_home = tempfile::tempdir().unwrap();
    let dir = skills_home.path().join(".claude/skills/pdf");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: pdf\ndescription: Fill PDF forms\n---\nUse pdftk to fill forms.",
    )
    .unwrap();
    let (skills, _) = saki_pod::skills::discover(skills_home.path(), None);
    let mut h = start(
        &server,
        ApprovalMode::Default,
        Delegation { skills, ..agents() },
    );
    h.send(Action::ListSkills);
    let listed = h.until(|e| matches!(e, EngineEvent::Alert { .. })).await;
    assert!(
        matches!(listed.last(), Some(EngineEvent::Alert { message, .. }) if message.contains("pdf — Fill PDF forms"))
    );
    h.send(Action::Submit {
        text: "fill the form".into(),
    });
    let events = h.until(turn_finished).await;
    let first = &server.requests()[0].body;
    assert!(
        !first.to_string().contains("Use pdftk"),
        "the body waits until asked for"
    );
    assert!(result_of(&events, "s1")
        .0
        .contains("Use pdftk to fill forms."));
    h.send(Action::ListMemory);
    let memory = h.until(|e| matches!(e, EngineEvent::Alert { .. })).await;
    assert!(
        matches!(memory.last(), Some(EngineEvent::Alert { message, .. }) if message.contains("remember writes to"))
    );
}
