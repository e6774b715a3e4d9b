#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Background commands through the real binary and the mock provider: the model starts
//! one, reads it, and every process it started is gone once saki has exited.

mod common;

use common::{env_with, events, WAIT_LIMIT};
use saki_testkit::{Gate, MockServer, Turn};
use std::io::Read;

#[test]
fn a_background_command_dies_with_the_session() {
    let e = env_with(&[]);
    let fifo = e.ws.join("alive");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    // Whoever holds the FIFO open for writing keeps the reader from seeing its end: the
    // command and the process it put in the background both do.
    let (done_tx, done) = std::sync::mpsc::channel();
    let (opened_tx, opened) = std::sync::mpsc::channel();
    let reader_path = fifo.clone();
    std::thread::spawn(move || {
        let mut f = std::fs::File::open(&reader_path).unwrap();
        let _ = opened_tx.send(());
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        let _ = done_tx.send(());
    });
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Starting it.").with_tool_call(
        "c1",
        "shell",
        r#"{"command": "exec 3>alive; sleep 1000 & echo started; sleep 1000", "background": true}"#,
    ));
    // The next request is answered once the command has opened the FIFO, so the session
    // surely ends while it runs.
    let gate = Gate::new();
    server.push(
        Turn::text("Checking.")
            .with_tool_call("c2", "shell_output", r#"{"id": "bg1"}"#)
            .hold(&gate),
    );
    let opener = std::thread::spawn(move || {
        opened
            .recv_timeout(WAIT_LIMIT)
            .expect("the command never opened the FIFO");
        gate.open();
    });
    server.push(Turn::text("It runs."));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--approval",
            "yolo",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "start the server",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let events = events(&out);
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .filter_map(|e| e["item"]["output"].as_str())
        .collect();
    assert!(results[0].contains("bg1"), "{results:?}");
    assert!(results[1].contains("[bg1 is still running]"), "{results:?}");
    opener.join().unwrap();
    // saki has exited: nothing it started holds the FIFO any more.
    done.recv_timeout(WAIT_LIMIT)
        .expect("a background process outlived the session");
}

#[test]
fn shell_output_and_shell_kill_ask_nothing_but_the_command_is_approved_as_any() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Starting.").with_tool_call(
        "c1",
        "shell",
        r#"{"command": "touch made-it", "background": true}"#,
    ));
    server.push(Turn::text("Stopping.").with_tool_call("c2", "shell_kill", r#"{"id": "bg1"}"#));
    server.push(Turn::text("Done."));
    // In the default mode exec cannot ask: the command is denied as any write would be.
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "go",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let events = events(&out);
    let statuses: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .map(|e| format!("{} {}", e["item"]["status"], e["item"]["output"]))
        .collect();
    assert!(statuses[0].starts_with("\"denied\""), "{statuses:?}");
    // shell_kill ran (it needs no approval) and found no such command.
    assert!(
        statuses[1].contains("no background command"),
        "{statuses:?}"
    );
    assert!(!e.ws.join("made-it").exists());
}
