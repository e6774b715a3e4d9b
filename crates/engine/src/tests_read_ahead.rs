#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Reading ahead in the engine against the mock provider: accepts in a row, what the
//! person sees of them, and the background work's timing and cost.

use crate::harness::{
    accepted, batch_ids, call, hook, push_notes_plan, ready, start, start_hooked, turn_finished,
    two_accepts, two_step_plan,
};
use crate::{Action, EngineEvent, SpecState};
use saki_llm_worker::hook::HookEvent;
use saki_testkit::{Gate, MockServer, Turn};
use saki_tools::ApprovalMode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accepts_in_a_row_carry_their_own_batch_ids() {
    let server = two_step_plan();
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    let events = two_accepts(&mut h).await;
    assert_eq!(batch_ids(&events), ["batch_1", "batch_2", "batch_3"]);
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("todo.txt")).unwrap(),
        "- test\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speculation_is_accepted_while_its_pipelined_suggestion_is_still_on_its_way() {
    let server = MockServer::start().unwrap();
    push_notes_plan(&server);
    // The pipelined suggestion is held back until the accept is done.
    let gate = Gate::new();
    server.push(Turn::text("show notes.txt").hold(&gate));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(ready).await;
    server.wait_for_requests(6).await;

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

/// The plan of one accepted speculation that writes notes.txt.
fn notes_plan() -> MockServer {
    let server = MockServer::start().unwrap();
    push_notes_plan(&server);
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_speculation_passes_the_persons_hooks_like_a_typed_prompt() {
    let server = notes_plan();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let record = format!("cat >> '{0}'; echo >> '{0}'", log.display());
    let mut h = start_hooked(
        &server,
        ApprovalMode::AutoEdit,
        true,
        |_| {},
        |hooks| {
            for event in [
                HookEvent::UserPromptSubmit,
                HookEvent::PreToolUse,
                HookEvent::Stop,
            ] {
                hook(hooks, event, None, record.clone());
            }
        },
    );
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(ready).await;
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    h.until(accepted).await;
    // The Stop hook runs right after the accept is shown, before the engine takes its
    // next action: once that action is answered, the hook is done.
    h.send(Action::Stats);
    h.until(|e| matches!(e, EngineEvent::Stats(_))).await;
    let seen = |log: &std::path::Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let events: Vec<String> = seen(&log)
        .iter()
        .map(|e| {
            let what = match e["event"].as_str().unwrap() {
                "UserPromptSubmit" => e["prompt"].to_string(),
                "PreToolUse" => format!("{} speculation={}", e["tool_name"], e["speculation"]),
                _ => e["last_assistant_message"].to_string(),
            };
            format!("{}: {what}", e["event"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        events,
        [
            "UserPromptSubmit: \"hello\"",
            "PreToolUse: \"ls\" speculation=null",
            "Stop: \"The folder is empty. Shall I add notes.txt?\"",
            // ReadAhead of the person: the hook is told, and sees the workspace path.
            "PreToolUse: \"write_file\" speculation=true",
            "UserPromptSubmit: \"add notes.txt\"",
            "Stop: \"Added notes.txt.\"",
        ]
    );
    assert_eq!(seen(&log)[3]["tool_input"]["path"], "notes.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_pre_tool_use_hook_is_a_boundary_for_a_speculation() {
    let server = notes_plan();
    let mut h = start_hooked(
        &server,
        ApprovalMode::AutoEdit,
        true,
        |_| {},
        |hooks| {
            let command = "echo 'no writes ahead of me' >&2; exit 2".to_owned();
            hook(hooks, HookEvent::PreToolUse, Some("write_file"), command);
        },
    );
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(|e| matches!(e, EngineEvent::Speculation(SpecState::Boundary)))
        .await;
    assert!(!h.ws.path().join("notes.txt").exists());
    // The speculation stopped before the call: the model was not asked again.
    assert_eq!(server.requests().len(), 4);
    h.send(Action::Stats);
    let events = h.until(|e| matches!(e, EngineEvent::Stats(_))).await;
    assert!(matches!(
        events.last(),
        Some(EngineEvent::Stats(s)) if (s.accepted, s.discarded) == (0, 1)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_prompt_submit_hook_refuses_an_accept_and_nothing_is_applied() {
    let server = notes_plan();
    let mut h = start_hooked(
        &server,
        ApprovalMode::AutoEdit,
        true,
        |_| {},
        |hooks| {
            let command =
                "grep -q notes.txt && { echo 'not that' >&2; exit 2; }; exit 0".to_owned();
            hook(hooks, HookEvent::UserPromptSubmit, None, command);
        },
    );
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(ready).await;
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let events = h.until(turn_finished).await;
    assert!(!events.iter().any(accepted));
    assert!(matches!(
        events.last(),
        Some(EngineEvent::TurnFinished { note: Some((_, note)), .. })
            if note == "the prompt was cancelled by a hook: not that"
    ));
    assert!(!h.ws.path().join("notes.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_accepts_discards_and_the_background_tokens_apart_from_the_turns() {
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})).with_usage(100, 10));
    server.push(Turn::text("Empty. Shall I add notes.txt?").with_usage(120, 12));
    server.push(Turn::text("add notes.txt").with_usage(130, 3));
    server.push(
        call(
            "s1",
            "write_file",
            json!({"path": "notes.txt", "content": "hi\n"}),
        )
        .with_usage(140, 14),
    );
    server.push(Turn::text("Added notes.txt.").with_usage(160, 6));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    h.until(ready).await;
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    h.until(accepted).await;
    h.send(Action::Stats);
    let events = h.until(|e| matches!(e, EngineEvent::Stats(_))).await;
    let Some(EngineEvent::Stats(stats)) = events.last() else {
        unreachable!()
    };
    assert_eq!((stats.accepted, stats.discarded), (1, 0));
    let b = &stats.background;
    assert_eq!(
        (
            b.suggestion.requests,
            b.suggestion.input_tokens,
            b.suggestion.output_tokens
        ),
        (1, 130, 3)
    );
    assert_eq!(
        (
            b.speculation.requests,
            b.speculation.input_tokens,
            b.speculation.output_tokens
        ),
        (2, 300, 20)
    );
    assert_eq!(
        (
            stats.main.requests,
            stats.main.input_tokens,
            stats.main.output_tokens
        ),
        (2, 220, 22)
    );
    assert!(stats
        .summary_line()
        .starts_with("read-ahead: 1 accepted, 0 discarded"));
}

/// The first turn and its suggestion "add notes.txt", whose speculation's final answer
/// is held by `gate` (its write already made in the overlay).
fn notes_plan_held(server: &MockServer, gate: &Gate) {
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(call(
        "s1",
        "write_file",
        json!({"path": "notes.txt", "content": "hi\n"}),
    ));
    server.push(Turn::text("Added notes.txt.").hold(gate));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suggestion_sent_while_its_speculation_runs_is_that_speculation() {
    let server = MockServer::start().unwrap();
    let gate = Gate::new();
    notes_plan_held(&server, &gate);
    server.push(Turn::text("show notes.txt"));
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    // The speculation's last request is on its way: the person sends the suggestion.
    server.wait_for_requests(5).await;
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    gate.open();
    let events = h.until(accepted).await;
    let Some(EngineEvent::Accepted { files, .. }) = events.last() else {
        unreachable!()
    };
    assert_eq!(files, &["notes.txt".to_owned()]);
    assert!(!events.iter().any(|e| matches!(e, EngineEvent::TurnStarted)));
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("notes.txt")).unwrap(),
        "hi\n"
    );
    // Nothing ran twice: past the main turn, the suggestion and the speculation's two
    // requests, only the next suggestion may have been asked for.
    assert!(server.requests().len() <= 6, "{}", server.requests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_waiting_for_the_speculation_ends_the_turn_and_applies_nothing() {
    let server = MockServer::start().unwrap();
    let gate = Gate::new();
    notes_plan_held(&server, &gate);
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.show_suggestion().await;
    server.wait_for_requests(5).await;
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    h.send(Action::Cancel);
    let events = h.until(turn_finished).await;
    assert!(!events.iter().any(accepted));
    assert!(!h.ws.path().join("notes.txt").exists());
    assert_eq!(server.requests().len(), 5, "no turn ran after the cancel");
}
