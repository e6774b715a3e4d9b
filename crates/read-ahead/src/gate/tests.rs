use super::*;
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    overlay: Arc<OverlayFs>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(tmp.path().join("outside")).unwrap();
    fs::write(root.join("src/app.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside"), root.join("escape")).unwrap();
    let root = root.canonicalize().unwrap();
    let ws = Arc::new(Workspace::new(&root).unwrap());
    let overlay = Arc::new(OverlayFs::new_in(ws, &tmp.path().join("base")).unwrap());
    Fixture {
        _tmp: tmp,
        root,
        overlay,
    }
}

fn allowed(d: GateDecision) -> Value {
    match d {
        GateDecision::Allow { input, .. } => serde_json::from_str(&input).unwrap(),
        GateDecision::Boundary { reason, .. } => panic!("boundary: {reason}"),
    }
}

fn reason(d: GateDecision) -> String {
    match d {
        GateDecision::Boundary { reason, .. } => reason,
        GateDecision::Allow { input, .. } => panic!("allowed: {input}"),
    }
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

#[test]
fn read_tools_are_allowed_in_every_mode() {
    let f = fixture();
    let real = f.root.join("src/app.rs").display().to_string();
    for mode in ApprovalMode::ALL {
        let gate = ToolGate::new(mode, f.overlay.clone());
        let input = allowed(gate.check(
            "read_file",
            &json!({"path": "src/app.rs", "offset": 2}).to_string(),
        ));
        assert_eq!(input, json!({"path": real, "offset": 2}), "{mode}");
        for tool in ["ls", "glob", "grep"] {
            let input =
                allowed(gate.check(tool, &json!({"path": "src", "pattern": "x"}).to_string()));
            assert_eq!(input["path"], f.root.join("src").display().to_string());
            assert_eq!(input["pattern"], "x");
            // No path: the tool's default.
            for bare in [
                json!({"pattern": "x"}),
                json!({"pattern": "x", "path": null}),
            ] {
                assert_eq!(allowed(gate.check(tool, &bare.to_string())), bare);
            }
        }
    }
}

#[test]
fn writes_make_the_overlay_copy_and_every_tool_gets_the_real_path() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::AutoEdit, f.overlay.clone());
    let write = allowed(gate.check(
        "write_file",
        &json!({"path": "src/app.rs", "content": "x"}).to_string(),
    ));
    let real = f.root.join("src/app.rs").display().to_string();
    assert_eq!(write, json!({"path": real, "content": "x"}));
    // The copy is made: the tool's Fs (the overlay view) reads and writes it.
    assert!(f.overlay.dir().join("src/app.rs").is_file());
    let read = allowed(gate.check("read_file", &json!({"path": "./src/app.rs"}).to_string()));
    assert_eq!(read["path"], real);
    // Directory tools get the real path too.
    let grep = allowed(gate.check(
        "grep",
        &json!({"pattern": "x", "path": "src/app.rs"}).to_string(),
    ));
    assert_eq!(
        grep["path"],
        f.root.join("src/app.rs").display().to_string()
    );
}

#[test]
fn edits_are_redirected_only_in_auto_edit_and_yolo() {
    let f = fixture();
    for mode in [ApprovalMode::AutoEdit, ApprovalMode::Yolo] {
        let gate = ToolGate::new(mode, f.overlay.clone());
        for tool in ["edit", "write_file"] {
            let input = allowed(gate.check(
                tool,
                &json!({"path": "src/new.rs", "old_string": "a"}).to_string(),
            ));
            assert_eq!(
                input["path"],
                f.root.join("src/new.rs").display().to_string()
            );
            assert_eq!(input["old_string"], "a");
        }
    }
    for mode in [ApprovalMode::Default, ApprovalMode::Plan] {
        let gate = ToolGate::new(mode, f.overlay.clone());
        for tool in ["edit", "write_file"] {
            let r = reason(gate.check(tool, &json!({"path": "src/app.rs"}).to_string()));
            assert!(r.contains(tool) && r.contains(mode.as_str()), "{r}");
        }
    }
    assert!(
        !f.overlay.dir().join("src/app.rs").exists(),
        "a boundary copies nothing"
    );
}

#[test]
fn shell_runs_read_only_everywhere_and_writes_only_in_an_overlay_in_auto_edit_and_yolo() {
    let f = fixture();
    for mode in ApprovalMode::ALL {
        let gate = ToolGate::new(mode, f.overlay.clone());
        for cmd in ["ls -la", "git status", "cat src/app.rs | wc -l"] {
            let input = json!({"command": cmd});
            assert_eq!(
                allowed(gate.check("shell", &input.to_string())),
                input,
                "{mode}: {cmd}"
            );
        }
        for cmd in ["rm -rf src", "python build.py"] {
            let decision = gate.check("shell", &json!({"command": cmd}).to_string());
            let GateDecision::Boundary { reason, kind } = decision else {
                panic!("{mode}: {cmd}: {decision:?}");
            };
            assert!(reason.contains(cmd), "{reason}");
            // This workspace has no shell runtime, so no overlay: in the modes that
            // would run it, that is the reason; in the others, the mode is.
            let expected = match mode {
                ApprovalMode::AutoEdit | ApprovalMode::Yolo => BoundaryKind::OverlayUnavailable,
                _ => BoundaryKind::ApprovalMode,
            };
            assert_eq!(kind, expected, "{mode}: {cmd}: {reason}");
        }
        let network = gate.check("shell", &json!({"command": "pip install x"}).to_string());
        let expected = match mode {
            ApprovalMode::AutoEdit | ApprovalMode::Yolo => BoundaryKind::Network,
            _ => BoundaryKind::ApprovalMode,
        };
        assert!(
            matches!(network, GateDecision::Boundary { kind, .. } if kind == expected),
            "{mode}: {network:?}"
        );
        assert!(reason(gate.check("shell", &json!({}).to_string())).contains("without a command"));
    }
}

#[test]
fn read_only_shell_outside_the_workspace_or_reading_the_environment_is_a_boundary() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::Yolo, f.overlay.clone());
    for (cmd, why) in [
        ("cat /etc/passwd", "outside the workspace"),
        ("cat escape/x", "leads outside"),
        ("echo $OPENAI_API_KEY", "reads the environment"),
        ("env", "reads the environment"),
        ("cat ~/.ssh/id_rsa", "home directory"),
    ] {
        let r = reason(gate.check("shell", &json!({ "command": cmd }).to_string()));
        assert!(
            r.contains("needs the person") && r.contains(why),
            "{cmd}: {r}"
        );
    }
}

#[test]
fn edits_to_files_that_run_code_are_a_boundary_in_every_mode() {
    let f = fixture();
    fs::create_dir_all(f.root.join(".git")).unwrap();
    for mode in ApprovalMode::ALL {
        let gate = ToolGate::new(mode, f.overlay.clone());
        for path in [".git/config", ".saki/config.toml", ".envrc"] {
            let input = json!({"path": path, "content": "x"}).to_string();
            let r = reason(gate.check("write_file", &input));
            assert!(r.contains("run code"), "{mode} {path}: {r}");
        }
    }
}

#[test]
fn the_gate_passes_on_what_it_checked() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::Yolo, f.overlay.clone());
    // serde_json keeps the last of duplicated keys; what runs must be that value.
    let sneaky = r#"{"command": "rm -rf src", "command": "ls"}"#;
    assert_eq!(
        gate.check("shell", sneaky),
        GateDecision::Allow {
            input: r#"{"command":"ls"}"#.into(),
            overlay: false,
        }
    );
    let sneaky = r#"{"path": "../outside/x", "path": null, "pattern": "x"}"#;
    assert_eq!(
        allowed(gate.check("grep", sneaky)),
        json!({"path": null, "pattern": "x"})
    );
}

/// `lsp` only asks the language servers: allowed in every mode, its path made canonical
/// like a read's, and without a path (every file, or a workspace symbol query) as it is.
#[test]
fn lsp_is_allowed_in_every_mode() {
    let f = fixture();
    let real = f.root.join("src/app.rs").display().to_string();
    for mode in ApprovalMode::ALL {
        let gate = ToolGate::new(mode, f.overlay.clone());
        let input = allowed(
            gate.check(
                "lsp",
                &json!({"operation": "hover", "path": "src/app.rs", "line": 1, "column": 4})
                    .to_string(),
            ),
        );
        assert_eq!(input["path"], real.as_str(), "{mode}");
        assert_eq!(input["line"], 1);
        let query = json!({"operation": "symbols", "query": "main"});
        assert_eq!(allowed(gate.check("lsp", &query.to_string())), query);
        let out = reason(gate.check(
            "lsp",
            &json!({"operation": "hover", "path": "escape/x.rs"}).to_string(),
        ));
        assert!(out.starts_with("lsp "), "{out}");
    }
}

#[test]
fn everything_else_is_a_boundary_naming_the_tool() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::Yolo, f.overlay.clone());
    for tool in [
        "web_fetch",
        "web_search",
        "agent",
        "skill",
        "memory",
        "remember",
        "ask_user",
        "todo_write",
        "exit_plan_mode",
        "mcp__github__create_issue",
        "something_new",
    ] {
        let r = reason(gate.check(tool, &json!({"path": "src/app.rs"}).to_string()));
        assert!(r.starts_with(tool), "{r}");
        assert!(r.len() < 80, "short: {r}");
    }
}

/// An MCP tool is a boundary in every mode, read-only annotation or not: its effects are
/// outside the overlay. It is not run, even when the speculation's server offers it.
#[tokio::test]
async fn mcp_calls_are_a_boundary_in_every_mode() {
    let f = fixture();
    for mode in ApprovalMode::ALL {
        let tools = SpeculationTools::new(mode, f.overlay.clone());
        for tool in ["mcp__docs__search", "mcp__everything__echo"] {
            let input = json!({"message": "hi"}).to_string();
            let r = reason(tools.gate().check(tool, &input));
            assert!(r.contains("is an MCP tool"), "{r}");
            match tools.call(tool, &input, ctx()).await {
                GatedCall::Boundary(b) => assert_eq!(b, r),
                GatedCall::Ran(r) => panic!("{tool} ran in {mode}: {r:?}"),
            }
        }
    }
}

#[test]
fn failed_rewrites_are_boundaries() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::Yolo, f.overlay.clone());
    for (tool, input) in [
        ("read_file", json!({"path": "../outside/x"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("read_file", json!({"path": "escape/x"})),
        ("write_file", json!({"path": "escape/x", "content": ""})),
        ("edit", json!({"path": "/etc/hosts"})),
        ("write_file", json!({"path": "src", "content": ""})),
        ("grep", json!({"pattern": "x", "path": "/"})),
        ("ls", json!({"path": "escape"})),
        ("read_file", json!({})),
        ("read_file", json!({"path": 3})),
        ("write_file", json!("src/app.rs")),
        ("glob", json!({"pattern": "*", "path": ["a"]})),
    ] {
        let r = reason(gate.check(tool, &input.to_string()));
        assert!(r.starts_with(tool), "{r}");
    }
    let r = reason(gate.check("read_file", "{\"path\": "));
    assert_eq!(r, "read_file arguments are not valid JSON");
    assert!(f.overlay.written_files().is_empty());
}

#[test]
fn the_server_offers_the_builtin_tools_unchanged() {
    let f = fixture();
    let server = speculation_tool_server(f.overlay.workspace().clone(), f.overlay.clone());
    let real = saki_tools::builtin_server(f.overlay.workspace().clone()).unwrap();
    assert_eq!(server.names(), real.names());
    assert_eq!(server.definitions(), real.definitions());
}

#[tokio::test]
async fn gated_calls_write_only_into_the_overlay() {
    let f = fixture();
    let tools = SpeculationTools::new(ApprovalMode::AutoEdit, f.overlay.clone());
    let run = |name: &'static str, input: Value| {
        let tools = &tools;
        async move {
            match tools.call(name, &input.to_string(), ctx()).await {
                GatedCall::Ran(r) => r,
                GatedCall::Boundary(b) => panic!("boundary: {b}"),
            }
        }
    };
    let out = run(
        "write_file",
        json!({"path": "src/new.rs", "content": "pub fn a() {}\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.content, "created src/new.rs (14 bytes)");
    let out = run(
        "edit",
        json!({"path": "src/app.rs", "old_string": "main", "new_string": "start"}),
    )
    .await
    .unwrap();
    assert!(
        out.content.starts_with("1 replacement in src/app.rs"),
        "{}",
        out.content
    );
    assert!(out.content.contains("a/src/app.rs"));
    let dir = f.overlay.dir().display().to_string();
    assert!(!out.content.contains(&dir), "overlay paths stay hidden");
    let read = run("read_file", json!({"path": "src/app.rs"}))
        .await
        .unwrap();
    assert_eq!(read.content, "fn start() {}\n");
    let read = run("read_file", json!({"path": "src/new.rs"}))
        .await
        .unwrap();
    assert_eq!(read.content, "pub fn a() {}\n");
    // A read-only shell command sees the real tree.
    let cat = run("shell", json!({"command": "cat src/app.rs"}))
        .await
        .unwrap();
    assert!(cat.content.contains("fn main() {}"), "{}", cat.content);
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert!(!f.root.join("src/new.rs").exists());
    assert_eq!(
        f.overlay.written_files(),
        [Path::new("src/app.rs"), Path::new("src/new.rs")]
    );
    match tools
        .call("web_fetch", r#"{"url": "https://x"}"#, ctx())
        .await
    {
        GatedCall::Boundary(r) => assert!(r.starts_with("web_fetch")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn ungated_writes_cannot_reach_the_real_tree() {
    let f = fixture();
    let server = speculation_tool_server(f.overlay.workspace().clone(), f.overlay.clone());
    let real = f.root.join("src/app.rs").display().to_string();
    // A call that skipped the gate still writes through the overlay view.
    let input = json!({"path": real, "old_string": "main", "new_string": "start"}).to_string();
    server.call_tool("edit", &input, ctx()).await.unwrap();
    let input = json!({"path": real, "content": "x"}).to_string();
    server.call_tool("write_file", &input, ctx()).await.unwrap();
    let input = json!({"path": real}).to_string();
    assert!(server
        .call_tool("delete_file", &input, ctx())
        .await
        .is_err());
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(
        fs::read_to_string(f.overlay.dir().join("src/app.rs")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn update_plan_runs_ahead_in_every_mode() {
    let f = fixture();
    let plan = json!({"plan": [{"step": "read", "status": "in_progress"}]});
    for mode in ApprovalMode::ALL {
        let tools = SpeculationTools::new(mode, f.overlay.clone());
        match tools.call("update_plan", &plan.to_string(), ctx()).await {
            GatedCall::Ran(Ok(out)) => assert_eq!(out.content, "Plan updated."),
            other => panic!("{mode}: {other:?}"),
        }
        // A plan the tool cannot read is the tool's error, not a boundary.
        let bad = tools.call("update_plan", r#"{"plan": 3}"#, ctx()).await;
        assert!(matches!(bad, GatedCall::Ran(Err(_))), "{mode}: {bad:?}");
    }
    assert!(f.overlay.written_files().is_empty());
}

#[test]
fn a_path_copied_from_the_overlay_means_the_workspace_file() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::AutoEdit, f.overlay.clone());
    let copied = f.overlay.dir().join("src/app.rs");
    let input = allowed(gate.check(
        "write_file",
        &json!({"path": copied.display().to_string(), "content": "x"}).to_string(),
    ));
    let real = f.root.join("src/app.rs");
    assert_eq!(input["path"], json!(real.display().to_string()));
    let note = format!("wrote {}", copied.display());
    assert_eq!(f.overlay.hide_dir(&note), "wrote src/app.rs");
    assert_eq!(f.overlay.workspace_path("README.md"), "README.md");
}

#[test]
fn background_commands_are_a_boundary() {
    let f = fixture();
    let gate = ToolGate::new(ApprovalMode::Yolo, f.overlay.clone());
    let r = reason(gate.check(
        "shell",
        &json!({"command": "ls", "background": true}).to_string(),
    ));
    assert!(r.contains("background command"), "{r}");
    for tool in ["shell_output", "shell_kill"] {
        let r = reason(gate.check(tool, &json!({"id": "bg1"}).to_string()));
        assert!(r.contains(tool), "{r}");
    }
}
