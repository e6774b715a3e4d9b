#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `saki-mock-provider` binary serves its script over real HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_saki-mock-provider");

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("saki-mock-bin-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts the binary on `script` with `--until-stdin-eof`; returns it and its
/// `host:port`.
fn start(script: &PathBuf, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .arg(script)
        .arg("--until-stdin-eof")
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let addr = url.trim().strip_prefix("http://").unwrap().to_owned();
    (child, addr)
}

/// One HTTP/1.1 POST; the whole raw response (chunked bodies left as they are).
fn post(addr: &str, path: &str, body: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

fn stop(mut child: Child) {
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

fn run_with(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn the_binary_prints_its_url_and_serves_the_scripted_turns() {
    let scratch = Scratch::new("basic");
    let script = scratch.file(
        "script.json",
        r#"{"turns": [{"text": "hello from the script"}]}"#,
    );
    let (child, addr) = start(&script, &[]);
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let response = post(&addr, "/v1/chat/completions", body);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("hello") && response.contains("script"),
        "{response}"
    );
    // The queue is empty now: a plain 500.
    assert!(post(&addr, "/v1/chat/completions", body).starts_with("HTTP/1.1 500"));
    stop(child);
}

#[test]
fn turns_stream_in_order_with_delays_tool_calls_and_errors_and_requests_are_logged() {
    let scratch = Scratch::new("full");
    let script = scratch.file(
        "script.json",
        r#"{"turns": [
            {"thinking": "let me see", "text": "one two three", "chunk_delay_ms": 25,
             "usage": {"input_tokens": 100, "output_tokens": 20}},
            {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"status": 503, "body": {"error": "busy"}}
        ]}"#,
    );
    let log = scratch.0.join("requests.jsonl");
    let (child, addr) = start(&script, &["--log", log.to_str().unwrap()]);

    let started = Instant::now();
    let first = post(
        &addr,
        "/v1/messages",
        r#"{"model":"claude-x","stream":true,"messages":[]}"#,
    );
    let elapsed = started.elapsed();
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    // The text arrives word by word, one event each, after the thinking.
    let at = |needle: &str| {
        first
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing in {first}"))
    };
    let pieces = [
        r#""thinking":"let""#,
        r#""text":"one""#,
        r#""text":" two""#,
        r#""text":" three""#,
    ];
    let positions: Vec<usize> = pieces.iter().map(|p| at(p)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{first}");
    assert!(first.contains(r#""input_tokens":100"#), "{first}");
    // Fourteen events, each after a 25 ms pause.
    assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");

    let second = post(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"go"}]}"#,
    );
    assert!(
        second.contains(r#""id":"call_1""#) && second.contains(r#""name":"read_file""#),
        "{second}"
    );
    assert!(
        second.contains(r#""finish_reason":"tool_calls""#),
        "{second}"
    );

    let third = post(&addr, "/v1/chat/completions", r#"{"model":"gpt-x"}"#);
    assert!(third.starts_with("HTTP/1.1 503"), "{third}");
    assert!(third.ends_with(r#"{"error":"busy"}"#), "{third}");
    stop(child);

    let logged = std::fs::read_to_string(&log).unwrap();
    let models: Vec<String> = logged
        .lines()
        .map(|l| {
            let body: serde_json::Value = serde_json::from_str(l).unwrap();
            body["model"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(models, vec!["claude-x", "gpt-x", "gpt-x"]);
}

#[test]
fn bad_scripts_and_arguments_are_named_and_exit_2() {
    let scratch = Scratch::new("bad");
    let cases = [
        (r#"{"turns": [{"txt": "typo"}]}"#, "unknown field `txt`"),
        (r#"{"turn": []}"#, "unknown field `turn`"),
        (r#"{"turns": [{"status": "500"}]}"#, "invalid type"),
        (
            r#"{"turns": [{"tool_calls": [{"id": "c"}]}]}"#,
            "missing field `name`",
        ),
        (
            r#"{"turns": [{"text": "a"}, {"status": 500, "text": "x"}]}"#,
            "script.json: turns[1]: a `status` turn",
        ),
        (r#"{"turns": [{"status": 42}]}"#, "not an HTTP status code"),
        (r#"{"turns": [{"body": "x"}]}"#, "needs a `status`"),
        (r#"{"turns": [{"text": "a"},]}"#, "script.json"),
    ];
    for (script, expected) in cases {
        let path = scratch.file("script.json", script);
        let out = run_with(&[path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{script}: {stderr}");
        assert!(stderr.contains(expected), "{script}: {stderr}");
        assert!(out.stdout.is_empty());
    }

    let out = run_with(&["/nonexistent/script.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the script"));

    let good = scratch.file("good.json", r#"{"turns": []}"#);
    let good = good.to_str().unwrap();
    for (args, expected) in [
        (vec![], "no script given"),
        (vec![good, "--bogus"], "unknown option --bogus"),
        (vec![good, "--log"], "--log needs a file"),
        (vec![good, good], "unexpected argument"),
        (
            vec![good, "--log", "/nonexistent/dir/log"],
            "cannot open the log",
        ),
    ] {
        let out = run_with(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
