#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `exec --json`: each text block of a turn is an item of its own, also across requests
//! (text, a tool call, then the answer: two assistant messages with two ids).

mod common;

use common::{env_with, events};
use saki_testkit::{MockServer, Turn};

#[test]
fn every_text_block_is_its_own_item() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Looking.").with_tool_call(
        "call_1",
        "read_file",
        r#"{"path":"a.txt"}"#,
    ));
    server.push(Turn::text("It says alpha."));
    let out = e
        .saki()
        .env("OPENAI_API_KEY", "test-key")
        .args(["exec", "--json", "--provider", "openai-compatible"])
        .args([
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "read a.txt",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let messages: Vec<(String, String)> = events(&out)
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "assistant_message")
        .map(|e| {
            (
                e["item"]["id"].as_str().unwrap().to_owned(),
                e["item"]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_ne!(messages[0].0, messages[1].0, "{messages:?}");
    assert_eq!(messages[0].1, "Looking.");
    assert_eq!(messages[1].1, "It says alpha.");
}

#[test]
fn an_answer_that_was_only_a_call_written_as_text_is_no_message() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    let server = MockServer::start().unwrap();
    server.push(Turn::text(
        r#"{"name": "read_file", "arguments": {"path": "a.txt"}}"#,
    ));
    server.push(Turn::text("It says alpha."));
    let out = e.exec_llamacpp(
        &server.openai_url(),
        &["--json", "--model", "m"],
        "read a.txt",
    );
    let events = events(&out.stdout);
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| e["item"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tool_call", "tool_result", "assistant_message"]);
    let started = events
        .iter()
        .filter(|e| e["type"] == "item.started" && e["item"]["kind"] == "assistant_message")
        .count();
    assert_eq!(started, 1, "no item starts for the empty block");
    let call = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .unwrap();
    assert_eq!(call["item"]["recovered"], true);
}
