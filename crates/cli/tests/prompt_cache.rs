#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What `saki exec` sends for the providers' prompt caches: OpenAI's `prompt_cache_key`
//! (the session id) on the main and forked requests, Anthropic's `cache_control`
//! breakpoints, and forks that extend the main request.

mod common;

use common::{env_with, events};
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

/// A turn, its suggestion, a speculation that completes at once, the pipelined
/// suggestion, and its speculation (two follow-ups: nothing is suggested after the last).
fn plan(server: &MockServer) {
    server.push(Turn::new().with_tool_call("c1", "ls", json!({"path": "."}).to_string()));
    server.push(Turn::text("Empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(Turn::text("Nothing to add yet."));
    server.push(Turn::text("show the folder"));
    server.push(Turn::text("The folder is empty."));
}

fn run(provider: &str, key: &str, base: &str) -> (Vec<Value>, String) {
    let e = env_with(&[]);
    let out = e
        .saki()
        .env(key, "test-key")
        .args([
            "exec",
            "--json",
            "--follow-ups",
            "2",
            "--provider",
            provider,
            "--base-url",
            base,
            "-m",
            "main",
            "what is here?",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let events = events(&out);
    let session = events[0]["session_id"].as_str().unwrap().to_owned();
    (events, session)
}

#[test]
fn openai_requests_carry_the_session_id_as_prompt_cache_key_forks_included() {
    let server = MockServer::start().unwrap();
    plan(&server);
    let (_, session) = run("openai", "OPENAI_API_KEY", &server.openai_url());
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        6,
        "turn, suggestion, speculation, pipelined, speculation"
    );
    for r in &requests {
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(r.body["prompt_cache_key"], session.as_str());
        // No structured output: OpenAI caches the schema ahead of the system message.
        assert!(r.body.get("text").is_none(), "{}", r.body);
    }
    // Each fork starts with the main request's input, item for item.
    let main = requests[1].body["input"].as_array().unwrap();
    for fork in &requests[2..] {
        let input = fork.body["input"].as_array().unwrap();
        assert_eq!(&input[..main.len()], &main[..]);
        assert_eq!(fork.body["instructions"], requests[1].body["instructions"]);
        assert_eq!(fork.body["tools"], requests[1].body["tools"]);
    }
}

#[test]
fn anthropic_requests_carry_cache_breakpoints_and_no_cache_key() {
    let server = MockServer::start().unwrap();
    plan(&server);
    run("anthropic", "ANTHROPIC_API_KEY", &server.url());
    for r in server.requests() {
        assert!(r.body.get("prompt_cache_key").is_none());
        assert_eq!(r.body["system"][0]["cache_control"]["type"], "ephemeral");
        let newest = r.body["messages"].as_array().unwrap().last().unwrap();
        let last_block = newest["content"].as_array().unwrap().last().unwrap();
        assert_eq!(last_block["cache_control"]["type"], "ephemeral");
    }
}

#[test]
fn other_chat_servers_get_no_cache_key() {
    let server = MockServer::start().unwrap();
    plan(&server);
    run("openai-compatible", "OPENAI_API_KEY", &server.openai_url());
    for r in server.requests() {
        assert!(r.body.get("prompt_cache_key").is_none());
    }
}
