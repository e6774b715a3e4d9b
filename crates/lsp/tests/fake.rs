//! saki-lsp against a fake language server (`saki-fake-lsp`): diagnostics after an
//! edit, lazy start, restart after a crash, a silent and a pulling server, the `lsp`
//! tool's operations, a speculation's text shown and taken back, and shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use saki_llm_worker::{Tool, ToolExecutionContext};
use saki_lsp::{Bounds, LspManager, ServerSpec};
use saki_tools::code_intel::{CodeIntel, FileView};
use saki_tools::Workspace;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const FAKE: &str = env!("CARGO_BIN_EXE_saki-fake-lsp");

struct Setup {
    dir: tempfile::TempDir,
    manager: LspManager,
    tools: BTreeMap<String, Arc<dyn Tool>>,
    log: PathBuf,
}

fn setup(env: &[(&str, &str)], bounds: Bounds) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let log = root.join("server.log");
    let mut spec_env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    spec_env.insert("FAKE_LSP_LOG".into(), log.display().to_string());
    let spec = ServerSpec {
        name: "fake".into(),
        command: vec![FAKE.into()],
        extensions: vec!["fake".into()],
        root_markers: vec![],
        env: spec_env,
        initialization_options: None,
    };
    let mut workspace = Workspace::new(&root).unwrap();
    // What shell commands get: here nothing of the test's own environment.
    let manager =
        LspManager::new(vec![spec], workspace.scope().clone(), vec![]).with_bounds(bounds);
    workspace.set_code_intel(Arc::new(manager.clone()));
    let tools = saki_tools::builtin_tools(Arc::new(workspace))
        .into_iter()
        .map(|t| (t.name().to_owned(), t))
        .collect();
    Setup {
        dir,
        manager,
        tools,
        log,
    }
}

fn quick() -> Bounds {
    Bounds {
        diagnostics: Duration::from_secs(30),
        first_diagnostics: Duration::from_secs(30),
    }
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c1".into(),
        batch_id: "b1".into(),
        call_index: 0,
    }
}

impl Setup {
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    async fn call(&self, tool: &str, input: serde_json::Value) -> Result<String, String> {
        self.tools[tool]
            .execute(&input.to_string(), ctx())
            .await
            .map(|o| o.content)
            .map_err(|e| e.to_string())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pids(&self) -> Vec<i32> {
        self.log()
            .lines()
            .filter_map(|l| l.strip_prefix("pid ")?.parse().ok())
            .collect()
    }
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z"))
}

#[tokio::test]
async fn an_edit_reports_only_the_new_problems_and_the_server_starts_lazily() {
    let s = setup(&[], quick());
    std::fs::write(s.root().join("a.fake"), "x = 1\nERROR old\n").unwrap();
    std::fs::write(s.root().join("notes.txt"), "hello\n").unwrap();
    let out = s
        .call(
            "edit",
            json!({"path": "notes.txt", "old_string": "hello", "new_string": "bye"}),
        )
        .await
        .unwrap();
    assert!(!out.contains("[lsp"), "{out}");
    assert!(
        s.pids().is_empty(),
        "no server for a file of no server's kind"
    );

    let out = s
        .call(
            "edit",
            json!({"path": "a.fake", "old_string": "x = 1", "new_string": "x = 1\nWARN w\nERROR new"}),
        )
        .await
        .unwrap();
    assert!(
        out.ends_with(
            "[lsp fake: 1 error and 1 warning in a.fake, new since the edit]\n\
             a.fake:3:1 error: error here: ERROR new (fake)\n\
             a.fake:2:1 warning: warn here: WARN w (fake)"
        ),
        "{out}"
    );
    assert_eq!(
        s.pids().len(),
        1,
        "started once, on the first file of its kind"
    );
    let parsed = saki_lsp::parse_block(&out).unwrap();
    assert_eq!(parsed.len(), 2);
    assert_eq!(saki_lsp::error_count(&out), Some(1));

    // A write that fixes everything: nothing new.
    let out = s
        .call(
            "write_file",
            json!({"path": "a.fake", "content": "x = 2\n"}),
        )
        .await
        .unwrap();
    assert!(
        out.ends_with("[lsp fake: no new errors or warnings in a.fake]"),
        "{out}"
    );
    // A new file: all its problems are new.
    let out = s
        .call(
            "write_file",
            json!({"path": "b.fake", "content": "ERROR b\n"}),
        )
        .await
        .unwrap();
    assert!(out.contains("1 error and 0 warnings in b.fake"), "{out}");
    assert!(
        !s.log().contains("saw the secret"),
        "the server's environment is scrubbed"
    );
    s.manager.shutdown().await;
}

#[tokio::test]
async fn a_crashed_server_restarts_a_bounded_number_of_times() {
    let s = setup(&[], quick());
    std::fs::write(s.root().join("a.fake"), "fine\n").unwrap();
    let out = s
        .call(
            "write_file",
            json!({"path": "a.fake", "content": "ERROR one\n"}),
        )
        .await
        .unwrap();
    assert!(out.contains("1 error"), "{out}");
    for round in 1..=(saki_lsp::MAX_RESTARTS + 1) {
        // The server dies on this text; the write itself stands.
        let out = s
            .call(
                "write_file",
                json!({"path": "b.fake", "content": "CRASH\n"}),
            )
            .await
            .unwrap();
        assert!(out.contains(" b.fake (6 bytes)"), "{out}");
        assert!(out.contains("[lsp fake:"), "round {round}: {out}");
        let out = s
            .call(
                "write_file",
                json!({"path": "a.fake", "content": format!("ERROR {round}\n")}),
            )
            .await
            .unwrap();
        if round <= saki_lsp::MAX_RESTARTS {
            assert!(out.contains("1 error"), "round {round}: restarted: {out}");
        } else {
            assert!(out.contains("not started again"), "round {round}: {out}");
        }
    }
    assert_eq!(s.pids().len() as u32, 1 + saki_lsp::MAX_RESTARTS);
    let report = s.manager.report();
    assert!(report.contains("fake (`"), "{report}");
    assert!(report.contains("not running"), "{report}");
    s.manager.shutdown().await;
}

#[tokio::test]
async fn a_silent_server_costs_the_bound_and_says_so() {
    let bounds = Bounds {
        diagnostics: Duration::from_millis(300),
        first_diagnostics: Duration::from_millis(300),
    };
    let s = setup(&[("FAKE_LSP_SILENT", "1")], bounds);
    let out = s
        .call(
            "write_file",
            json!({"path": "a.fake", "content": "ERROR\n"}),
        )
        .await
        .unwrap();
    assert!(
        out.contains("[lsp fake: no diagnostics for a.fake within"),
        "{out}"
    );
    s.manager.shutdown().await;
}

#[tokio::test]
async fn a_slow_server_is_waited_for_within_the_bound() {
    let s = setup(&[("FAKE_LSP_DELAY_MS", "200")], quick());
    let out = s
        .call(
            "write_file",
            json!({"path": "a.fake", "content": "ERROR slow\n"}),
        )
        .await
        .unwrap();
    assert!(out.contains("1 error and 0 warnings"), "{out}");
    s.manager.shutdown().await;
}

#[tokio::test]
async fn pulled_diagnostics_work_like_pushed_ones() {
    let s = setup(&[("FAKE_LSP_PULL", "1")], quick());
    std::fs::write(s.root().join("a.fake"), "WARN old\n").unwrap();
    let out = s
        .call(
            "edit",
            json!({"path": "a.fake", "old_string": "", "new_string": "ERROR pulled"}),
        )
        .await
        .unwrap();
    assert!(
        out.ends_with("a.fake:2:1 error: error here: ERROR pulled (fake)"),
        "{out}"
    );
    assert!(s.log().contains("textDocument/diagnostic"));
    s.manager.shutdown().await;
}

#[tokio::test]
async fn the_lsp_tool_answers_where_things_are() {
    let s = setup(&[], quick());
    std::fs::write(
        s.root().join("m.fake"),
        "def helper(x)\n  WARN here\ndef main()\n  helper(1)\n",
    )
    .unwrap();
    let def = s
        .call(
            "lsp",
            json!({"operation": "definition", "path": "m.fake", "line": 4, "column": 4}),
        )
        .await
        .unwrap();
    assert_eq!(def, "m.fake:1:5: def helper(x)");
    let refs = s
        .call(
            "lsp",
            json!({"operation": "references", "path": "m.fake", "line": 1, "column": 6}),
        )
        .await
        .unwrap();
    assert_eq!(refs, "m.fake:1:5: def helper(x)\nm.fake:4:3: helper(1)");
    let hover = s
        .call(
            "lsp",
            json!({"operation": "hover", "path": "m.fake", "line": 3, "column": 5}),
        )
        .await
        .unwrap();
    assert_eq!(hover, "fake hover: main");
    let outline = s
        .call("lsp", json!({"operation": "symbols", "path": "m.fake"}))
        .await
        .unwrap();
    assert_eq!(
        outline,
        "m.fake:1:5 function helper\nm.fake:3:5 function main"
    );
    let found = s
        .call("lsp", json!({"operation": "symbols", "query": "mai"}))
        .await
        .unwrap();
    assert_eq!(found, "m.fake:3:5 function main");
    let diags = s
        .call("lsp", json!({"operation": "diagnostics", "path": "m.fake"}))
        .await
        .unwrap();
    assert_eq!(diags, "m.fake:2:3 warning: warn here: WARN here (fake)");
    let all = s
        .call("lsp", json!({"operation": "diagnostics"}))
        .await
        .unwrap();
    assert_eq!(all, diags);
    let missing = s
        .call("lsp", json!({"operation": "hover", "path": "m.fake"}))
        .await
        .unwrap_err();
    assert!(missing.contains("line and column"), "{missing}");
    let other = s
        .call(
            "lsp",
            json!({"operation": "hover", "path": "server.log", "line": 1, "column": 1}),
        )
        .await
        .unwrap_err();
    assert!(other.contains("no language server serves"), "{other}");
    let outside = s
        .call(
            "lsp",
            json!({"operation": "diagnostics", "path": "/etc/passwd"}),
        )
        .await
        .unwrap_err();
    assert!(!outside.is_empty());
    s.manager.shutdown().await;
}

/// A speculation's overlay: its own text for some files.
struct Overlay(BTreeMap<PathBuf, String>);

impl FileView for Overlay {
    fn text(&self, path: &Path) -> Option<String> {
        self.0.get(path).cloned()
    }
    fn written(&self) -> Vec<PathBuf> {
        self.0.keys().cloned().collect()
    }
    fn workspace_path(&self, path: &str) -> PathBuf {
        PathBuf::from(path)
    }
}

#[tokio::test]
async fn a_speculation_shows_its_text_and_takes_it_back() {
    let s = setup(&[], quick());
    let file = s.root().join("a.fake");
    std::fs::write(&file, "on disk\n").unwrap();
    let view: Arc<dyn FileView> = Arc::new(Overlay(
        [(file.clone(), "ERROR speculated\n".to_owned())].into(),
    ));
    let tool = s.manager.tool(Some(view));
    let out = tool
        .execute(
            &json!({"operation": "diagnostics", "path": "a.fake"}).to_string(),
            ctx(),
        )
        .await
        .unwrap()
        .content;
    assert_eq!(out, "a.fake:1:1 error: error here: ERROR speculated (fake)");
    // The server was shown the disk's text again after the call (a request after it
    // is answered once the server has read it).
    let outline = s
        .call("lsp", json!({"operation": "symbols", "path": "a.fake"}))
        .await;
    assert_eq!(outline.unwrap(), "no symbols");
    let log = s.log();
    let texts: Vec<&str> = log.lines().filter(|l| l.starts_with("text ")).collect();
    assert_eq!(texts.last(), Some(&"text on disk\\n"), "{log}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "on disk\n");
    s.manager.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_every_server_process() {
    let s = setup(&[], quick());
    std::fs::write(s.root().join("a.fake"), "x\n").unwrap();
    s.call("lsp", json!({"operation": "diagnostics", "path": "a.fake"}))
        .await
        .unwrap();
    let pid = s.pids()[0];
    assert!(alive(pid));
    s.manager.shutdown().await;
    let log = s.log();
    assert!(
        log.contains("\nshutdown\n") && log.contains("\nexit\n"),
        "{log}"
    );
    assert!(!alive(pid), "the server process is gone");
    // Nothing starts after the session ended.
    let err = s
        .call("lsp", json!({"operation": "diagnostics", "path": "a.fake"}))
        .await
        .unwrap_err();
    assert!(err.contains("ending"), "{err}");
}
