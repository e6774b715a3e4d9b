#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec --output-schema FILE` and `--output-last-message FILE` against the mock
//! provider, per protocol: what the request asks for, what is validated, what is
//! written, and how a failure is reported.

mod common;

use common::{env_with, events as json_lines, Env};
use predicates::prelude::*;
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

const SCHEMA: &str = r#"{"type": "object", "properties": {"answer": {"type": "integer"},
  "files": {"type": "array", "items": {"type": "string"}}},
  "required": ["answer", "files"], "additionalProperties": false}"#;

fn with_schema(files: &[(&str, &str)]) -> Env {
    let e = env_with(files);
    std::fs::write(e.ws.join("schema.json"), SCHEMA).unwrap();
    e
}

fn schema() -> Value {
    serde_json::from_str(SCHEMA).unwrap()
}

/// The text of every user message of a request body, whatever the protocol.
fn user_text(body: &Value) -> String {
    body.to_string()
}

/// A turn that looks first (`ls`), then answers `answer`.
fn look_then_answer(server: &MockServer, answer: &str) {
    server.push(Turn::new().with_tool_call("c1", "ls", "{}"));
    server.push(Turn::text(answer));
}

#[test]
fn chat_completions_asks_for_the_schema_on_every_request_and_the_answer_is_written() {
    let server = MockServer::start().unwrap();
    look_then_answer(&server, r#"{"answer": 42, "files": ["a.txt"]}"#);
    let e = with_schema(&[("a.txt", "a")]);
    e.saki()
        .args([
            "exec",
            "--provider",
            "llamacpp",
            "--base-url",
            &server.openai_url(),
        ])
        .args([
            "--output-schema",
            "schema.json",
            "--output-last-message",
            "out/last.json",
        ])
        .arg("how many?")
        .assert()
        .success()
        .stdout(r#"{"answer": 42, "files": ["a.txt"]}"#.to_owned() + "\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let format = &r.body["response_format"];
        assert_eq!(format["type"], "json_schema", "{}", r.body);
        assert_eq!(format["json_schema"]["schema"], schema());
        assert!(r.body["tools"].as_array().unwrap().len() > 1, "tools stay");
    }
    // Structured output: the prompt is the person's own.
    assert_eq!(requests[0].body["messages"][1]["content"], "how many?");
    assert_eq!(
        std::fs::read_to_string(e.ws.join("out/last.json")).unwrap(),
        "{\"answer\": 42, \"files\": [\"a.txt\"]}\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(e.ws.join("out")).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left");
}

#[test]
fn responses_asks_for_the_schema_as_text_format() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text(r#"{"answer": 1, "files": []}"#));
    let e = with_schema(&[]);
    e.saki()
        .env("OPENAI_API_KEY", "sk")
        .args(["exec", "--provider", "openai", "--model", "gpt-test"])
        .args([
            "--base-url",
            &server.openai_url(),
            "--output-schema",
            "schema.json",
        ])
        .arg("count")
        .assert()
        .success();
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.body["text"]["format"]["type"], "json_schema");
    assert_eq!(r.body["text"]["format"]["name"], "final_answer");
    assert_eq!(r.body["text"]["format"]["schema"], schema());
    assert!(!user_text(&r.body).contains("must be only a JSON value"));
}

#[test]
fn gemini_3_gets_a_response_schema_and_gemini_2_an_instruction() {
    let server = MockServer::start().unwrap();
    let e = with_schema(&[]);
    for model in ["gemini-3-pro-preview", "gemini-2.5-flash"] {
        server.push(Turn::text(r#"{"answer": 3, "files": ["x"]}"#));
        e.saki()
            .env("GEMINI_API_KEY", "g")
            .args(["exec", "--provider", "gemini", "--model", model])
            .args([
                "--base-url",
                &server.url(),
                "--output-schema",
                "schema.json",
            ])
            .arg("count")
            .assert()
            .success();
    }
    let requests = server.requests();
    let (three, two) = (&requests[0].body, &requests[1].body);
    assert_eq!(
        three["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(three["generationConfig"]["responseJsonSchema"], schema());
    assert!(!user_text(three).contains("must be only a JSON value"));
    // Gemini 2 refuses a JSON response type beside function calling.
    assert!(
        two["generationConfig"].get("responseJsonSchema").is_none(),
        "{two}"
    );
    assert!(
        two["generationConfig"].get("responseMimeType").is_none(),
        "{two}"
    );
    assert!(
        user_text(two).contains("must be only a JSON value"),
        "{two}"
    );
    assert!(user_text(two).contains("additionalProperties"));
}

#[test]
fn anthropic_is_instructed_and_a_fenced_answer_validates() {
    let server = MockServer::start().unwrap();
    look_then_answer(&server, "```json\n{\"answer\": 7, \"files\": []}\n```");
    let e = with_schema(&[]);
    e.saki()
        .env("ANTHROPIC_API_KEY", "k")
        .args([
            "exec",
            "--provider",
            "anthropic",
            "--base-url",
            &server.url(),
        ])
        .args([
            "--output-schema",
            "schema.json",
            "--output-last-message",
            "last.json",
        ])
        .arg("count")
        .assert()
        .success();
    let requests = server.requests();
    for r in &requests {
        let body = r.body.to_string();
        assert!(
            !body.contains("json_schema") && !body.contains("output_format"),
            "{body}"
        );
    }
    let first = user_text(&requests[0].body);
    assert!(
        first.contains("count\\n\\nWhen you give your final answer"),
        "{first}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("last.json")).unwrap(),
        "{\"answer\": 7, \"files\": []}\n",
        "the JSON without its fence"
    );
}

#[test]
fn an_answer_that_does_not_validate_fails_the_run_and_writes_nothing() {
    let server = MockServer::start().unwrap();
    let e = with_schema(&[]);
    std::fs::write(e.ws.join("last.json"), "old\n").unwrap();
    for (answer, says) in [
        (
            r#"{"answer": "many", "files": []}"#,
            "does not match --output-schema",
        ),
        ("There are 3 files.", "is not JSON"),
    ] {
        server.push(Turn::text(answer));
        let out = e
            .saki()
            .args(["exec", "--json", "--provider", "llamacpp"])
            .args(["--base-url", &server.openai_url()])
            .args([
                "--output-schema",
                "schema.json",
                "--output-last-message",
                "last.json",
            ])
            .arg("count")
            .assert()
            .code(8)
            .stderr(predicate::str::contains(says))
            .get_output()
            .stdout
            .clone();
        let events = json_lines(&out);
        let last = events.last().unwrap();
        assert_eq!(last["type"], "turn.failed", "{last}");
        assert_eq!(last["error"]["kind"], "output_schema");
        assert!(last["error"]["message"].as_str().unwrap().contains(says));
        assert!(!events.iter().any(|e| e["type"] == "turn.completed"));
    }
    assert_eq!(
        std::fs::read_to_string(e.ws.join("last.json")).unwrap(),
        "old\n",
        "a failed run leaves the file alone"
    );
}

#[test]
fn a_schema_file_that_is_not_json_is_a_usage_error_before_any_request() {
    let server = MockServer::start().unwrap();
    let e = env_with(&[("schema.json", "{not json")]);
    e.saki()
        .args([
            "exec",
            "--json",
            "--provider",
            "llamacpp",
            "--base-url",
            &server.openai_url(),
        ])
        .args(["--output-schema", "schema.json", "hi"])
        .assert()
        .code(2)
        .stdout(predicate::str::contains(r#""kind":"usage""#))
        .stderr(predicate::str::contains("schema.json: not valid JSON"));
    e.saki()
        .args([
            "exec",
            "--provider",
            "llamacpp",
            "--base-url",
            &server.openai_url(),
        ])
        .args(["--output-schema", "missing.json", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.json: cannot read it"));
    e.saki()
        .args([
            "exec",
            "--follow-ups",
            "1",
            "--output-schema",
            "schema.json",
            "hi",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
    assert!(server.requests().is_empty());
}

#[test]
fn output_last_message_holds_the_final_message_of_a_turn_with_tools() {
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_text("Let me look.").with_tool_call(
        "c1",
        "read_file",
        r#"{"path": "a.txt"}"#,
    ));
    server.push(Turn::text("a.txt says hello."));
    let e = env_with(&[("a.txt", "hello")]);
    e.exec_llamacpp(
        &server.openai_url(),
        &["--output-last-message", "last.txt"],
        "what does a.txt say?",
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("last.txt")).unwrap(),
        "a.txt says hello.\n"
    );
    // No structured output was asked for.
    assert!(server.requests()[0].body.get("response_format").is_none());
}

#[test]
fn a_ref_cycle_in_the_schema_is_a_usage_error_before_any_request() {
    let server = MockServer::start().unwrap();
    let cycle = r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
        "type": "object", "properties": {"answer": {"$ref": "#/$defs/a"}}}"##;
    let e = env_with(&[("schema.json", cycle)]);
    e.saki()
        .args([
            "exec",
            "--provider",
            "llamacpp",
            "--base-url",
            &server.openai_url(),
        ])
        .args(["--output-schema", "schema.json", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`$ref` cycle"))
        .stderr(predicate::str::contains("#/$defs/a"));
    assert!(server.requests().is_empty());
}

/// A FIFO, a device or a link given as FILE stays what it is: the message is written
/// into it (through the link), not renamed over it.
#[test]
fn output_last_message_writes_into_a_fifo_and_through_a_link() {
    use std::os::unix::fs::FileTypeExt;
    let server = MockServer::start().unwrap();
    let e = env_with(&[]);
    let elsewhere = e.home.path().join("elsewhere.txt");
    std::fs::write(&elsewhere, "old").unwrap();
    std::os::unix::fs::symlink(&elsewhere, e.ws.join("link.txt")).unwrap();
    server.push(Turn::text("Through the link."));
    e.exec_llamacpp(
        &server.openai_url(),
        &["--output-last-message", "link.txt"],
        "hi",
    );
    assert!(std::fs::symlink_metadata(e.ws.join("link.txt"))
        .unwrap()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap(),
        "Through the link.\n"
    );

    let fifo = e.ws.join("answer.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    server.push(Turn::text("Into the pipe."));
    e.exec_llamacpp(
        &server.openai_url(),
        &["--output-last-message", "answer.fifo"],
        "hi",
    );
    // First: were it replaced, the reader would wait on the old pipe for ever.
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(reader.join().unwrap(), "Into the pipe.\n");
}

#[test]
fn exec_shows_the_plan_on_stderr_and_as_plan_updated() {
    let plan = json!({"explanation": "two steps", "plan": [
        {"step": "Read a.txt", "status": "completed"},
        {"step": "Answer", "status": "in_progress"}]});
    let server = MockServer::start().unwrap();
    let e = env_with(&[("a.txt", "hello")]);
    // A local server gets the lean tool set unless config offers the plan tool.
    let config = e.home.path().join("config/saki");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[providers.llamacpp]\nlean_tools = false\n",
    )
    .unwrap();
    for _ in 0..2 {
        server.push(Turn::new().with_tool_call("p1", "update_plan", plan.to_string()));
        server.push(Turn::text("Done."));
    }
    let out = e.exec_llamacpp(&server.openai_url(), &[], "plan it");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Done.\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[plan] 1/2 done: two steps\n  [x] Read a.txt\n  [~] Answer\n"),
        "{err}"
    );
    let out = e.exec_llamacpp(&server.openai_url(), &["--json"], "plan it");
    let events = json_lines(&out.stdout);
    let updated: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "plan.updated")
        .collect();
    assert_eq!(updated.len(), 1, "{events:?}");
    assert_eq!(updated[0]["plan"], plan["plan"]);
    assert_eq!(updated[0]["explanation"], "two steps");
    assert!(updated[0].get("restored").is_none());
}
