#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `/undo`, `/redo` and `/rewind` through the engine: files go back, the model is told
//! (and a resumed session still knows), the conversation is cut for a rewind and its
//! prompt handed back, a person's edit is a conflict.

use crate::harness::{call, start, turn_finished};
use crate::{Action, EngineEvent, Level, TurnEntry};
use saki_llm_worker::Item;
use saki_testkit::{MockServer, Turn};
use saki_tools::ApprovalMode;
use serde_json::json;

fn undone(e: &EngineEvent) -> bool {
    matches!(e, EngineEvent::Undone { .. })
}

fn last_undone(events: &[EngineEvent]) -> (Level, String) {
    match events.last() {
        Some(EngineEvent::Undone { level, message }) => (*level, message.clone()),
        other => panic!("expected Undone, got {other:?}"),
    }
}

fn write(id: &str, path: &str, content: &str) -> Turn {
    call(id, "write_file", json!({"path": path, "content": content}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_reverts_the_last_turn_tells_the_model_and_a_resumed_session_knows() {
    let server = MockServer::start().unwrap();
    server.push(write("c1", "a.txt", "new\n"));
    server.push(Turn::text("Changed a.txt."));
    server.push(Turn::text("ok"));
    let mut h = start(&server, ApprovalMode::AutoEdit, false);
    let file = h.ws.path().join("a.txt");
    std::fs::write(&file, "old\n").unwrap();

    h.send(Action::Submit {
        text: "change a".into(),
    });
    h.until(turn_finished).await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");

    h.send(Action::Undo {
        turns: 1,
        force: false,
    });
    let (level, message) = last_undone(&h.until(undone).await);
    assert_eq!(level, Level::Info);
    assert!(
        message.contains("reverted turn 1 (change a): a.txt"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");

    h.send(Action::Redo { force: false });
    let (_, message) = last_undone(&h.until(undone).await);
    assert!(message.starts_with("redid turn 1"), "{message}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");

    h.send(Action::Submit {
        text: "thanks".into(),
    });
    h.until(turn_finished).await;
    let body = server.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("[undo] The person reverted the file changes of turn 1"),
        "{body}"
    );
    assert!(body.contains("[redo] The person put back"), "{body}");

    // A resumed session has the notes in its history.
    h.send(Action::ListSessions);
    let listed = h.until(|e| matches!(e, EngineEvent::Sessions(_))).await;
    let Some(EngineEvent::Sessions(sessions)) = listed.last() else {
        unreachable!()
    };
    let id = sessions[0].id.clone();
    h.send(Action::NewSession);
    h.send(Action::Resume { id });
    let events = h
        .until(|e| matches!(e, EngineEvent::History(items) if !items.is_empty()))
        .await;
    let Some(EngineEvent::History(items)) = events.last() else {
        unreachable!()
    };
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::System { text } if text.starts_with("[undo]"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_person_edited_is_named_and_kept() {
    let server = MockServer::start().unwrap();
    server.push(write("c1", "a.txt", "agent\n"));
    server.push(Turn::text("Done."));
    let mut h = start(&server, ApprovalMode::AutoEdit, false);
    h.send(Action::Submit {
        text: "write a".into(),
    });
    h.until(turn_finished).await;
    let file = h.ws.path().join("a.txt");
    std::fs::write(&file, "mine\n").unwrap();
    h.send(Action::Undo {
        turns: 1,
        force: false,
    });
    let (level, message) = last_undone(&h.until(undone).await);
    assert_eq!(level, Level::Warn);
    assert!(
        message.contains("a.txt") && message.contains("--force"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
    h.send(Action::Undo {
        turns: 1,
        force: true,
    });
    h.until(undone).await;
    assert!(!file.exists(), "forced: back to before the turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_reverts_files_and_conversation_and_hands_the_prompt_back() {
    let server = MockServer::start().unwrap();
    server.push(write("c1", "a.txt", "1\n"));
    server.push(Turn::text("Wrote a."));
    server.push(write("c2", "b.txt", "2\n"));
    server.push(Turn::text("Wrote b."));
    server.push(Turn::text("Again."));
    let mut h = start(&server, ApprovalMode::AutoEdit, false);
    for prompt in ["first", "second"] {
        h.send(Action::Submit {
            text: prompt.into(),
        });
        h.until(turn_finished).await;
    }

    h.send(Action::ListTurns);
    let events = h.until(|e| matches!(e, EngineEvent::Turns(_))).await;
    let Some(EngineEvent::Turns(turns)) = events.last() else {
        unreachable!()
    };
    let expected = [("second", 2, 1), ("first", 1, 1)].map(|(p, t, f)| TurnEntry {
        turn: t,
        prompt: p.into(),
        files: f,
    });
    assert_eq!(turns, &expected);

    h.send(Action::Rewind {
        turn: 2,
        force: false,
    });
    let events = h.until(|e| matches!(e, EngineEvent::Rewound { .. })).await;
    let history = events.iter().find_map(|e| match e {
        EngineEvent::History(items) => Some(items.clone()),
        _ => None,
    });
    let history = history.expect("the conversation is redrawn");
    assert!(matches!(&history[0], Item::User { text } if text == "first"));
    assert!(!history
        .iter()
        .any(|i| matches!(i, Item::User { text } if text == "second")));
    assert!(matches!(events.last(), Some(EngineEvent::Rewound { prompt }) if prompt == "second"));
    assert!(!h.ws.path().join("b.txt").exists());
    assert!(h.ws.path().join("a.txt").exists());

    // The next prompt is turn 2 again, and the request no longer carries the old one.
    h.send(Action::Submit {
        text: "second, better".into(),
    });
    h.until(turn_finished).await;
    let body = server.requests().last().unwrap().body.to_string();
    assert!(
        !body.contains("Wrote b.") && body.contains("second, better"),
        "{body}"
    );
    h.send(Action::ListTurns);
    let events = h.until(|e| matches!(e, EngineEvent::Turns(_))).await;
    let Some(EngineEvent::Turns(turns)) = events.last() else {
        unreachable!()
    };
    assert_eq!(
        (turns[0].turn, turns[0].prompt.as_str()),
        (2, "second, better")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_speculations_are_turns_undo_takes_back_one_by_one() {
    use crate::harness::{two_accepts, two_step_plan};
    let server = two_step_plan();
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    two_accepts(&mut h).await;
    let (notes, todo) = (h.ws.path().join("notes.txt"), h.ws.path().join("todo.txt"));
    assert!(notes.exists() && todo.exists());
    h.send(Action::Undo {
        turns: 1,
        force: false,
    });
    let (_, message) = last_undone(&h.until(undone).await);
    assert!(
        message.contains("reverted turn 3 (add todo.txt): todo.txt"),
        "{message}"
    );
    assert!(notes.exists() && !todo.exists());
    h.send(Action::Undo {
        turns: 1,
        force: false,
    });
    h.until(undone).await;
    assert!(!notes.exists());
    h.send(Action::NewSession);
    h.send(Action::Undo {
        turns: 1,
        force: false,
    });
    let (level, message) = last_undone(&h.until(undone).await);
    assert_eq!(level, Level::Warn);
    assert!(message.contains("nothing to undo"), "{message}");
}
