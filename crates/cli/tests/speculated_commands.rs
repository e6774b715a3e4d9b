#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Speculated shell commands run to the end in an overlay of the workspace (auto-edit):
//! what they write, delete or chmod lands only on accept (all or none, a file the
//! person changed since being a conflict), the network is not there, a write outside is a boundary before it runs. The real `saki
//! sandbox-exec` helper mounts the overlay; where the kernel refuses the namespace the
//! tests check that every such command is a boundary instead.

mod common;

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::{Item, WorkerConfig};
use saki_read_ahead::{accept, BoundaryKind, CacheSafeParams, SpeculationStatus, Speculator};
use saki_sandbox::shell_env::ShellEnvConfig;
use saki_sandbox::{OverlayMount, SandboxMode, SandboxPolicy};
use saki_testkit::{MockServer, Turn};
use saki_tools::{ApprovalMode, ShellRuntime, Workspace};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    base: PathBuf,
    workspace: Arc<Workspace>,
    overlay: bool,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (ws, base) = (root.join("ws"), root.join("overlays"));
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(ws.join("src/lib.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        ws.join("script.py"),
        "open('out.txt', 'w').write('computed\\n')\n",
    )
    .unwrap();
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    let mut workspace = Workspace::new(&ws).unwrap();
    let mut runtime = ShellRuntime::new(&ShellEnvConfig::default(), &[]).unwrap();
    let policy = SandboxPolicy::new(
        SandboxMode::WorkspaceWrite,
        workspace.roots(),
        runtime.tmp(),
        None,
        &[],
        false,
    );
    let env = |name: &str| std::env::var_os(name);
    let unasked = policy.for_unasked(workspace.roots(), runtime.tmp_unasked(), &env, None);
    let saki: PathBuf = env!("CARGO_BIN_EXE_saki").into();
    // Probe the overlay the way a session does: a throwaway upper layer.
    let probe_dir = tempfile::tempdir_in(&base).unwrap();
    let (upper, work) = (probe_dir.path().join("u"), probe_dir.path().join("w"));
    std::fs::create_dir_all(&upper).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let mount = OverlayMount {
        root: ws.clone(),
        upper,
        work,
    };
    let probe = policy
        .for_speculation(workspace.roots(), runtime.tmp_unasked(), &env, None, mount)
        .and_then(|p| saki_sandbox::probe(&saki, &p).ok());
    let overlay = probe
        .as_ref()
        .is_some_and(|s| s.speculation_overlay && s.enforced);
    runtime.set_sandbox(saki, &policy, unasked.as_ref());
    if overlay {
        runtime.allow_speculation_overlay(workspace.roots(), None);
    } else {
        eprintln!("the kernel refuses the overlay here: {probe:?}");
    }
    workspace.set_shell_runtime(Arc::new(runtime));
    Fixture {
        _dir: dir,
        ws,
        base,
        workspace: Arc::new(workspace),
        overlay,
    }
}

impl Fixture {
    fn speculator(&self, server: &MockServer) -> Speculator {
        let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
        let mut s = Speculator::new(
            client,
            "fast",
            ApprovalMode::AutoEdit,
            self.workspace.clone(),
        );
        s.overlay_base = self.base.clone();
        s.worker = WorkerConfig::new("fast");
        s
    }

    fn params(&self) -> CacheSafeParams {
        let tools = saki_tools::builtin_server(self.workspace.clone()).unwrap();
        CacheSafeParams {
            system: Some("sys".into()),
            tools: tools.definitions(),
            history: vec![
                Item::user("look at the project"),
                Item::AssistantText {
                    text: "It adds numbers.".into(),
                },
            ],
            model: "fast".into(),
            ..Default::default()
        }
    }
}

fn shell(command: &str) -> Turn {
    Turn::new().with_tool_call("c1", "shell", json!({ "command": command }).to_string())
}

fn no_overlay_mounts_left() {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains("saki-overlay"), "{mounts}");
}

#[tokio::test]
async fn a_speculated_script_that_writes_a_file_lands_only_on_accept() {
    let f = fixture();
    let server = MockServer::start().unwrap();
    server.push(shell(
        "python3 script.py && cat out.txt && mkdir -p build && echo o > build/x.o",
    ));
    server.push(Turn::text("The script wrote out.txt."));
    let spec = f
        .speculator(&server)
        .run(&f.params(), "run the script", CancellationToken::new())
        .await;
    if !f.overlay {
        assert_eq!(spec.status, SpeculationStatus::Boundary);
        assert_eq!(spec.boundary, Some(BoundaryKind::OverlayUnavailable));
        return;
    }
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?} {:?}",
        spec.reason,
        spec.items
    );
    assert_eq!(spec.commands_run, 1);
    let result = spec
        .items
        .iter()
        .find_map(|i| match i {
            Item::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        result.contains("computed"),
        "the command saw its own write: {result}"
    );
    assert!(
        !f.ws.join("out.txt").exists(),
        "nothing lands before accept"
    );
    no_overlay_mounts_left();
    let accepted = accept(spec, "run the script").unwrap();
    assert_eq!(accepted.commands_run, 1);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("out.txt")).unwrap(),
        "computed\n"
    );
    assert!(
        !f.ws.join("build").exists(),
        "ignored build output is dropped, not applied"
    );
}

/// Runs `command` as a speculation of `prompt` that then answers.
async fn speculate(f: &Fixture, command: &str, prompt: &str) -> saki_read_ahead::Speculation {
    let server = MockServer::start().unwrap();
    server.push(shell(command));
    server.push(Turn::text("Done."));
    f.speculator(&server)
        .run(&f.params(), prompt, CancellationToken::new())
        .await
}

#[tokio::test]
async fn a_speculated_rm_rf_lands_only_on_accept() {
    let f = fixture();
    std::fs::write(f.ws.join("src/more.py"), "x = 1\n").unwrap();
    let spec = speculate(&f, "rm -rf src && ls", "remove src").await;
    if !f.overlay {
        assert_eq!(spec.boundary, Some(BoundaryKind::OverlayUnavailable));
        return;
    }
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    assert!(
        f.ws.join("src/lib.py").is_file() && f.ws.join("src/more.py").is_file(),
        "the real tree is untouched before accept"
    );
    let accepted = accept(spec, "remove src").unwrap();
    let mut applied: Vec<_> = accepted.applied.applied().into_iter().collect();
    applied.sort();
    assert_eq!(applied, [Path::new("src/lib.py"), Path::new("src/more.py")]);
    // Directories go too when the command removed them. An unprivileged overlay on
    // Linux 6.18 refuses to remove a directory of the lower layer (EIO, with its files
    // already gone), so there `src` stays, empty, as it did in the speculation.
    assert_eq!(walkdir_names(&f.ws.join("src")), Vec::<PathBuf>::new());
    assert!(f.ws.join("script.py").is_file());
}

#[tokio::test]
async fn a_speculated_chmod_and_deletion_land_with_the_rest() {
    let f = fixture();
    std::fs::write(f.ws.join("old.txt"), "old\n").unwrap();
    let spec = speculate(
        &f,
        "chmod 755 script.py && rm old.txt && echo new > new.txt",
        "tidy up",
    )
    .await;
    if !f.overlay {
        assert_eq!(spec.boundary, Some(BoundaryKind::OverlayUnavailable));
        return;
    }
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(f.ws.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("script.py"), 0o644, "not before accept");
    assert!(f.ws.join("old.txt").is_file());
    let accepted = accept(spec, "tidy up").unwrap();
    assert!(accepted.applied.is_complete());
    assert_eq!(mode("script.py"), 0o755);
    assert!(!f.ws.join("old.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("new.txt")).unwrap(),
        "new\n"
    );
}

#[tokio::test]
async fn the_file_tools_see_what_a_command_deleted_as_gone() {
    let f = fixture();
    let server = MockServer::start().unwrap();
    server.push(shell("rm src/lib.py && echo new > src/new.py"));
    let call = |id: &str, name: &str, args: serde_json::Value| {
        Turn::new().with_tool_call(id, name, args.to_string())
    };
    server.push(call("c2", "read_file", json!({"path": "src/lib.py"})));
    server.push(call("c3", "ls", json!({"path": "src"})));
    server.push(call("c4", "grep", json!({"pattern": "add|new"})));
    server.push(Turn::text("lib.py is gone."));
    let spec = f
        .speculator(&server)
        .run(&f.params(), "drop lib.py", CancellationToken::new())
        .await;
    if !f.overlay {
        return;
    }
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    let results: Vec<String> = spec
        .items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(results[1].contains("does not exist"), "{results:?}");
    assert_eq!(results[2], "new.py", "{results:?}");
    assert!(
        results[3].contains("src/new.py:1:new") && !results[3].contains("lib.py"),
        "{results:?}"
    );
    assert!(f.ws.join("src/lib.py").is_file(), "nothing before accept");
}

#[tokio::test]
async fn a_deleted_file_the_person_changed_since_is_a_conflict() {
    let f = fixture();
    let spec = speculate(&f, "rm src/lib.py && echo gone > note.txt", "clean").await;
    if !f.overlay {
        return;
    }
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    std::fs::write(f.ws.join("src/lib.py"), "# the person's edit\n").unwrap();
    let Err(saki_read_ahead::AcceptError::Apply(not)) = accept(spec, "clean") else {
        panic!("accepted over the person's edit");
    };
    assert!(not.report.wrote_nothing(), "{}", not.report.describe());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("src/lib.py")).unwrap(),
        "# the person's edit\n"
    );
    assert!(!f.ws.join("note.txt").exists(), "all or none");
}

#[tokio::test]
async fn a_speculated_command_reaches_no_listener_on_loopback() {
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = MockServer::start().unwrap();
    server.push(shell(&format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"
    )));
    server.push(Turn::text("Connected."));
    let spec = f
        .speculator(&server)
        .run(&f.params(), "check the server", CancellationToken::new())
        .await;
    assert_ne!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.items
    );
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
}

#[tokio::test]
async fn a_write_outside_the_workspace_is_a_boundary_before_it_runs() {
    let f = fixture();
    let outside = f.ws.parent().unwrap().join("outside.txt");
    let server = MockServer::start().unwrap();
    server.push(shell("echo x > ../outside.txt"));
    server.push(Turn::text("Done."));
    let spec = f
        .speculator(&server)
        .run(&f.params(), "write it", CancellationToken::new())
        .await;
    assert_eq!(spec.status, SpeculationStatus::Boundary);
    assert_eq!(
        spec.boundary,
        Some(BoundaryKind::OutOfScope),
        "{:?}",
        spec.reason
    );
    assert_eq!(spec.commands_run, 0);
    assert!(!outside.exists());
    assert!(!Path::new(&outside).exists());
}

/// Pids of processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

#[test]
fn a_saki_killed_mid_speculation_leaves_no_process_behind() {
    let e = common::env_with(&[("a.txt", "alpha\n")]);
    let marker = format!("saki-kill-marker-{}", std::process::id());
    let server = MockServer::start().unwrap();
    let call = |id: &str, name: &str, args: serde_json::Value| {
        Turn::new().with_tool_call(id, name, args.to_string())
    };
    server.push(call("c1", "read_file", json!({"path": "a.txt"})));
    server.push(Turn::text(
        "a.txt says alpha. Type `run the slow check` next.",
    ));
    server.push(Turn::text("run the slow check"));
    server.push(call(
        "s1",
        "shell",
        json!({"command": format!("sleep 300; echo {marker}")}),
    ));
    let mut saki = e
        .cmd()
        .env("PATH", std::env::var("PATH").unwrap())
        .args([
            "exec",
            "--json",
            "--follow-ups",
            "1",
            "--approval",
            "auto-edit",
        ])
        .args([
            "--base-url",
            &server.openai_url(),
            "-m",
            "main",
            "--fast-model",
            "fast",
        ])
        .arg("what does a.txt say?")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let found = common::wait_for_value("the speculated command to run", || {
        let pids = processes_with(&marker);
        (!pids.is_empty()).then_some(pids)
    });
    assert!(!found.is_empty());
    saki.kill().unwrap();
    saki.wait().unwrap();
    common::wait_for("every process of the speculation to end", || {
        processes_with(&marker).is_empty()
    });
}

/// Every path under `dir` (for messages).
fn walkdir_names(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            out.push(e.path());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    out
}
