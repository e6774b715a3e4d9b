#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `saki-mock-provider` binary serves its script over real HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

#[test]
fn the_binary_prints_its_url_and_serves_the_scripted_turns() {
    let dir = std::env::temp_dir().join(format!("saki-mock-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello from the script"}]}"#).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_saki-mock-provider"))
        .arg(&script)
        .arg("--until-stdin-eof")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let addr = url.trim().strip_prefix("http://").unwrap().to_owned();
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("hello") && response.contains("script"),
        "{response}"
    );
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_bad_script_is_named_and_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_saki-mock-provider"))
        .arg("/nonexistent/script.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the script"));
}
