#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Sessions and tools under odd conditions, with real processes: two writers on one
//! session, ids that are paths, a corrupt newest session, a FIFO named with `@path`.

mod common;

use common::{env_with, events, wait_for_exit, Env};
use saki_testkit::{Gate, MockServer, Turn};
use std::time::Duration;

fn exec(e: &Env, server: &MockServer, args: &[&str]) -> std::process::Command {
    let mut cmd = e.cmd();
    cmd.args(["exec", "--base-url", &server.openai_url(), "--model", "m"])
        .args(args);
    cmd
}

fn first_session(e: &Env, server: &MockServer) -> String {
    server.push(Turn::text("first"));
    let out = exec(e, server, &["--json", "one"]).output().unwrap();
    assert!(out.status.success());
    events(&out.stdout)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_second_writer_on_one_session_is_refused_with_exit_2() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    let id = first_session(&e, &server);
    // The first resume holds the session while its answer is held back.
    let gate = Gate::new();
    server.push(Turn::text("held answer").hold(&gate));
    let mut holder = exec(&e, &server, &["--resume", &id, "two"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_requests_blocking(2);
    let second = exec(&e, &server, &["--resume", &id, "three"])
        .output()
        .unwrap();
    gate.open();
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("in use by another saki process"),
        "{stderr}"
    );
    assert!(holder.wait().unwrap().success());
    assert_eq!(server.requests().len(), 2, "the second writer sent nothing");
    // Once the first is done, the session can be resumed again.
    server.push(Turn::text("later"));
    assert!(exec(&e, &server, &["--resume", &id, "four"])
        .output()
        .unwrap()
        .status
        .success());
}

#[test]
fn a_resume_id_that_is_a_path_is_refused() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    let outside = e.home.path().join("data.jsonl");
    std::fs::write(&outside, "not a session\n").unwrap();
    for id in [
        e.home.path().join("data").display().to_string(),
        "../../data".to_owned(),
        ".hidden".to_owned(),
    ] {
        let out = exec(&e, &server, &["--resume", &id, "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{id}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("is not a session id"), "{id}: {stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "not a session\n"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_corrupt_newest_session_is_named_when_last_resumes_an_older_one() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    let id = first_session(&e, &server);
    let dir = e.home.path().join(".local/share/saki/sessions");
    let first = std::fs::metadata(&e.session_files()[0])
        .unwrap()
        .modified()
        .unwrap();
    let newer = dir.join("zz-newer.jsonl");
    std::fs::write(&newer, "{\"type\":\"sess").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&newer)
        .unwrap()
        .set_modified(first + Duration::from_secs(5))
        .unwrap();
    server.push(Turn::text("second"));
    let out = exec(&e, &server, &["--json", "--last", "two"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let events = events(&out.stdout);
    assert_eq!(events[0]["session_id"], id.as_str());
    let alert = events
        .iter()
        .find(|e| e["type"] == "alert")
        .expect("an alert");
    let message = alert["message"].as_str().unwrap();
    assert!(
        message.contains("a newer session file was skipped") && message.contains(&id),
        "{message}"
    );
}

#[test]
fn a_fifo_named_with_at_path_does_not_hang_the_run() {
    let e = env_with(&[]);
    let fifo = e.ws.join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let server = MockServer::start().unwrap();
    server.push(Turn::text("ok"));
    let mut child = exec(&e, &server, &["--json", "look at @pipe"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = wait_for_exit(&mut child, "saki, on a FIFO named with @path,", || {});
    assert!(status.success());
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    let alert = events(&out)
        .into_iter()
        .find(|e| e["type"] == "alert")
        .expect("an alert about @pipe");
    assert!(
        alert["message"].as_str().unwrap().contains("FIFO"),
        "{alert}"
    );
}

#[test]
fn a_tool_result_keeps_one_id_from_started_to_completed() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    let server = MockServer::start().unwrap();
    server.push(
        Turn::new()
            .with_tool_call("c1", "read_file", r#"{"path":"a.txt"}"#)
            .with_tool_call("c2", "ls", "{}"),
    );
    server.push(Turn::text("done"));
    let out = exec(&e, &server, &["--json", "look"]).output().unwrap();
    assert!(out.status.success());
    let events = events(&out.stdout);
    for call in ["c1", "c2"] {
        let ids: Vec<&str> = events
            .iter()
            .filter(|e| e["item"]["kind"] == "tool_result" && e["item"]["call_id"] == call)
            .map(|e| e["item"]["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), 2, "{call}: {ids:?}");
        assert_eq!(ids[0], ids[1], "{call}");
    }
}

#[test]
fn a_prompt_larger_than_the_window_is_refused_before_sending() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    let big = "word ".repeat(1024 * 1024); // 5 MiB, about 1.3M tokens
    let mut child = exec(&e, &server, &["--json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), big.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let last = events(&out.stdout).pop().unwrap();
    let message = last["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("more than the") && message.contains("@path"),
        "{message}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn tool_output_max_bytes_caps_every_tool() {
    let long: String = (0..2000).map(|i| format!("line {i} of text\n")).collect();
    let e = env_with(&[("big.txt", &long)]);
    e.write_config("tool_output_max_bytes = 2048\n");
    let server = MockServer::start().unwrap();
    server.push(
        Turn::new()
            .with_tool_call("c1", "read_file", r#"{"path":"big.txt"}"#)
            .with_tool_call("c2", "grep", r#"{"pattern":"line"}"#)
            .with_tool_call("c3", "shell", r#"{"command":"cat big.txt"}"#),
    );
    server.push(Turn::text("done"));
    let out = exec(&e, &server, &["--json", "--approval", "yolo", "look"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outputs: Vec<String> = events(&out.stdout)
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .map(|e| e["item"]["output"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outputs.len(), 3);
    for output in &outputs {
        assert!(output.len() < 2048 + 200, "{} bytes", output.len());
        assert!(output.contains("line 0"), "{output}");
    }
}

#[test]
fn a_read_file_limit_at_the_integer_maximum_is_read_not_a_panic() {
    let e = env_with(&[("a.txt", "one\ntwo\nthree\n")]);
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "c1",
        "read_file",
        r#"{"path":"a.txt","offset":2,"limit":18446744073709551615}"#,
    ));
    server.push(Turn::text("done"));
    let out = exec(&e, &server, &["--json", "read it"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = events(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .unwrap();
    assert_eq!(result["item"]["status"], "success");
    assert_eq!(
        result["item"]["output"],
        "two\nthree\n[end of file: line 3 is the last]"
    );
}
