#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec --follow-ups N` against the mock provider: suggestion, speculation in the
//! overlay, accept with files applied, the pipelined suggestion, and a boundary that
//! runs the suggestion as a normal turn.

mod common;

use common::{env_with, events};
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::new().with_tool_call(id, name, args.to_string())
}

#[test]
fn follow_ups_accept_a_completed_speculation_then_run_a_boundary_normally() {
    let e = env_with(&[("a.txt", "alpha\n")]);
    let server = MockServer::start().unwrap();
    server.push(call("c1", "read_file", json!({"path": "a.txt"})).with_usage(100, 10));
    server
        .push(Turn::text("a.txt says alpha. Type `add a note` to record it.").with_usage(150, 20));
    server.push(Turn::text("add a note").with_usage(160, 3));
    server.push(
        call(
            "s1",
            "write_file",
            json!({"path": "notes.txt", "content": "alpha\n"}),
        )
        .with_usage(170, 15),
    );
    server.push(Turn::text("Added notes.txt.").with_usage(190, 5));
    server.push(Turn::text("download a.txt again").with_usage(200, 4));
    server.push(
        call(
            "s2",
            "shell",
            json!({"command": "curl -s https://example.com/a.txt -o a.txt"}),
        )
        .with_usage(210, 8),
    );
    server.push(Turn::text("I would need your approval to download it.").with_usage(220, 9));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--follow-ups",
            "2",
            "--approval",
            "auto-edit",
            "--base-url",
            &server.openai_url(),
            "-m",
            "main",
            "--fast-model",
            "fast",
            "what does a.txt say?",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let events = events(&out);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| {
            t.starts_with("suggestion") || t.starts_with("speculation") || *t == "turn.completed"
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "turn.completed",
            "suggestion",
            "speculation.started",
            "speculation.completed",
            "speculation.accepted",
            "turn.completed",
            "suggestion",
            "speculation.started",
            "speculation.boundary",
            "turn.completed",
        ]
    );
    // What reading ahead cost, apart from the turns: each turn.completed carries what
    // prepared it (an accepted speculation ends as a turn too); the pipelined suggestion
    // counts toward the turn it proposes, whether it ended before the accept or after.
    let completed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn.completed")
        .collect();
    let spent = |n: usize, kind: &str| {
        let c = &completed[n]["background_usage"][kind];
        (
            c["requests"].as_u64().unwrap(),
            c["input_tokens"].as_u64().unwrap(),
            c["output_tokens"].as_u64().unwrap(),
        )
    };
    assert_eq!(completed[0]["usage"]["input_tokens"], 250);
    assert_eq!(spent(0, "total"), (0, 0, 0));
    assert_eq!(completed[1]["speculated"], true);
    assert_eq!(completed[1]["requests"], 0);
    assert_eq!(spent(1, "suggestion"), (1, 160, 3));
    assert_eq!(spent(1, "speculation"), (2, 360, 20));
    assert_eq!(spent(1, "total"), (3, 520, 23));
    assert_eq!(spent(2, "pipelined_suggestion"), (1, 200, 4));
    assert_eq!(spent(2, "speculation"), (1, 210, 8));
    assert_eq!(spent(2, "compaction"), (0, 0, 0));
    assert_eq!(completed[2]["usage"]["input_tokens"], 220);
    assert!(
        !events.iter().any(|e| e["type"] == "background_usage"),
        "everything was reported on a turn"
    );
    let find = |t: &str| events.iter().find(|e| e["type"] == t).unwrap();
    assert_eq!(find("suggestion")["text"], "add a note");
    let accepted = find("speculation.accepted");
    assert_eq!(accepted["files_applied"], json!(["notes.txt"]));
    assert!(accepted["time_saved_ms"].is_u64());
    // A command that needs the network cannot be contained: it stops the speculation
    // before it runs.
    let boundary = find("speculation.boundary");
    let reason = boundary["reason"].as_str().unwrap();
    assert!(
        ["network", "overlay_unavailable"].contains(&reason),
        "{boundary}"
    );
    assert!(
        boundary["detail"].as_str().unwrap().contains("a.txt"),
        "{boundary}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("notes.txt")).unwrap(),
        "alpha\n"
    );
    assert!(e.ws.join("a.txt").exists(), "the boundary was not crossed");

    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    for r in &requests[2..7] {
        assert_eq!(
            r.body["model"], "fast",
            "background work uses the fast model"
        );
    }
    assert_eq!(requests[7].body["model"], "main");
    // The normal turn carries the accepted speculation in its history.
    let last = requests[7].body["messages"].to_string();
    assert!(last.contains("Added notes.txt.") && last.contains("download a.txt again"));
    // And the session log has it too.
    let log = std::fs::read_to_string(&e.session_files()[0]).unwrap();
    assert!(log.contains("Added notes.txt.") && log.contains("\"add a note\""));
}

#[test]
fn no_suggestion_before_two_assistant_messages_or_in_plan_mode() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Hello."));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--follow-ups",
            "3",
            "--base-url",
            &server.openai_url(),
            "-m",
            "m",
            "hi",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let suggestion = events(&out)
        .into_iter()
        .find(|e| e["type"] == "suggestion")
        .unwrap();
    assert_eq!(suggestion["suppressed"], "too_early");
    assert_eq!(server.requests().len(), 1);

    server.push(Turn::text("Hello again."));
    let out = e
        .saki()
        .args([
            "exec",
            "--follow-ups",
            "1",
            "--approval",
            "plan",
            "--resume",
            "--last",
            "--base-url",
            &server.openai_url(),
            "-m",
            "m",
            "hi",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("[suggestion] none (plan_mode)"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_filtered_suggestion_stops_the_follow_ups() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({})));
    server.push(Turn::text("Empty."));
    server.push(Turn::text("Looks good!"));
    let out = e
        .saki()
        .args([
            "exec",
            "--follow-ups",
            "1",
            "--base-url",
            &server.openai_url(),
            "-m",
            "m",
            "list",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[suggestion] none (evaluative)"));
    assert!(
        stderr.contains("[read-ahead: 0 accepted, 0 discarded, ~0 s saved, 0 tokens]"),
        "{stderr}"
    );
}

#[test]
fn follow_ups_in_a_row_carry_unique_batch_and_item_ids() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("Empty. Add notes.txt, then todo.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(call(
        "s1",
        "write_file",
        json!({"path": "notes.txt", "content": "n\n"}),
    ));
    server.push(Turn::text("Added notes.txt."));
    server.push(Turn::text("add todo.txt"));
    server.push(call(
        "s2",
        "write_file",
        json!({"path": "todo.txt", "content": "t\n"}),
    ));
    server.push(Turn::text("Added todo.txt."));
    // Never asked for: it would follow the last follow-up.
    server.push(Turn::text("show both files"));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--follow-ups",
            "2",
            "--approval",
            "auto-edit",
            "--base-url",
            &server.openai_url(),
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
    let completed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| &e["item"])
        .collect();
    let mut batches: Vec<&str> = completed
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .map(|i| i["batch_id"].as_str().unwrap())
        .collect();
    assert_eq!(batches, ["batch_1", "batch_2", "batch_3"]);
    let mut ids: Vec<&str> = completed
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    let all = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all, "item ids repeat: {ids:?}");
    // Nothing is suggested after the last follow-up: the run ends with its accept, and
    // every background token was reported on a turn.
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(last["speculated"], true);
    assert!(!events.iter().any(|e| e["type"] == "background_usage"));
    assert_eq!(
        server.requests().len(),
        8,
        "no suggestion after the last follow-up"
    );
    // The session log holds each batch id once per call and once per result.
    let log = std::fs::read_to_string(&e.session_files()[0]).unwrap();
    batches.dedup();
    for batch in batches {
        assert_eq!(log.matches(&format!("\"{batch}\"")).count(), 2, "{batch}");
    }
}

#[test]
fn an_unreadable_saki_suggestions_value_is_a_config_error_naming_it() {
    let e = env_with(&[]);
    let out = e
        .saki()
        .env("SAKI_SUGGESTIONS", "sometimes")
        .args([
            "exec",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "-m",
            "m",
            "hi",
        ])
        .assert()
        .code(3)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("SAKI_SUGGESTIONS") && err.contains("sometimes"),
        "{err}"
    );
}

#[test]
fn follow_ups_pass_the_persons_hooks_and_a_refused_accept_applies_nothing() {
    let e = env_with(&[]);
    let log = e.home.path().join("hooks.log");
    let config = e.home.path().join("config/saki");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[[hooks.PreToolUse]]\ncommand = \"cat >> '{0}'; echo >> '{0}'\"\n\n\
             [[hooks.UserPromptSubmit]]\n\
             command = \"grep -q 'add a note' && {{ echo 'not now' >&2; exit 2; }}; exit 0\"\n",
            log.display()
        ),
    )
    .unwrap();
    let server = MockServer::start().unwrap();
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("Empty. Type `add a note` to add one."));
    server.push(Turn::text("add a note"));
    server.push(call(
        "s1",
        "write_file",
        json!({"path": "notes.txt", "content": "n\n"}),
    ));
    server.push(Turn::text("Added notes.txt."));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--follow-ups",
            "1",
            "--approval",
            "auto-edit",
            "--base-url",
            &server.openai_url(),
            "-m",
            "main",
            "what is here?",
        ])
        .assert()
        .code(7)
        .get_output()
        .stdout
        .clone();
    let events = events(&out);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.failed");
    assert_eq!(last["error"]["kind"], "prompt_cancelled");
    assert!(last["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not now"));
    assert!(!e.ws.join("notes.txt").exists(), "nothing was applied");
    let calls: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["tool_name"], "ls");
    assert!(calls[0].get("speculation").is_none());
    assert_eq!(calls[1]["tool_name"], "write_file");
    assert_eq!(calls[1]["speculation"], true);
}
