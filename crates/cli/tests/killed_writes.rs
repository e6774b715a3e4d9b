#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A `saki` killed with SIGKILL in the middle of writing the person's files: the next
//! saki removes the temporary file it left, and rolls back an accept that did not finish.
//! The processes are paused at the exact point with the debug-build hook
//! `SAKI_TEST_PAUSE_AT`, then killed.

mod common;

use common::{env_with, wait_for, Env, WAIT_LIMIT};
use saki_testkit::{MockServer, Turn};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Starts `saki exec ARGS` and waits until it stops at `point` for good.
fn spawn_paused(e: &Env, server: &MockServer, point: &str, args: &[&str]) -> std::process::Child {
    let mut child = e
        .cmd()
        .env("SAKI_TEST_PAUSE_AT", point)
        .args(["exec", "--base-url", &server.openai_url(), "-m", "m"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The hook says on stderr that it paused: everything before the point is done then.
    let stderr = child.stderr.take().unwrap();
    let (paused, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Reads to the end, so the child never blocks on a full pipe.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("paused for a test") {
                let _ = paused.send(());
            }
        }
    });
    if seen.recv_timeout(WAIT_LIMIT).is_err() {
        kill(child);
        panic!("saki never paused at {point}");
    }
    child
}

fn kill(mut child: std::process::Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Files in `dir` whose name starts with `.saki-`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".saki-"))
        .map(|e| e.path())
        .collect()
}

fn data_dir(e: &Env) -> PathBuf {
    e.home.path().join(".local/share/saki")
}

#[test]
fn a_temporary_file_left_by_a_killed_write_is_removed_at_the_next_start() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    std::fs::create_dir(e.ws.join("sub")).unwrap();
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "w1",
        "write_file",
        json!({"path": "sub/b.txt", "content": "big ".repeat(10_000)}).to_string(),
    ));
    let child = spawn_paused(
        &e,
        &server,
        "write_atomic",
        &["--approval", "auto-edit", "write b"],
    );
    let pid = child.id();
    kill(child);
    let left = temp_files(&e.ws.join("sub"));
    assert_eq!(left.len(), 1, "{left:?}");
    let name = left[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!(".saki-{pid}-")) && name.ends_with(".tmp"),
        "{name}"
    );
    assert_eq!(
        std::fs::metadata(&left[0]).unwrap().len(),
        40_000,
        "full size"
    );
    assert!(!e.ws.join("sub/b.txt").exists());
    let record = data_dir(&e).join("inflight").join(pid.to_string());
    assert!(record.is_file(), "the directory was recorded");
    // A temporary file of another (never running) process is not in a record: kept.
    let foreign = e.ws.join(".saki-4999999-abcdef.tmp");
    std::fs::write(&foreign, "not ours to judge").unwrap();

    server.push(Turn::text("hello"));
    e.saki()
        .args(["exec", "--base-url", &server.openai_url(), "-m", "m", "hi"])
        .assert()
        .success();
    assert!(temp_files(&e.ws.join("sub")).is_empty(), "removed");
    assert!(!record.exists(), "the record went with it");
    assert!(foreign.exists());
}

#[test]
fn an_accept_killed_midway_is_rolled_back_at_the_next_start() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call("c1", "read_file", r#"{"path":"a.txt"}"#));
    server.push(Turn::text("a.txt says alpha."));
    server.push(Turn::text("write the notes"));
    server.push(
        Turn::new()
            .with_tool_call(
                "s1",
                "write_file",
                json!({"path": "a.txt", "content": "alpha, changed\n"}).to_string(),
            )
            .with_tool_call(
                "s2",
                "write_file",
                json!({"path": "notes/n.txt", "content": "notes\n"}).to_string(),
            ),
    );
    server.push(Turn::text("Wrote both."));
    // (The pipelined suggestion is asked for after the accept, which is killed first.)
    let child = spawn_paused(
        &e,
        &server,
        "apply",
        &[
            "--follow-ups",
            "1",
            "--approval",
            "auto-edit",
            "what does a.txt say?",
        ],
    );
    let journal = data_dir(&e).join("journal");
    // Paused after the first file (a.txt) of two was written.
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "alpha, changed\n"
    );
    kill(child);
    // Half applied: every file was staged (notes/ holds n.txt's temporary file), one
    // renamed.
    assert!(!e.ws.join("notes/n.txt").exists(), "half applied");
    let journals: Vec<_> = std::fs::read_dir(&journal).unwrap().collect();
    assert_eq!(journals.len(), 1, "the journal is on disk");

    server.push(Turn::text("hello"));
    let out = e
        .saki()
        .args(["exec", "--base-url", &server.openai_url(), "-m", "m", "hi"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: a saki stopped while changing files")
            && stderr.contains("restored: a.txt"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert!(!e.ws.join("notes").exists());
    assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 0);
    // The model was asked after the rollback: it saw the tree as it was.
    assert_eq!(server.pending_replies(), 0);
}

#[test]
fn calls_cut_off_by_a_kill_say_on_resume_what_is_known_of_their_effect() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    let server = MockServer::start().unwrap();
    let call = |turn: Turn, id: &str, name: &str, args: serde_json::Value| {
        turn.with_tool_call(id, name, args.to_string())
    };
    // The first call never ends, so the batch's results are never recorded.
    let mut batch = call(
        Turn::new(),
        "sleep",
        "shell",
        json!({"command": "sleep 30"}),
    );
    batch = call(batch, "read", "read_file", json!({"path": "a.txt"}));
    batch = call(
        batch,
        "b",
        "write_file",
        json!({"path": "b.txt", "content": "new b\n"}),
    );
    batch = call(
        batch,
        "c",
        "write_file",
        json!({"path": "c.txt", "content": "c\n"}),
    );
    batch = call(
        batch,
        "edit",
        "edit",
        json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
    );
    server.push(batch);
    let child = e
        .cmd()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "-m",
            "m",
        ])
        .args(["--approval", "yolo", "do it all"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(e.ws.join(name)).unwrap_or_default();
    wait_for("the writes", || {
        read("b.txt") == "new b\n" && read("c.txt") == "c\n" && read("a.txt") == "beta\n"
    });
    kill(child);
    let id = e.session_files()[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // After the kill, the person changes c.txt.
    std::fs::write(e.ws.join("c.txt"), "the person's\n").unwrap();

    server.push(Turn::text("ok"));
    e.saki()
        .args(["exec", "--resume", &id, "--base-url", &server.openai_url()])
        .args(["-m", "m", "what happened?"])
        .assert()
        .success();
    let body = server.requests().last().unwrap().body.clone();
    let result = |id: &str| {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"))["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for id in ["sleep", "read"] {
        assert!(
            result(id).starts_with(
                "did not finish: the session ended while it ran; this call changes nothing"
            ),
            "{id}: {}",
            result(id)
        );
    }
    assert!(
        result("b").starts_with("completed: b.txt holds exactly the 6 bytes this call wrote"),
        "{}",
        result("b")
    );
    for id in ["c", "edit"] {
        assert!(
            result(id).starts_with(
                "may have completed: the session ended while it ran; check its effect"
            ),
            "{id}: {}",
            result(id)
        );
    }
}

#[test]
fn an_undo_killed_midway_is_rolled_back_at_the_next_start() {
    let e = env_with(&[("a.txt", "a before\n"), ("b.txt", "b before\n")]);
    let server = MockServer::start().unwrap();
    let command = r#"{"command":"echo agent > a.txt && echo agent > b.txt"}"#;
    server.push(Turn::new().with_tool_call("c1", "shell", command));
    server.push(Turn::text("Done."));
    e.saki()
        .args(["exec", "--base-url", &server.openai_url(), "-m", "m"])
        .args(["--approval", "yolo", "change both"])
        .assert()
        .success();
    // The undo is one transaction: paused after its first file of two was put back.
    let mut child = e
        .cmd()
        .env("SAKI_TEST_PAUSE_AT", "apply")
        .arg("undo")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (paused, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("paused for a test") {
                let _ = paused.send(());
            }
        }
    });
    if seen.recv_timeout(WAIT_LIMIT).is_err() {
        kill(child);
        panic!("saki undo never paused");
    }
    let read = |p: &str| std::fs::read_to_string(e.ws.join(p)).unwrap();
    assert_eq!(read("a.txt"), "a before\n", "the first file was put back");
    assert_eq!(read("b.txt"), "agent\n");
    kill(child);
    assert_eq!(
        std::fs::read_dir(data_dir(&e).join("journal"))
            .unwrap()
            .count(),
        1
    );

    // The next saki rolls it back: the turn's files, as they were before the undo.
    let out = e.saki().args(["undo", "--list"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a saki stopped while changing files")
            && stderr.contains("restored: a.txt"),
        "{stderr}"
    );
    assert_eq!(read("a.txt"), "agent\n");
    assert_eq!(read("b.txt"), "agent\n");
}
