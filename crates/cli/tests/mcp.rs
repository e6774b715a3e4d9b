#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki mcp list | add | remove` and the MCP part of `saki debug prompt-size`, with a
//! small Python MCP server (`fixtures/mcp_server.py`; skipped without python3).

mod common;

use common::env_with;
use serde_json::Value;

/// The real Python interpreter (not a shim needing PATH), when there is one.
fn python() -> Option<String> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !path.is_empty()).then_some(path)
}

fn fixture() -> String {
    // At run time, as `cargo test` sets it: a binary shared by checkouts through one
    // target directory would carry another checkout's path.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(
            || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            std::path::PathBuf::from,
        )
        .join("tests/fixtures/mcp_server.py")
        .display()
        .to_string()
}

fn config_file(env: &common::Env) -> std::path::PathBuf {
    env.home.path().join("config/saki/config.toml")
}

#[test]
fn add_and_remove_edit_the_global_config_and_keep_its_comments() {
    let env = env_with(&[]);
    let file = config_file(&env);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "# keys live elsewhere\nprovider = \"ollama\"\n").unwrap();
    env.saki()
        .args([
            "mcp",
            "add",
            "docs",
            "--env",
            "LEVEL=debug",
            "--",
            "npx",
            "-y",
            "docs-server",
            "--port",
            "0",
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("added MCP server `docs`"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# keys live elsewhere\nprovider = \"ollama\"\n"),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs-server\", \"--port\", \"0\"]\nenv = { LEVEL = \"debug\" }\n"),
        "{text}"
    );
    env.saki()
        .args(["mcp", "add", "docs", "--", "other"])
        .assert()
        .code(2);
    env.saki()
        .args(["mcp", "add", "bad name", "--", "x"])
        .assert()
        .code(2);
    env.saki().args(["mcp", "add", "empty"]).assert().code(2);
    env.saki()
        .args(["mcp", "add", "web", "--url", "http://127.0.0.1:3001/mcp"])
        .assert()
        .success();
    env.saki()
        .args(["mcp", "remove", "docs"])
        .assert()
        .success();
    env.saki().args(["mcp", "remove", "web"]).assert().success();
    env.saki()
        .args(["mcp", "remove", "docs"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no MCP server named `docs`"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# keys live elsewhere\nprovider = \"ollama\"\n"
    );
}

/// `--env` may hold a token: the config file `saki mcp add` creates is 0600.
#[test]
fn add_creates_a_private_config_file() {
    use std::os::unix::fs::PermissionsExt;
    let env = env_with(&[]);
    env.saki()
        .args(["mcp", "add", "gh", "--env", "TOKEN=ghp_x", "--", "gh-mcp"])
        .assert()
        .success();
    let mode = std::fs::metadata(config_file(&env))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn list_without_servers_says_how_to_add_one() {
    let env = env_with(&[]);
    env.saki()
        .args(["mcp", "list"])
        .assert()
        .success()
        .stdout(predicates::str::contains("No MCP servers are configured"));
    let out = env
        .saki()
        .args(["mcp", "list", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(json, serde_json::json!({"servers": []}));
}

#[test]
fn list_shows_each_server_its_state_and_its_tools() {
    let Some(python) = python() else {
        eprintln!("skipped: no python3");
        return;
    };
    let env = env_with(&[]);
    env.saki()
        .args(["mcp", "add", "py", "--", &python, &fixture()])
        .assert()
        .success();
    env.saki()
        .args(["mcp", "add", "gone", "--", "/nonexistent/mcp-server"])
        .assert()
        .success();
    let text = std::fs::read_to_string(config_file(&env)).unwrap();
    std::fs::write(
        config_file(&env),
        format!("{text}\n[mcp_servers.off]\ncommand = \"x\"\nenabled = false\n"),
    )
    .unwrap();

    let out = env.saki().args(["mcp", "list"]).assert().success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        shown.contains("gone (stdio: /nonexistent/mcp-server)\n  failed: cannot start"),
        "{shown}"
    );
    assert!(shown.contains("off (stdio: x)\n  disabled"), "{shown}");
    assert!(shown.contains("py (stdio: "), "{shown}");
    assert!(
        shown.contains("  connected, 2 tools, approval: ask\n"),
        "{shown}"
    );
    assert!(
        shown.contains("  mcp__py__echo     Echoes the message back [read-only]\n"),
        "{shown}"
    );
    assert!(
        shown.contains("  mcp__py__get-sum  Returns the sum of a and b\n"),
        "{shown}"
    );

    let out = env
        .saki()
        .args(["mcp", "list", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let servers = json["servers"].as_array().unwrap();
    let names: Vec<&str> = servers
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gone", "off", "py"]);
    assert_eq!(servers[0]["state"], "failed");
    assert!(servers[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("cannot start"));
    assert_eq!(servers[1]["state"], "disabled");
    assert_eq!(servers[2]["state"], "connected");
    assert_eq!(servers[2]["transport"], "stdio");
    assert_eq!(servers[2]["tools"][1]["name"], "mcp__py__get-sum");
    assert_eq!(servers[2]["tools"][1]["tool"], "get-sum");
    assert_eq!(servers[2]["tools"][0]["read_only_hint"], true);
    assert_eq!(
        servers[2]["tools"][1]["input_schema"]["required"],
        serde_json::json!(["a", "b"])
    );

    let out = env.saki().args(["debug", "prompt-size"]).assert().success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(shown.contains("mcp py: "), "{shown}");
    assert!(shown.contains(" bytes, 2 tools)"), "{shown}");
    assert!(
        shown.contains("mcp gone: not counted, failed: cannot start"),
        "{shown}"
    );
}

/// Server names (from a possibly untrusted workspace config), TOML errors quoting a
/// config and a server's stderr reach the terminal with their escape sequences made
/// visible, never as escape sequences.
#[test]
fn escape_sequences_in_names_configs_and_stderr_never_reach_the_terminal() {
    let esc = |bytes: &[u8]| bytes.contains(&0x1b);
    let env = env_with(&[]);
    std::fs::create_dir_all(env.ws.join(".saki")).unwrap();
    // An untrusted workspace names a server with an escape sequence: the warning names it.
    std::fs::write(
        env.ws.join(".saki/config.toml"),
        "[mcp_servers.\"evil\\u001b[2J\"]\ncommand = \"x\"\n",
    )
    .unwrap();
    let out = env.saki().args(["mcp", "list"]).assert().success();
    let stderr = &out.get_output().stderr;
    assert!(!esc(stderr), "{}", String::from_utf8_lossy(stderr));
    assert!(
        String::from_utf8_lossy(stderr).contains("mcp_servers.evil\u{241b}[2J"),
        "{}",
        String::from_utf8_lossy(stderr)
    );

    // A config that does not parse is quoted in the error.
    std::fs::write(
        env.ws.join(".saki/config.toml"),
        "model = \"\x1b[2J\x1b]52;c;aGk=\x07\"\n",
    )
    .unwrap();
    let out = env.saki().args(["mcp", "list"]).assert().code(3);
    let stderr = &out.get_output().stderr;
    assert!(!esc(stderr), "{}", String::from_utf8_lossy(stderr));
    std::fs::remove_file(env.ws.join(".saki/config.toml")).unwrap();

    // A trusted server named with an escape sequence, that writes one to stderr and exits.
    let file = config_file(&env);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "[mcp_servers.\"noisy\\u001b[2J\"]\ncommand = \"/bin/sh\"\n\
         args = [\"-c\", \"printf 'boom \\\\033[2J\\\\n' >&2; exit 3\"]\n",
    )
    .unwrap();
    let out = env.saki().args(["debug", "prompt-size"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!esc(&out.get_output().stdout), "{stdout}");
    assert!(
        stdout.contains("mcp noisy\u{241b}[2J: not counted, failed: ")
            && stdout.contains("boom \u{241b}[2J"),
        "{stdout}"
    );
    let out = env.saki().args(["mcp", "list"]).assert().success();
    assert!(
        !esc(&out.get_output().stdout) && !esc(&out.get_output().stderr),
        "{}",
        String::from_utf8_lossy(&out.get_output().stdout)
    );
}

/// A repository's own config cannot start programs: its servers count only once the
/// person trusts the workspace.
#[test]
fn workspace_servers_need_a_trusted_workspace() {
    let Some(python) = python() else {
        eprintln!("skipped: no python3");
        return;
    };
    let env = env_with(&[]);
    std::fs::create_dir_all(env.ws.join(".saki")).unwrap();
    std::fs::write(
        env.ws.join(".saki/config.toml"),
        format!(
            "[mcp_servers.repo]\ncommand = {:?}\nargs = [{:?}]\n",
            python,
            fixture()
        ),
    )
    .unwrap();
    env.saki()
        .args(["mcp", "list"])
        .assert()
        .success()
        .stdout(predicates::str::contains("No MCP servers are configured"))
        .stderr(predicates::str::contains(
            "mcp_servers.repo: this workspace is not trusted",
        ));
    env.saki().args(["trust"]).assert().success();
    env.saki()
        .args(["mcp", "list"])
        .assert()
        .success()
        .stdout(predicates::str::contains("repo (stdio: "))
        .stdout(predicates::str::contains("connected, 2 tools"));
}

/// `saki exec` with the fixture server configured: the model's calls reach it, and the
/// approval rules hold (read-only `echo` unasked, `get-sum` asked, so denied in `exec`).
#[test]
fn exec_offers_mcp_tools_and_their_calls_follow_the_approval_rules() {
    use saki_testkit::{MockServer, Turn};
    let Some(python) = python() else {
        eprintln!("skipped: no python3");
        return;
    };
    let env = env_with(&[]);
    env.saki()
        .args(["mcp", "add", "py", "--", &python, &fixture()])
        .assert()
        .success();
    let run = |mode: &str| {
        let server = MockServer::start().unwrap();
        server.push(
            Turn::new()
                .with_tool_call("c1", "mcp__py__echo", r#"{"message":"hi"}"#)
                .with_tool_call("c2", "mcp__py__get-sum", r#"{"a":2,"b":3}"#),
        );
        server.push(Turn::text("done"));
        let out = env
            .saki()
            .args([
                "exec",
                "--json",
                "--approval",
                mode,
                "--base-url",
                &server.openai_url(),
                "-m",
                "m",
                "use the tools",
            ])
            .assert()
            .success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        let first = server.requests()[0].body["tools"].to_string();
        assert!(
            first.contains("mcp__py__echo") && first.contains("mcp__py__get-sum"),
            "{first}"
        );
        stdout
    };
    let default = run("default");
    assert!(default.contains("Echo: hi"), "{default}");
    assert!(
        default.contains(r#""status":"denied""#) && !default.contains("The sum of 2 and 3"),
        "{default}"
    );
    let yolo = run("yolo");
    assert!(
        yolo.contains("Echo: hi") && yolo.contains("The sum of 2 and 3 is 5"),
        "{yolo}"
    );
}
