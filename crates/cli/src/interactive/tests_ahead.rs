#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Reading ahead in the engine against the mock provider: accepts in a row, what the
//! person sees of them, and the background work's timing and cost.

use super::tests::{call, requests_seen, start, turn_finished, Harness};
use saki_llm_worker::Item;
use saki_testkit::{Gate, MockServer, Turn};
use saki_tools::ApprovalMode;
use saki_tui::transcript::EntryKind;
use saki_tui::{Action, App, EngineEvent, SpecState, Status, Theme};
use serde_json::json;
use std::time::Instant;

fn ready(e: &EngineEvent) -> bool {
    matches!(e, EngineEvent::Speculation(SpecState::Ready))
}

fn accepted(e: &EngineEvent) -> bool {
    matches!(e, EngineEvent::Accepted { .. })
}

/// A first turn with a tool call, then two suggestions whose speculations each write a
/// file, each followed by the next (pipelined) suggestion.
fn two_step_plan() -> MockServer {
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(call(
        "s1",
        "write_file",
        json!({"path": "notes.txt", "content": "hi\n"}),
    ));
    server.push(Turn::text("Added notes.txt."));
    server.push(Turn::text("add todo.txt"));
    server.push(call(
        "s2",
        "write_file",
        json!({"path": "todo.txt", "content": "- test\n"}),
    ));
    server.push(Turn::text("Added todo.txt."));
    server.push(Turn::text("show both files"));
    server
}

/// The batch ids of the tool calls among `events`, in order.
fn batch_ids(events: &[EngineEvent]) -> Vec<String> {
    let items = events.iter().flat_map(|e| match e {
        EngineEvent::Committed(item) => std::slice::from_ref(item).to_vec(),
        EngineEvent::Accepted { items, .. } => items.clone(),
        _ => Vec::new(),
    });
    let mut ids: Vec<String> = items
        .filter_map(|i| match i {
            Item::ToolCall { ctx, .. } => Some(ctx.batch_id),
            _ => None,
        })
        .collect();
    ids.dedup();
    ids
}

/// Runs the plan to two accepted speculations; every engine event, in order.
async fn two_accepts(h: &mut Harness) -> Vec<EngineEvent> {
    let mut events = Vec::new();
    h.send(Action::Submit {
        text: "hello".into(),
    });
    events.extend(h.until(turn_finished).await);
    events.extend(h.show_suggestion().await.0);
    events.extend(h.until(ready).await);
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    events.extend(h.until(accepted).await);
    let pipelined = match events.last() {
        Some(EngineEvent::Accepted { pipelined, .. }) => pipelined.clone(),
        _ => unreachable!(),
    };
    assert_eq!(h.next_suggestion(pipelined).await, "add todo.txt");
    events.extend(h.until(ready).await);
    h.send(Action::Submit {
        text: "add todo.txt".into(),
    });
    events.extend(h.until(accepted).await);
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accepts_in_a_row_carry_their_own_batch_ids_and_groups() {
    let server = two_step_plan();
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    let events = two_accepts(&mut h).await;
    assert_eq!(batch_ids(&events), ["batch_1", "batch_2", "batch_3"]);
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("todo.txt")).unwrap(),
        "- test\n"
    );

    // What the person sees: each group right under its own prompt.
    let mut app = App::new(
        Status::default(),
        Theme::plain(),
        h.ws.path().to_path_buf(),
        true,
    );
    let now = Instant::now();
    for event in events {
        app.apply(event, now);
    }
    let layout: Vec<String> = app
        .transcript
        .kinds()
        .filter_map(|k| match k {
            EntryKind::User(text) => Some(format!("user: {text}")),
            EntryKind::Tools { batch_id, rows } => Some(format!("{batch_id}: {} rows", rows.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        layout,
        [
            "user: hello",
            "batch_1: 1 rows",
            "user: add notes.txt",
            "batch_2: 1 rows",
            "user: add todo.txt",
            "batch_3: 1 rows",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speculation_is_accepted_while_its_pipelined_suggestion_is_still_on_its_way() {
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(call(
        "s1",
        "write_file",
        json!({"path": "notes.txt", "content": "hi\n"}),
    ));
    server.push(Turn::text("Added notes.txt."));
    // The pipelined suggestion is held back until the accept is done.
    let gate = Gate::new();
    server.push(Turn::text("show notes.txt").hold(&gate));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(ready).await;
    requests_seen(&server, 6).await;

    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let events = h.until(accepted).await;
    let Some(EngineEvent::Accepted {
        files, pipelined, ..
    }) = events.last()
    else {
        unreachable!()
    };
    assert_eq!(files, &["notes.txt".to_owned()]);
    assert_eq!(pipelined, &None, "the accept did not wait for it");
    assert!(!events.iter().any(|e| matches!(e, EngineEvent::TurnStarted)));
    assert_eq!(server.requests().len(), 6, "nothing ran again");

    // It arrives when it arrives, and is offered then.
    gate.open();
    let later = h.until(|e| matches!(e, EngineEvent::Suggestion(_))).await;
    assert!(matches!(later.last(), Some(EngineEvent::Suggestion(s)) if s == "show notes.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suggestion_the_person_never_sees_is_not_speculated() {
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(Turn::text("I listed it: empty."));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.until(|e| matches!(e, EngineEvent::Suggestion(_))).await;
    // The person was typing: the UI never showed it, so it never says so. Their own
    // prompt is the next request; nothing was speculated before it.
    h.send(Action::Submit {
        text: "what else?".into(),
    });
    let turn = h.until(turn_finished).await;
    assert!(!turn
        .iter()
        .any(|e| matches!(e, EngineEvent::Speculation(SpecState::Running))));
    let requests = server.requests();
    assert_eq!(requests[3].body["model"], "main");
    assert!(requests[3].body["messages"]
        .to_string()
        .contains("what else?"));
}
