#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The engine against the mock provider: streaming, approvals with session grants and
//! denial reasons, cancellation, sessions, prewarm, and Tab-to-accept speculation.

use crate::harness::{
    call, hook, push_notes_plan, start, start_hooked, start_with, turn_finished, unstarted,
};
use crate::{Action, EngineEvent, Level, SpecState};
use saki_llm_worker::{Item, TextBlockEvent, ToolResultStatus, WorkerEvent};
use saki_testkit::{Gate, MockServer, Turn};
use saki_tools::{Approval, ApprovalMode};
use serde_json::json;

/// A first turn (two assistant messages, so a suggestion is allowed), its suggestion
/// "add notes.txt", the speculation that writes notes.txt, and the pipelined suggestion.
fn notes_plan() -> MockServer {
    let server = MockServer::start().unwrap();
    push_notes_plan(&server);
    server.push(Turn::text("show notes.txt"));
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_then_its_suggestion_is_speculated_and_accepted_on_submit() {
    let server = notes_plan();
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    let turn = h.until(turn_finished).await;
    let started = turn
        .iter()
        .position(|e| matches!(e, EngineEvent::TurnStarted));
    let streamed = turn
        .iter()
        .position(|e| matches!(e, EngineEvent::Text(TextBlockEvent::Delta(_))));
    assert!(started.is_some() && started < streamed, "{turn:?}");
    assert!(turn
        .iter()
        .any(|e| matches!(e, EngineEvent::Worker(WorkerEvent::Committed(Item::User { text })) if text == "hello")));
    let (_, suggestion) = h.show_suggestion().await;
    assert_eq!(suggestion, "add notes.txt");
    h.until(|e| matches!(e, EngineEvent::Speculation(SpecState::Ready)))
        .await;
    assert!(
        !h.ws.path().join("notes.txt").exists(),
        "speculation stays in its overlay"
    );

    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let accepted = h.until(|e| matches!(e, EngineEvent::Accepted { .. })).await;
    let Some(EngineEvent::Accepted {
        items,
        files,
        pipelined,
        ..
    }) = accepted.last()
    else {
        unreachable!()
    };
    assert_eq!(files, &vec!["notes.txt".to_owned()]);
    let (items, pipelined) = (items.clone(), pipelined.clone());
    assert_eq!(h.next_suggestion(pipelined).await, "show notes.txt");
    assert!(matches!(&items[0], Item::User { text } if text == "add notes.txt"));
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::AssistantText { text } if text == "Added notes.txt.")));
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("notes.txt")).unwrap(),
        "hi\n"
    );
    let requests = server.requests();
    assert!(
        requests[2..].iter().all(|r| r.body["model"] == "fast"),
        "accepting runs no normal turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_that_cannot_apply_writes_nothing_and_keeps_the_overlay_until_the_person_decides()
{
    let server = notes_plan();
    server.push(Turn::text("Ran it normally."));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(|e| matches!(e, EngineEvent::Speculation(SpecState::Ready)))
        .await;
    server.wait_for_requests(6).await;
    // The person creates the file the speculation wrote, before accepting.
    std::fs::write(h.ws.path().join("notes.txt"), "mine\n").unwrap();
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let events = h.until(turn_finished).await;
    let Some(EngineEvent::TurnFinished {
        note: Some((level, note)),
        ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*level, Level::Warn);
    assert!(
        note.contains("notes.txt: not applied: it was created since")
            && note.contains("no file was changed")
            && note.contains("send it again"),
        "{note}"
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, EngineEvent::Accepted { .. } | EngineEvent::TurnStarted)));
    assert_eq!(server.requests().len(), 6, "the prompt did not run");
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("notes.txt")).unwrap(),
        "mine\n",
        "the person's file is left alone"
    );
    let kept = note.split("kept in ").nth(1).unwrap();
    let kept = std::path::PathBuf::from(kept.split(';').next().unwrap());
    assert_eq!(
        std::fs::read_to_string(kept.join("notes.txt")).unwrap(),
        "hi\n"
    );
    std::fs::remove_dir_all(kept).unwrap();

    // The person decides: sent again, it runs as a normal turn on the files as they are.
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let events = h.until(turn_finished).await;
    assert!(events.iter().any(|e| matches!(e, EngineEvent::TurnStarted)));
    let normal = &server.requests()[6].body;
    assert_eq!(normal["model"], "main");
    assert!(normal["messages"].to_string().contains("add notes.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_grant_covers_the_prefix_and_a_denial_reason_reaches_the_model() {
    let server = MockServer::start().unwrap();
    server.push(call("c1", "shell", json!({"command": "touch a.txt"})));
    server.push(call("c2", "shell", json!({"command": "touch b.txt"})));
    server.push(call("c3", "shell", json!({"command": "rm a.txt"})));
    server.push(Turn::text("Understood, I left a.txt alone."));
    let mut h = start(&server, ApprovalMode::Default, false);
    h.send(Action::Submit {
        text: "make files".into(),
    });
    let first = h.until(|e| matches!(e, EngineEvent::Approval(_))).await;
    let Some(EngineEvent::Approval(request)) = first.into_iter().last() else {
        unreachable!()
    };
    assert_eq!(request.grant_label.as_deref(), Some("touch …"));
    request.reply.send(Approval::Session).unwrap();
    // `touch b.txt` is covered by the grant; `rm a.txt` is asked about.
    let second = h.until(|e| matches!(e, EngineEvent::Approval(_))).await;
    let Some(EngineEvent::Approval(request)) = second.into_iter().last() else {
        unreachable!()
    };
    assert_eq!(request.call.input["command"], "rm a.txt");
    request
        .reply
        .send(Approval::Deny(
            "the person denied this call: keep it".into(),
        ))
        .unwrap();
    let rest = h.until(turn_finished).await;
    assert!(rest.iter().any(|e| matches!(e,
        EngineEvent::Worker(WorkerEvent::Committed(Item::ToolResult { status: ToolResultStatus::Denied, content, .. }))
            if content.contains("keep it"))));
    assert!(h.ws.path().join("a.txt").exists() && h.ws.path().join("b.txt").exists());
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("keep it"), "the reason is sent to the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_stalled_turn_and_the_next_turn_runs() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("This answer never ends").stall_after(2));
    server.push(Turn::text("Fresh answer."));
    let mut h = start(&server, ApprovalMode::Default, false);
    h.send(Action::Submit { text: "go".into() });
    h.until(|e| matches!(e, EngineEvent::Text(TextBlockEvent::Delta(_))))
        .await;
    h.send(Action::Cancel);
    let end = h.until(turn_finished).await;
    let Some(EngineEvent::TurnFinished { note, .. }) = end.last() else {
        unreachable!()
    };
    assert_eq!(note, &Some((Level::Info, "cancelled".to_owned())));
    h.send(Action::Submit {
        text: "again".into(),
    });
    let next = h.until(turn_finished).await;
    assert!(matches!(
        next.last(),
        Some(EngineEvent::TurnFinished { note: None, .. })
    ));
    assert!(next.iter().any(|e| matches!(e,
        EngineEvent::Worker(WorkerEvent::Committed(Item::AssistantText { text })) if text == "Fresh answer.")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_change_discards_a_ready_speculation() {
    let server = notes_plan();
    server.push(Turn::text("I would need to write notes.txt; may I?"));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(|e| matches!(e, EngineEvent::Speculation(SpecState::Ready)))
        .await;
    server.wait_for_requests(6).await;
    h.send(Action::SetApproval(ApprovalMode::Default));
    h.until(|e| matches!(e, EngineEvent::Speculation(SpecState::Idle)))
        .await;
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let turn = h.until(turn_finished).await;
    assert!(!turn
        .iter()
        .any(|e| matches!(e, EngineEvent::Accepted { .. })));
    assert!(!h.ws.path().join("notes.txt").exists());
    assert_eq!(
        server.requests().len(),
        7,
        "the suggestion ran as a normal turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_and_resume_swap_the_history_and_list_the_saved_session() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("First answer."));
    let mut h = start(&server, ApprovalMode::Default, false);
    h.send(Action::Submit {
        text: "remember me".into(),
    });
    h.until(turn_finished).await;
    h.send(Action::NewSession);
    let new = h.until(|e| matches!(e, EngineEvent::History(_))).await;
    assert!(matches!(new.last(), Some(EngineEvent::History(items)) if items.is_empty()));
    h.send(Action::ListSessions);
    let listed = h.until(|e| matches!(e, EngineEvent::Sessions(_))).await;
    let Some(EngineEvent::Sessions(sessions)) = listed.last() else {
        unreachable!()
    };
    assert_eq!(
        sessions.len(),
        1,
        "the new session has no prompt yet, so no file"
    );
    assert_eq!(sessions[0].title, "remember me");
    h.send(Action::Resume {
        id: sessions[0].id.clone(),
    });
    let resumed = h.until(|e| matches!(e, EngineEvent::History(_))).await;
    let Some(EngineEvent::History(items)) = resumed.last() else {
        unreachable!()
    };
    assert!(matches!(&items[0], Item::User { text } if text == "remember me"));
    assert!(matches!(&items[1], Item::AssistantText { text } if text == "First answer."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_is_prewarmed_with_the_exact_base_prompt() {
    let server = MockServer::start().unwrap();
    // The prewarm (held, so it is still running when the prompt arrives) and the real
    // turn.
    let held = Gate::new();
    server.push(Turn::text("x").hold(&held));
    server.push(Turn::text("hello back"));
    let mut h = start_with(&server, ApprovalMode::Default, false, |s| s.prewarm = true);
    server.wait_for_requests(1).await;
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.until(turn_finished).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one prewarm, one turn");
    let (warm, real) = (&requests[0].body, &requests[1].body);
    assert_eq!(warm["max_tokens"], 1);
    assert_eq!(
        warm["messages"][0], real["messages"][0],
        "same system prompt"
    );
    assert_eq!(warm["tools"], real["tools"], "same tools");
    assert_eq!(warm["messages"][1]["role"], "user");
    assert_eq!(warm["messages"].as_array().unwrap().len(), 2);
    assert_eq!(real["messages"][1]["content"], "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_not_known_to_cache_prompts_are_not_prewarmed() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("hello back"));
    let (mut engine, actions, mut h) = unstarted(
        &server,
        ApprovalMode::Default,
        false,
        |_| {},
        |_| {},
        Vec::new(),
    );
    // The only place a prewarm starts is behind us, and none is in flight.
    engine.warm_up();
    assert!(engine.prewarm.is_none());
    tokio::spawn(engine.run(actions));
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.until(turn_finished).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the turn's request only");
    assert_eq!(requests[0].body["messages"][1]["content"], "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_and_a_retried_server_failure_are_reported() {
    let server = MockServer::start().unwrap();
    server.push(saki_testkit::Reply::raw_sse(
        "data: {\"error\":{\"code\":500,\"message\":\"The model produced output that does not match the expected peg-native format\",\"type\":\"server_error\"}}\n\n",
    ));
    for id in ["c1", "c2"] {
        server.push(call(id, "ls", json!({"path": "."})));
    }
    server.push(Turn::text("The folder is empty."));
    let mut h = start(&server, ApprovalMode::Default, false);
    h.send(Action::Submit {
        text: "what is here?".into(),
    });
    let events = h.until(turn_finished).await;
    let alerts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Worker(
                WorkerEvent::Retrying { reason } | WorkerEvent::LoopDetected { reason },
            ) => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        alerts.iter().any(|m| m.contains("peg-native")),
        "{alerts:?}"
    );
    assert!(
        alerts
            .iter()
            .any(|m| m.contains("`ls` was called again with the same arguments")),
        "{alerts:?}"
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_a_hook_refuses_takes_its_files_with_it() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Hello."));
    let mut h = start_hooked(
        &server,
        ApprovalMode::Default,
        false,
        |_| {},
        |hooks| {
            let command = "grep -q refuse && { echo no >&2; exit 2; }; exit 0".to_owned();
            hook(
                hooks,
                saki_llm_worker::hook::HookEvent::UserPromptSubmit,
                None,
                command,
            );
        },
    );
    std::fs::write(h.ws.path().join("secret.txt"), "TOP SECRET").unwrap();
    h.send(Action::Submit {
        text: "refuse @secret.txt".into(),
    });
    let refused = h.until(turn_finished).await;
    assert!(matches!(
        refused.last(),
        Some(EngineEvent::TurnFinished {
            note: Some((Level::Warn, _)),
            ..
        })
    ));
    h.send(Action::Submit { text: "hi".into() });
    h.until(turn_finished).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the refused prompt sent nothing");
    let body = requests[0].body.to_string();
    assert!(
        !body.contains("TOP SECRET"),
        "the refused prompt's file leaked: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_command_runs_as_its_prompt_with_its_mode_for_that_turn_only() {
    let server = MockServer::start().unwrap();
    server.push(call(
        "c1",
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    ));
    server.push(Turn::text("I may not write in plan mode."));
    server.push(call(
        "c2",
        "write_file",
        json!({"path": "y.txt", "content": "y"}),
    ));
    server.push(Turn::text("Wrote y.txt."));
    let review = saki_pod::commands::parse(
        "review".into(),
        "---\ndescription: Review a file\napproval: plan\n---\nReview @$1 for bugs.",
        std::path::PathBuf::from("review.md"),
        false,
    );
    let mut h = crate::harness::start_with_commands(
        &server,
        ApprovalMode::AutoEdit,
        false,
        |_| {},
        |_| {},
        vec![review],
    );
    std::fs::write(h.ws.path().join("a.rs"), "fn main() {}").unwrap();
    h.send(Action::Submit {
        text: "/review a.rs".into(),
    });
    let turn = h.until(turn_finished).await;
    assert!(turn.iter().any(|e| matches!(
        e,
        EngineEvent::Worker(WorkerEvent::Committed(Item::ToolResult {
            status: ToolResultStatus::Denied,
            ..
        }))
    )));
    let first = server.requests()[0].body["messages"].to_string();
    assert!(first.contains("Review @a.rs for bugs."), "{first}");
    assert!(
        first.contains("[File: a.rs]") && first.contains("fn main() {}"),
        "{first}"
    );
    assert!(
        !h.ws.path().join("x.txt").exists(),
        "plan mode held for the command"
    );
    // The session's mode is back for the next turn.
    h.send(Action::Submit {
        text: "write y".into(),
    });
    h.until(turn_finished).await;
    assert!(h.ws.path().join("y.txt").exists(), "auto-edit is back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_sent_during_a_turn_runs_after_it_in_order_and_a_cancel_hands_prompts_back() {
    let server = MockServer::start().unwrap();
    let gate = Gate::new();
    server.push(Turn::text("first").hold(&gate));
    server.push(Turn::text("second"));
    let mut h = start(&server, ApprovalMode::Default, false);
    h.send(Action::Submit { text: "one".into() });
    server.wait_for_requests(1).await;
    h.send(Action::Submit { text: "two".into() });
    h.send(Action::ListMcp);
    let queued = h
        .until(|e| matches!(e, EngineEvent::Queued(p) if p == &["two".to_owned()]))
        .await;
    assert!(!queued
        .iter()
        .any(|e| matches!(e, EngineEvent::Alert { message, .. } if message.contains("busy"))));
    gate.open();
    // "one" ends, then "two" runs, then /mcp reports.
    let events = h
        .until(|e| matches!(e, EngineEvent::Alert { message, .. } if message.contains("MCP")))
        .await;
    let finished = events
        .iter()
        .filter(|e| matches!(e, EngineEvent::TurnFinished { .. }))
        .count();
    assert_eq!(finished, 2, "both turns ended before the /mcp report");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_hands_the_queued_prompts_back_unsent() {
    let server = MockServer::start().unwrap();
    let gate = Gate::new();
    server.push(Turn::text("first").hold(&gate));
    let mut h = start(&server, ApprovalMode::Default, false);
    h.send(Action::Submit { text: "one".into() });
    server.wait_for_requests(1).await;
    h.send(Action::Submit { text: "two".into() });
    h.until(|e| matches!(e, EngineEvent::Queued(p) if !p.is_empty()))
        .await;
    h.send(Action::Cancel);
    let events = h
        .until(|e| matches!(e, EngineEvent::TurnFinished { .. }))
        .await;
    assert!(events
        .iter()
        .any(|e| matches!(e, EngineEvent::Unqueued(p) if p == &["two".to_owned()])));
    gate.open();
    h.send(Action::Sync(7));
    h.until(|e| matches!(e, EngineEvent::Synced(7))).await;
    assert_eq!(
        server.requests().len(),
        1,
        "the handed-back prompt was not sent"
    );
}
