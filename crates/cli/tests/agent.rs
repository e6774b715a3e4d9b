#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` as an agent: a real conversation with tools for every wire protocol,
//! approvals and hooks, against the mock provider.

mod common;

use common::{env_with, events, items, Env};
use predicates::prelude::*;
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

fn env() -> Env {
    env_with(&[("greeting.txt", "Hello, world!\n")])
}

#[test]
fn reads_edits_and_answers_in_every_protocol() {
    for (provider, key) in [
        ("llamacpp", None),
        ("openai", Some("OPENAI_API_KEY")),
        ("anthropic", Some("ANTHROPIC_API_KEY")),
        ("gemini", Some("GEMINI_API_KEY")),
    ] {
        let e = env();
        let server = MockServer::start().unwrap();
        server.push(Turn::text("Let me look.").with_tool_call(
            "call_r",
            "read_file",
            r#"{"path":"greeting.txt"}"#,
        ));
        server.push(Turn::new().with_tool_call(
            "call_e",
            "edit",
            r#"{"path":"greeting.txt","old_string":"world","new_string":"saki"}"#,
        ));
        server.push(Turn::text("I changed the greeting to say saki."));
        let base = if matches!(provider, "llamacpp" | "openai") {
            server.openai_url()
        } else {
            server.url()
        };
        let mut cmd = e.saki();
        if let Some(k) = key {
            cmd.env(k, "test-key");
        }
        let out = cmd
            .args([
                "exec",
                "--json",
                "--approval",
                "auto-edit",
                "--provider",
                provider,
                "--base-url",
                &base,
                "--model",
                "m",
            ])
            .arg("change world to saki in greeting.txt")
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let ev = events(&out);
        assert_eq!(
            std::fs::read_to_string(e.ws.join("greeting.txt")).unwrap(),
            "Hello, saki!\n",
            "{provider}"
        );
        let calls = items(&ev, "tool_call");
        assert_eq!(calls.len(), 2, "{provider}");
        assert_eq!(calls[0]["name"], "read_file");
        assert_eq!(calls[0]["call_index"], 0);
        assert_ne!(calls[0]["batch_id"], calls[1]["batch_id"], "{provider}");
        let results = items(&ev, "tool_result");
        assert_eq!(
            results[0]["status"], "success",
            "{provider}: {:?}",
            results[0]
        );
        assert_eq!(results[0]["output"], "Hello, world!\n");
        assert_eq!(results[0]["call_id"], calls[0]["call_id"]);
        assert!(
            results[1]["output"]
                .as_str()
                .unwrap()
                .contains("+Hello, saki!"),
            "{provider}"
        );
        let done = ev.last().unwrap();
        assert_eq!(
            (
                done["type"].as_str(),
                done["status"].as_str(),
                done["requests"].as_u64()
            ),
            (Some("turn.completed"), Some("completed"), Some(3))
        );
        let text: String = ev
            .iter()
            .filter(|x| x["type"] == "item.delta" && x["kind"] == "text")
            .map(|x| x["delta"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Let me look.I changed the greeting to say saki.");
        // The file's content went back to the model in the second request.
        let second = server.requests()[1].body.to_string();
        assert!(second.contains("Hello, world!"), "{provider}: {second}");
        let tools: Vec<String> = match provider {
            "gemini" => serde_json::from_value::<Vec<Value>>(
                server.requests()[0].body["tools"][0]["functionDeclarations"].clone(),
            )
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect(),
            "llamacpp" => server.requests()[0].body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect(),
            _ => server.requests()[0].body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect(),
        };
        let core = [
            "read_file",
            "ls",
            "glob",
            "grep",
            "shell",
            "edit",
            "write_file",
            "delete_file",
        ];
        // A local server gets the lean set (`lean_tools`, on by default for llamacpp).
        // The full set adds the background commands beside `shell`, then the web, the
        // plan and the delegation tools.
        let expected: Vec<&str> = match provider {
            "llamacpp" => core.to_vec(),
            _ => [
                &core[..5],
                &["shell_output", "shell_kill"],
                &core[5..],
                &[
                    "web_fetch",
                    "update_plan",
                    "agent",
                    "ask_user",
                    "exit_plan_mode",
                    "remember",
                ],
            ]
            .concat(),
        };
        assert_eq!(tools, expected, "{provider}: reading and searching first");
        // Fields go out in the order the tool gives them, not sorted: small models
        // write arguments in the order they read them, and a sorted `edit` put
        // `new_string` first and led them to leave `old_string` out.
        let raw = String::from_utf8(server.requests()[0].raw_body.to_vec()).unwrap();
        let edit_fields = raw.find(r#""path":{"type":"string"},"old_string":{"#);
        assert!(
            edit_fields.is_some_and(
                |at| raw[at..].find("\"new_string\"") > raw[at..].find("\"old_string\"")
            ),
            "{provider}: {raw}"
        );
    }
}

#[test]
fn calls_that_need_approval_are_denied_and_the_model_is_told() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "c1",
        "write_file",
        r#"{"path":"x.txt","content":"x"}"#,
    ));
    server.push(Turn::text("I could not write the file."));
    e.saki()
        .args([
            "exec",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "write x",
        ])
        .assert()
        .success()
        .stdout("I could not write the file.\n")
        .stderr(predicate::str::contains("[tool] write_file: denied"))
        .stderr(predicate::function(|err: &str| {
            err.matches("[tool]").count() == 1
        }));
    assert!(!e.ws.join("x.txt").exists());
    let second = server.requests()[1].body.to_string();
    assert!(
        second.contains("needs approval in `default` mode")
            && second.contains("--approval auto-edit"),
        "{second}"
    );

    // plan mode refuses edits even when asked nicely; yolo runs any shell command.
    server.push(Turn::new().with_tool_call("c2", "shell", r#"{"command":"touch made.txt"}"#));
    server.push(Turn::text("ok"));
    e.saki()
        .args([
            "exec",
            "--approval",
            "plan",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "go",
        ])
        .assert()
        .success();
    assert!(!e.ws.join("made.txt").exists());
    server.push(Turn::new().with_tool_call("c3", "shell", r#"{"command":"touch made.txt"}"#));
    server.push(Turn::text("ok"));
    e.saki()
        .args([
            "exec",
            "--approval",
            "yolo",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "go",
        ])
        .assert()
        .success();
    assert!(e.ws.join("made.txt").exists());
    e.saki()
        .args(["exec", "--approval", "sometimes", "hi"])
        .assert()
        .code(2);
}

#[test]
fn hooks_can_deny_tools_and_cancel_prompts_but_workspace_hooks_are_ignored() {
    let e = env();
    let config_dir = e.home.path().join("config/saki");
    std::fs::create_dir_all(&config_dir).unwrap();
    let log = e.home.path().join("hook.log");
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            r#"
[[hooks.PreToolUse]]
command = "cat >> {log}; echo 'no reading today' >&2; exit 2"
matcher = "read_file|grep"

[[hooks.UserPromptSubmit]]
command = "grep -q forbidden && echo '{{\"decision\":\"block\",\"reason\":\"forbidden word\"}}' || true"
"#,
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(e.ws.join(".saki")).unwrap();
    std::fs::write(
        e.ws.join(".saki/config.toml"),
        "[[hooks.Stop]]\ncommand = \"touch pwned\"\n",
    )
    .unwrap();
    let server = MockServer::start().unwrap();
    server.push(
        Turn::new()
            .with_tool_call("c1", "read_file", r#"{"path":"greeting.txt"}"#)
            .with_tool_call("c2", "ls", "{}"),
    );
    server.push(Turn::text("fine"));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "read it",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let ev = events(&out);
    let results = items(&ev, "tool_result");
    assert_eq!(results[0]["status"], "denied");
    assert!(results[0]["output"]
        .as_str()
        .unwrap()
        .contains("no reading today"));
    assert_eq!(
        results[1]["status"], "success",
        "the matcher only covers read_file|grep"
    );
    let seen: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(
        (seen["event"].as_str(), seen["tool_name"].as_str()),
        (Some("PreToolUse"), Some("read_file"))
    );
    assert_eq!(seen["tool_input"]["path"], "greeting.txt");
    assert_eq!(seen["call_index"], 0);
    assert!(
        !e.ws.join("pwned").exists(),
        "hooks from the workspace config never run"
    );

    e.saki()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "say the forbidden thing",
        ])
        .assert()
        .code(7)
        .stdout(predicate::str::contains("prompt_cancelled"))
        .stderr(predicate::str::contains("forbidden word"));
    assert_eq!(
        server.requests().len(),
        2,
        "a cancelled prompt is never sent"
    );
}

#[test]
fn max_turns_stops_the_loop() {
    let e = env();
    let server = MockServer::start().unwrap();
    for i in 0..3 {
        server.push(Turn::new().with_tool_call(format!("c{i}"), "ls", "{}"));
    }
    e.saki()
        .args([
            "exec",
            "--max-turns",
            "2",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "loop",
        ])
        .assert()
        .code(6)
        .stderr(predicate::str::contains("--max-turns"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn read_only_shell_commands_never_need_approval() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(
        Turn::new()
            .with_tool_call("c1", "shell", r#"{"command":"cat greeting.txt | wc -l"}"#)
            .with_tool_call("c2", "shell", r#"{"command":"echo hi > out.txt"}"#),
    );
    server.push(Turn::text("ok"));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "count",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let ev = events(&out);
    let results = items(&ev, "tool_result");
    assert_eq!(results[0]["status"], "success");
    assert!(results[0]["output"].as_str().unwrap().starts_with("1\n"));
    assert_eq!(results[1]["status"], "denied");
    assert!(!e.ws.join("out.txt").exists());
}

#[test]
fn at_path_refs_attach_files_and_failures_become_alerts() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("It greets the world."));
    let out = e
        .saki()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
        ])
        .arg("what does @greeting.txt say? also @missing.md and @../escape.txt")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let ev = events(&out);
    let alerts: Vec<&Value> = ev.iter().filter(|x| x["type"] == "alert").collect();
    assert_eq!(alerts.len(), 2);
    assert_eq!(alerts[0]["level"], "warn");
    assert!(alerts[0]["message"]
        .as_str()
        .unwrap()
        .contains("missing.md"));
    assert!(alerts[1]["message"]
        .as_str()
        .unwrap()
        .contains("outside the workspace"));
    // The placeholders stay in the person's text; the resolved file is a message after it.
    let messages = server.requests()[0].body["messages"].clone();
    assert_eq!(
        messages.as_array().unwrap()[1..],
        [
            json!({"role": "user", "content": "what does @greeting.txt say? also [unresolved file ref: missing.md] and [unresolved file ref: ../escape.txt]"}),
            json!({"role": "user", "content": "[File: greeting.txt]\nHello, world!\n"}),
        ]
    );
}

#[test]
fn agents_md_reaches_the_system_prompt_and_the_base_prompt_stays_small() {
    let e = env();
    std::fs::write(
        e.ws.join("AGENTS.md"),
        "Always run `make check` before finishing.",
    )
    .unwrap();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("ok"));
    e.saki()
        .args([
            "exec",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
            "hi",
        ])
        .assert()
        .success();
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("Always run `make check`"), "{system}");
    assert!(system.contains(&e.ws.canonicalize().unwrap().display().to_string()));
    let out = e
        .saki()
        .args(["debug", "prompt-size"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    let total: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("base prompt:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(total < 2000, "{out}");
}

#[test]
fn add_dir_lets_references_and_tools_reach_another_directory() {
    let e = env();
    let other = e.home.path().join("shared");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("spec.md"), "the shared spec\n").unwrap();
    let spec = other.join("spec.md").canonicalize().unwrap();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Read it."));
    let base = server.openai_url();
    let prompt = format!("summarise @{}", spec.display());
    let run = |extra: &[&str]| {
        let mut cmd = e.saki();
        cmd.args(["exec", "--json", "--base-url", &base, "--model", "m"]);
        cmd.args(extra).arg(&prompt);
        cmd.assert()
    };
    run(&["--add-dir", other.to_str().unwrap()]).success();
    let file = server.requests()[0].body["messages"][2]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(file.contains("the shared spec"), "{file}");
    run(&["--add-dir", "/nonexistent/dir"])
        .code(2)
        .stderr(predicates::str::contains(
            "--add-dir: not a directory: /nonexistent/dir",
        ));
}
