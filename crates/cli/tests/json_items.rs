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
