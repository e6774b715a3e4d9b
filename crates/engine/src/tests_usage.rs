#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Which turn's report carries reading ahead's tokens: the turn the work prepares, however
//! the background requests and the person's accepts interleave.

use crate::harness::{accepted, call, ready, start, turn_finished, Harness};
use crate::{Action, EngineEvent};
use saki_llm_worker::{BackgroundBreakdown, TokenCount};
use saki_testkit::{Gate, MockServer, Turn};
use saki_tools::ApprovalMode;
use serde_json::json;

/// `requests` requests of `input` and `output` tokens in all.
fn count(requests: u64, input: u64, output: u64) -> TokenCount {
    TokenCount {
        requests,
        input_tokens: input,
        cached_input_tokens: 0,
        output_tokens: output,
    }
}

/// A first turn, its suggestion and speculation (notes.txt), the pipelined suggestion
/// (held by `pipelined`), its speculation (todo.txt) and the next pipelined suggestion;
/// every background reply with its own usage.
fn plan(pipelined: &Gate) -> MockServer {
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})).with_usage(100, 10));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?").with_usage(150, 20));
    server.push(Turn::text("add notes.txt").with_usage(160, 3));
    server.push(
        call(
            "s1",
            "write_file",
            json!({"path": "notes.txt", "content": "hi\n"}),
        )
        .with_usage(170, 15),
    );
    server.push(Turn::text("Added notes.txt.").with_usage(190, 5));
    server.push(
        Turn::text("add todo.txt")
            .with_usage(200, 4)
            .hold(pipelined),
    );
    server.push(
        call(
            "s2",
            "write_file",
            json!({"path": "todo.txt", "content": "- test\n"}),
        )
        .with_usage(210, 8),
    );
    server.push(Turn::text("Added todo.txt.").with_usage(220, 9));
    server.push(Turn::text("show both files").with_usage(230, 6));
    server
}

/// What a front end reports with a turn's end: what accrued since its last report.
fn report(h: &Harness) -> BackgroundBreakdown {
    h.background.take()
}

/// Runs the plan to two accepts, the pipelined suggestion ending after the first accept
/// (`late`) or before it; the background tokens reported with each turn's end.
async fn reports(late: bool) -> Vec<BackgroundBreakdown> {
    let gate = Gate::new();
    let server = plan(&gate);
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    let mut reports = Vec::new();
    h.send(Action::Submit {
        text: "hello".into(),
    });
    h.until(turn_finished).await;
    reports.push(report(&h));
    h.show_suggestion().await;
    h.until(ready).await;
    if !late {
        gate.open();
        h.stats_when("the pipelined suggestion ended", |s| {
            s.background.pipelined_suggestion.requests == 1
        })
        .await;
    }
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    let events = h.until(accepted).await;
    reports.push(report(&h));
    let Some(EngineEvent::Accepted { pipelined, .. }) = events.last() else {
        unreachable!()
    };
    if late {
        assert_eq!(*pipelined, None, "held until after the accept");
        gate.open();
    }
    assert_eq!(h.next_suggestion(pipelined.clone()).await, "add todo.txt");
    h.until(ready).await;
    h.send(Action::Submit {
        text: "add todo.txt".into(),
    });
    h.until(accepted).await;
    reports.push(report(&h));
    reports
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipelined_suggestion_is_reported_with_the_turn_it_suggests_whenever_it_ends() {
    let late = reports(true).await;
    let early = reports(false).await;
    assert_eq!(
        late, early,
        "the order of requests and accepts changes nothing"
    );
    // The first turn: nothing prepared it.
    assert!(late[0].is_empty(), "{:?}", late[0]);
    // The first accept: its suggestion and speculation, not the pipelined suggestion
    // beside it.
    assert_eq!(late[1].suggestion, count(1, 160, 3));
    assert_eq!(late[1].speculation, count(2, 360, 20));
    assert_eq!(late[1].pipelined_suggestion, count(0, 0, 0));
    // The second accept: the pipelined suggestion that proposed it, and its speculation;
    // the next pipelined suggestion waits for the turn it proposes.
    assert_eq!(late[2].suggestion, count(0, 0, 0));
    assert_eq!(late[2].pipelined_suggestion, count(1, 200, 4));
    assert_eq!(late[2].speculation, count(2, 430, 17));
}
