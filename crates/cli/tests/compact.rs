#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Compaction through the CLI: `exec` compacts automatically when the window fills and
//! reports it, `saki compact` compacts by hand, and a resumed session sends the
//! compacted history.

mod common;

use common::{env_with, events, Env};
use saki_testkit::{MockServer, Turn};
use serde_json::Value;

fn env() -> Env {
    let e = env_with(&[
        ("a.txt", &"alpha ".repeat(2_000)),
        ("b.txt", &"bravo ".repeat(2_000)),
    ]);
    let config = e.home.path().join("config/saki");
    std::fs::create_dir_all(&config).unwrap();
    // 8000-token window, 2000 reserved for output: compaction acts at 5100 tokens.
    std::fs::write(
        config.join("config.toml"),
        "[models.m]\ncontext_window = 8000\n",
    )
    .unwrap();
    e
}

fn exec(e: &Env, server: &MockServer, extra: &[&str], prompt: &str) -> Vec<Value> {
    let url = server.openai_url();
    let mut args = vec!["exec", "--json", "--base-url", &url, "-m", "m"];
    args.extend_from_slice(extra);
    args.push(prompt);
    let out = e
        .saki()
        .args(&args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    events(&out)
}

/// A summary reply with the sections a snapshot must have.
fn snapshot(goal: &str) -> String {
    format!(
        "<scratchpad>notes</scratchpad><state_snapshot><overall_goal>{goal}</overall_goal>\
         <current_plan>1. [TODO] answer</current_plan></state_snapshot>"
    )
}

fn read(id: &str, path: &str) -> Turn {
    Turn::new().with_tool_call(id, "read_file", format!("{{\"path\":\"{path}\"}}"))
}

#[test]
fn exec_compacts_when_the_window_fills_and_saki_compact_compacts_by_hand() {
    let e = env();
    // A window this small would clear the first turn's read rather than summarize it
    // (the next test): here the summary is what is tried.
    e.write_config("[models.m]\ncontext_window = 8000\n[compaction]\nprune = false\n");
    let server = MockServer::start().unwrap();
    server.push(read("c1", "a.txt"));
    server.push(Turn::text("a.txt repeats alpha."));
    let first = exec(&e, &server, &[], "what is in a.txt?");
    assert!(first.iter().all(|ev| ev["type"] != "compaction"));

    // The second turn's read crosses the line: the first turn is summarized.
    server.push(read("c2", "b.txt"));
    server.push(Turn::text(snapshot("goal: learn what a.txt holds (alpha)")));
    server.push(Turn::text("b.txt repeats bravo."));
    let second = exec(&e, &server, &["--resume", "--last"], "and b.txt?");
    let compaction = second.iter().find(|ev| ev["type"] == "compaction").unwrap();
    assert_eq!(compaction["status"], "compressed", "{compaction}");
    assert_eq!(compaction["trigger"], "auto");
    let (before, after) = (
        compaction["tokens_before"].as_u64().unwrap(),
        compaction["tokens_after"].as_u64().unwrap(),
    );
    assert!(before >= 5_100 && after < before, "{compaction}");
    let requests = server.requests();
    let summary_request = requests[requests.len() - 2].body.to_string();
    assert!(summary_request.contains("state_snapshot"));
    let continued = requests.last().unwrap().body.to_string();
    assert!(continued.contains("goal: learn what a.txt holds"));
    assert!(!continued.contains("alpha alpha"), "the raw read is gone");

    // By hand, in plain mode: one line with the tokens before and after.
    server.push(Turn::text(snapshot("goal: compare a.txt and b.txt")));
    let out = e
        .saki()
        .args(["compact", "--last", "--base-url", &server.openai_url()])
        .assert()
        .success()
        .get_output()
        .clone();
    let line = String::from_utf8_lossy(&out.stderr);
    assert!(
        line.starts_with("[compaction] compressed (manual): "),
        "{line}"
    );
    assert!(line.contains(" → ") && line.contains("tokens"), "{line}");
    // The session's model was used for the summary.
    assert_eq!(server.requests().last().unwrap().body["model"], "m");

    // Resuming sends the newest snapshot, not the raw turns (which stay on disk).
    server.push(Turn::text("done"));
    exec(&e, &server, &["--resume", "--last"], "thanks");
    let resumed = server.requests().last().unwrap().body.to_string();
    assert!(resumed.contains("goal: compare a.txt and b.txt"));
    assert!(!resumed.contains("bravo bravo"));
    let log = std::fs::read_to_string(&e.session_files()[0]).unwrap();
    assert_eq!(log.matches("\"type\":\"compaction\"").count(), 2);
    assert!(log.contains("alpha alpha"));
}

/// A window under 16k tokens (a stock llama.cpp server has 4096): the first turn's read is
/// cleared, and no summary is asked of the model.
#[test]
fn a_small_window_clears_old_reads_before_it_summarizes() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(read("c1", "a.txt"));
    server.push(Turn::text("a.txt repeats alpha."));
    exec(&e, &server, &[], "what is in a.txt?");
    server.push(read("c2", "b.txt"));
    server.push(Turn::text("b.txt repeats bravo."));
    let second = exec(&e, &server, &["--resume", "--last"], "and b.txt?");
    let compaction = second.iter().find(|ev| ev["type"] == "compaction").unwrap();
    assert_eq!(compaction["status"], "pruned", "{compaction}");
    assert_eq!(compaction["pruned"], 1, "{compaction}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "no summary request");
    let last = requests.last().unwrap().body.to_string();
    assert!(!last.contains("alpha alpha"), "the first read is cleared");
    assert!(last.contains("bravo bravo"), "the newest read stays");
}

#[test]
fn compaction_can_be_turned_off_and_compact_needs_a_session() {
    let e = env();
    e.write_config("[models.m]\ncontext_window = 8000\n[compaction]\nauto = false\n");
    let server = MockServer::start().unwrap();
    server.push(read("c1", "a.txt"));
    server.push(read("c2", "b.txt"));
    server.push(Turn::text("both read"));
    let out = exec(&e, &server, &[], "read both");
    assert!(out.iter().all(|ev| ev["type"] != "compaction"));
    assert_eq!(server.requests().len(), 3);

    e.saki()
        .args(["compact"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--last"));
    e.saki()
        .args(["compact", "nope", "--base-url", &server.openai_url()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no session with id `nope`"));
}

#[test]
fn a_bad_threshold_is_a_config_error() {
    let e = env();
    e.write_config("[compaction]\nthreshold = 1.5\n");
    e.saki()
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
        .stderr(predicates::str::contains("compaction.threshold = 1.5"));
}
