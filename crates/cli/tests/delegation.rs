#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The delegation tools through the real binary: what `saki exec` does with a question
//! nobody can answer, a plan to leave plan mode with, subagents in `--json`, skills in
//! the system prompt, and `subagent_depth`.

mod common;

use common::{env_with, events, Env};
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

fn exec(e: &Env, server: &MockServer, args: &[&str], prompt: &str) -> std::process::Output {
    e.cmd()
        .args(["exec", "--base-url", &server.openai_url(), "--model", "m"])
        .args(args)
        .arg(prompt)
        .output()
        .unwrap()
}

/// A workspace with one skill, as Claude Code keeps them.
fn env_with_pdf_skill() -> Env {
    let e = env_with(&[]);
    std::fs::create_dir_all(e.ws.join(".claude/skills/pdf")).unwrap();
    std::fs::write(
        e.ws.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Fill PDF forms\n---\nUse pdftk.",
    )
    .unwrap();
    e
}

/// The body of the one request `saki exec "hello"` sends, answered with text.
fn first_request_for_hello(e: &Env) -> Value {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("ok"));
    let out = exec(e, &server, &[], "hello");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.requests()[0].body.clone()
}

fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::new().with_tool_call(id, name, args.to_string())
}

#[test]
fn ask_user_in_exec_is_an_error_result_and_the_run_goes_on() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    server.push(call(
        "q",
        "ask_user",
        json!({"question": "Which file?", "options": ["a", "b"]}),
    ));
    server.push(Turn::text("I assumed a."));
    let out = exec(&e, &server, &["--json"], "fix it");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = events(&out.stdout)
        .into_iter()
        .find(|v| v["type"] == "item.completed" && v["item"]["kind"] == "tool_result")
        .unwrap();
    assert_eq!(result["item"]["status"], "error");
    assert!(result["item"]["output"]
        .as_str()
        .unwrap()
        .contains("no person can answer"));
}

#[test]
fn exit_plan_mode_in_exec_ends_the_turn_with_the_plan() {
    let e = env_with(&[]);
    let server = MockServer::start().unwrap();
    server.push(call(
        "p",
        "exit_plan_mode",
        json!({"plan": "1. Edit src/a.rs\n2. Run the tests"}),
    ));
    server.push(Turn::text("never asked for"));
    let out = exec(&e, &server, &["--approval", "plan"], "plan the fix");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1. Edit src/a.rs\n2. Run the tests\n"
    );
    assert_eq!(server.requests().len(), 1, "the turn ends with the plan");
}

#[test]
fn subagent_items_carry_their_parent_call_id_in_json() {
    let e = env_with(&[("main.rs", "fn main() {}\n")]);
    let server = MockServer::start().unwrap();
    server.push(call(
        "parent",
        "agent",
        json!({"description": "find main", "prompt": "Where is main?", "agent": "explore"}),
    ));
    server.push(call("inner", "grep", json!({"pattern": "fn main"})));
    server.push(Turn::text("main.rs:1"));
    server.push(Turn::text("main is in main.rs."));
    let out = exec(&e, &server, &["--json"], "find main");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = events(&out.stdout);
    let inner: Vec<&Value> = all
        .iter()
        .filter(|v| v["item"]["parent_call_id"] == "parent")
        .collect();
    let kinds: Vec<&str> = inner
        .iter()
        .map(|v| v["item"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["tool_call", "tool_result", "assistant_message"]);
    assert_eq!(inner[0]["item"]["agent"], "explore");
    let parent = all
        .iter()
        .find(|v| {
            v["type"] == "item.completed"
                && v["item"]["kind"] == "tool_result"
                && v["item"]["call_id"] == "parent"
        })
        .unwrap();
    assert_eq!(parent["item"]["output"], "main.rs:1");
    assert!(parent["item"].get("parent_call_id").is_none());
}

#[test]
fn skills_from_claude_code_are_listed_and_subagent_depth_0_turns_agents_off() {
    let e = env_with_pdf_skill();
    e.write_config("subagent_depth = 0\n");
    let body = &first_request_for_hello(&e);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- pdf: Fill PDF forms"), "{system}");
    assert!(!system.contains("Use pdftk"));
    let tools = tool_names(body);
    assert!(tools.contains(&"skill") && tools.contains(&"remember") && tools.contains(&"ask_user"));
    assert!(!tools.contains(&"agent"), "{tools:?}");
}

#[test]
fn a_lean_tool_set_has_no_skill_tool_and_no_skills_in_its_prompt() {
    let e = env_with_pdf_skill();
    e.write_config("[providers.openai-compatible]\nlean_tools = true\n");
    let body = &first_request_for_hello(&e);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("pdf"), "{system}");
    let tools = tool_names(body);
    assert!(
        tools.contains(&"read_file") && !tools.contains(&"skill"),
        "{tools:?}"
    );
}
