#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki export` on a session `saki exec` recorded against the mock provider, and the
//! cost `turn.completed` carries when the model has a price.

mod common;

use common::{env_with, events, Env};
use saki_testkit::{MockServer, Turn};
use serde_json::Value;

const KEY: &str = "sk-test-0123456789abcdefghijklmnop";

/// One turn: a read_file call whose result holds hostile HTML, then an answer; each
/// request reports 1000 tokens in and 100 out, at $1 / $2 per million.
fn session(e: &Env) -> (String, Vec<Value>) {
    e.write_config("[models.m]\npricing = { input = 1.0, output = 2.0 }\n");
    let server = MockServer::start().unwrap();
    server.push(
        Turn::text("Reading.")
            .with_tool_call("c1", "read_file", r#"{"path":"a.html"}"#)
            .with_usage(1000, 100),
    );
    server.push(Turn::text("It holds a **script** tag.").with_usage(1000, 100));
    let out = e
        .saki()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
        ])
        .arg(format!("what is in a.html? my key is {KEY}"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let events = events(&out);
    let id = events[0]["session_id"].as_str().unwrap().to_owned();
    (id, events)
}

fn env() -> Env {
    env_with(&[(
        "a.html",
        "<script>alert(1)</script><img src=x onerror=alert(2)>\n",
    )])
}

#[test]
fn turn_completed_carries_the_cost_when_the_model_has_a_price() {
    let e = env();
    let (_, events) = session(&e);
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    // 2 × (1000 × $1 + 100 × $2) per million.
    assert_eq!(done["cost_usd"], 0.0024, "{done}");
}

#[test]
fn markdown_export_redacts_the_key_and_shows_the_turn() {
    let e = env();
    session(&e);
    let out = e
        .saki()
        .env("OPENAI_API_KEY", KEY)
        .args(["export", "--last"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(out).unwrap();
    assert!(!md.contains(KEY), "{md}");
    assert!(md.contains("my key is [REDACTED]"), "{md}");
    assert!(md.contains("**Tool `read_file`** — done"), "{md}");
    assert!(md.contains("It holds a **script** tag."), "{md}");
    assert!(md.contains("2 requests"), "{md}");
    assert!(md.contains("$0.0024"), "{md}");
}

#[test]
fn html_and_json_exports_go_to_files() {
    let e = env();
    let (id, _) = session(&e);
    let html_path = e.home.path().join("out.html");
    e.saki()
        .env("OPENAI_API_KEY", KEY)
        .args(["export", &id, "-o"])
        .arg(&html_path)
        .assert()
        .success();
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("<script>") && !html.contains("<img"),
        "{html}"
    );
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains(KEY));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&html_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "an export is its owner's only");

    let out = e
        .saki()
        .args(["export", "--last", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["session"]["id"], id.as_str());
    let kinds: Vec<&str> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"usage"), "{kinds:?}");
    assert!(
        kinds.iter().filter(|k| **k == "item").count() >= 4,
        "{kinds:?}"
    );
}

#[test]
fn an_unknown_session_is_a_usage_error() {
    let e = env();
    e.saki()
        .args(["export", "nope"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no session with id `nope`"));
}
