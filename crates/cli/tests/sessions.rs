#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Durable sessions through the CLI: resume sends the same history byte for byte, and a
//! process killed mid-stream or mid-tool leaves a log that resumes cleanly.

mod common;

use common::{env_with, Env};
use predicates::prelude::*;
use saki_testkit::{MockServer, Turn};
use serde_json::Value;
use std::io::BufRead;

fn env() -> Env {
    env_with(&[("a.txt", "alpha\n")])
}

fn messages_json(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.to_string())
        .collect()
}

#[test]
fn resume_sends_the_first_turns_history_byte_for_byte() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Reading.").with_tool_call("c1", "read_file", r#"{"path":"a.txt"}"#));
    server.push(Turn::text("It says alpha."));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "what is in a.txt?",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out).lines().next().unwrap()).unwrap();
    let id = first["session_id"].as_str().unwrap().to_owned();
    assert_eq!(first["resumed"], false);

    server.push(Turn::text("Yes."));
    e.saki()
        .args([
            "exec",
            "--resume",
            &id,
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "sure?",
        ])
        .assert()
        .success()
        .stdout("Yes.\n");
    let requests = server.requests();
    let second_turn = messages_json(&requests[1].body);
    let resumed = messages_json(&requests[2].body);
    // The resumed request starts with exactly what the model saw last time, then its answer.
    assert_eq!(resumed[..second_turn.len()], second_turn[..]);
    assert_eq!(resumed.len(), second_turn.len() + 2, "{resumed:#?}");
    assert!(resumed[second_turn.len()].contains("It says alpha."));
    assert!(resumed[second_turn.len() + 1].contains("sure?"));
    assert_eq!(requests[1].body["tools"], requests[2].body["tools"]);

    // --resume --last picks the same session; `saki sessions` lists it.
    server.push(Turn::text("Still yes."));
    e.saki()
        .args([
            "exec",
            "--resume",
            "--last",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "again",
        ])
        .assert()
        .success();
    assert_eq!(
        messages_json(&server.requests()[3].body).len(),
        resumed.len() + 2
    );
    assert_eq!(e.session_files().len(), 1);
    e.saki()
        .args(["sessions"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&id).and(predicate::str::contains("what is in a.txt?")));
    e.saki()
        .args([
            "exec",
            "--resume",
            "nope",
            "--model",
            "m",
            "--base-url",
            &server.openai_url(),
            "x",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no session with id `nope`"));
}

/// Runs `saki exec --json`, kills it with SIGKILL once `trigger` appears in its output.
fn kill_when(e: &Env, server: &MockServer, extra: &[&str], trigger: &str) -> String {
    let mut child = e
        .cmd()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut session = String::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            if let Some(id) = v["session_id"].as_str() {
                session = id.to_owned();
            }
        }
        if line.contains(trigger) {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    session
}

#[test]
fn killed_mid_stream_and_mid_tool_the_session_resumes_well_formed() {
    let e = env();
    let server = MockServer::start().unwrap();
    // Mid-stream: the answer stalls after its first words; kill -9.
    server.push(Turn::text("partial answer that never ends").stall_after(3));
    let id = kill_when(&e, &server, &["tell me"], "item.delta");
    assert!(!id.is_empty());
    server.push(Turn::text("recovered"));
    e.saki()
        .args([
            "exec",
            "--resume",
            &id,
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "again",
        ])
        .assert()
        .success()
        .stdout("recovered\n");
    let msgs = messages_json(&server.requests()[1].body);
    assert!(
        msgs.iter().any(|m| m.contains("tell me")),
        "the first prompt survived: {msgs:#?}"
    );

    // Mid-tool: a long shell command is running; kill -9.
    server.push(Turn::new().with_tool_call("c_sleep", "shell", r#"{"command":"sleep 30"}"#));
    let id2 = kill_when(
        &e,
        &server,
        &["--resume", &id, "--approval", "yolo", "run it"],
        r#""kind":"tool_result""#,
    );
    assert_eq!(id2, id);
    server.push(Turn::text("ok"));
    e.saki()
        .args([
            "exec",
            "--resume",
            &id,
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "what happened?",
        ])
        .assert()
        .success();
    let body = server.requests().last().unwrap().body.clone();
    let tool_results: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        tool_results.len(),
        1,
        "the dangling call got exactly one result"
    );
    assert_eq!(tool_results[0]["tool_call_id"], "c_sleep");
    assert!(tool_results[0]["content"]
        .as_str()
        .unwrap()
        .contains("session ended"));
    // The log itself is whole: every line parses.
    let text = std::fs::read_to_string(&e.session_files()[0]).unwrap();
    assert!(text
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).is_ok()));
}

#[test]
fn a_torn_session_line_is_an_alert_on_resume() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("first"));
    e.saki()
        .args([
            "exec",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "one",
        ])
        .assert()
        .success();
    let file = e.session_files().remove(0);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    std::io::Write::write_all(&mut f, br#"{"type":"item","item":{"type":"user","te"#).unwrap();
    server.push(Turn::text("second"));
    e.saki()
        .args([
            "exec",
            "--json",
            "--last",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "two",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(r#""type":"alert""#).and(predicate::str::contains("cut off")),
        );
    let msgs = messages_json(&server.requests()[1].body);
    assert_eq!(msgs.len(), 4, "system, one, first, two: {msgs:#?}");
    // Items written after the torn line are not lost on the next resume.
    server.push(Turn::text("third"));
    e.saki()
        .args([
            "exec",
            "--last",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "three",
        ])
        .assert()
        .success();
    let msgs = messages_json(&server.requests()[2].body);
    assert_eq!(msgs.len(), 6, "{msgs:#?}");
    assert!(msgs[3].contains("two") && msgs[4].contains("second"));
}
