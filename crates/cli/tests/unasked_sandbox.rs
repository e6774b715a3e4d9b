#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Enforce, don't predict: a shell call let through without asking runs under the
//! read-only policy, so whatever the classifier made of its text, the kernel lets it read
//! only the workspace and the system, write nothing but its temp dir, run only programs
//! from outside the workspace, and connect nowhere. Approved calls keep writing the
//! workspace but lose UNIX sockets. The `shell` tool runs through the real `saki
//! sandbox-exec` helper here.

use saki_llm_worker::{Tool, ToolExecutionContext};
use saki_sandbox::shell_env::ShellEnvConfig;
use saki_sandbox::{SandboxMode, SandboxPolicy};
use saki_tools::{ShellRuntime, Workspace};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_CALL: AtomicU64 = AtomicU64::new(0);

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
    shell: saki_tools::shell::Shell,
    runtime: Arc<ShellRuntime>,
    enforced: bool,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, ws, outside) = (root.join("home"), root.join("home/ws"), root.join("out"));
    for d in [&home, &ws, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(ws.join("README.md"), "inside\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "OUTSIDE-SECRET\n").unwrap();
    std::fs::write(home.join(".bash_history"), "HOME-HISTORY\n").unwrap();
    // A program the repository ships (or the model wrote).
    std::fs::copy("/bin/true", ws.join("shipped")).unwrap();
    let mut workspace = Workspace::new(&ws).unwrap();
    let mut runtime = ShellRuntime::new(&ShellEnvConfig::default(), &[]).unwrap();
    let policy = SandboxPolicy::new(
        SandboxMode::WorkspaceWrite,
        workspace.roots(),
        runtime.tmp(),
        Some(&home),
        &[],
        false,
    );
    let unasked = policy.for_unasked(
        workspace.roots(),
        runtime.tmp_unasked(),
        &|name| std::env::var_os(name),
        Some(&home),
    );
    let saki: PathBuf = env!("CARGO_BIN_EXE_saki").into();
    let probed = saki_sandbox::probe(&saki, unasked.as_ref().unwrap()).unwrap();
    runtime.set_sandbox(saki, &policy, unasked.as_ref());
    let runtime = Arc::new(runtime);
    workspace.set_shell_runtime(runtime.clone());
    Fixture {
        _dir: dir,
        home,
        ws,
        outside,
        shell: saki_tools::shell::Shell(Arc::new(workspace)),
        runtime,
        enforced: probed.read_only_unasked,
    }
}

fn run(f: &Fixture, command: &str, unasked: bool) -> String {
    let ctx = ToolExecutionContext {
        call_id: format!("call-{}", NEXT_CALL.fetch_add(1, Ordering::Relaxed)),
        batch_id: "b".into(),
        call_index: 0,
    };
    if unasked {
        f.runtime.mark_unasked(&ctx.call_id);
    }
    let input = serde_json::json!({ "command": command }).to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(f.shell.execute(&input, ctx)).unwrap().content
}

fn unix_listener(dir: &Path) -> (std::os::unix::net::UnixListener, PathBuf) {
    let path = dir.join("daemon.sock");
    (std::os::unix::net::UnixListener::bind(&path).unwrap(), path)
}

#[test]
fn an_unasked_command_reads_only_the_workspace_and_the_system() {
    let f = fixture();
    if !f.enforced {
        eprintln!("no read-only sandbox on this kernel: nothing to prove");
        return;
    }
    let script = format!(
        "cat README.md; \
         cat {out}/secret.txt || echo blocked-outside; \
         cat {home}/.bash_history || echo blocked-home; \
         cat /proc/1/cmdline || echo blocked-proc; \
         cat /etc/shadow || echo blocked-shadow; \
         ls /usr/bin > /dev/null && echo system-ok; \
         git --version > /dev/null && echo git-ok",
        out = f.outside.display(),
        home = f.home.display(),
    );
    let output = run(&f, &script, true);
    for expected in [
        "inside",
        "blocked-outside",
        "blocked-home",
        "blocked-proc",
        "blocked-shadow",
        "system-ok",
        "git-ok",
    ] {
        assert!(output.contains(expected), "{expected}: {output}");
    }
    for leaked in ["OUTSIDE-SECRET", "HOME-HISTORY", "root:"] {
        assert!(!output.contains(leaked), "{leaked}: {output}");
    }
}

#[test]
fn an_unasked_command_writes_runs_and_connects_nothing() {
    let f = fixture();
    if !f.enforced {
        return;
    }
    let (_listener, socket) = unix_listener(&f.outside);
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let script = format!(
        "echo x > new.txt || echo blocked-write; \
         echo x > \"$TMPDIR/t\" && echo tmp-ok; \
         ./shipped && echo ran-shipped || echo blocked-exec; \
         python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{socket}\")' \
           2>/dev/null && echo unix-connected || echo blocked-unix; \
         (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo tcp-connected || echo blocked-tcp",
        socket = socket.display(),
        port = tcp.local_addr().unwrap().port(),
    );
    let output = run(&f, &script, true);
    for expected in [
        "blocked-write",
        "tmp-ok",
        "blocked-exec",
        "blocked-unix",
        "blocked-tcp",
    ] {
        assert!(output.contains(expected), "{expected}: {output}");
    }
    assert!(!f.ws.join("new.txt").exists());
}

#[test]
fn an_approved_command_writes_the_workspace_but_reaches_no_unix_socket() {
    let f = fixture();
    if !f.enforced {
        return;
    }
    let (_listener, socket) = unix_listener(&f.outside);
    let script = format!(
        "echo x > new.txt && echo wrote; \
         ./shipped && echo ran-shipped; \
         python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\")' \
           2>/dev/null && echo unix-connected || echo blocked-unix",
        socket.display()
    );
    let output = run(&f, &script, false);
    for expected in ["wrote", "ran-shipped", "blocked-unix"] {
        assert!(output.contains(expected), "{expected}: {output}");
    }
    assert!(f.ws.join("new.txt").exists());
}

#[test]
fn a_mark_is_used_once() {
    let f = fixture();
    f.runtime.mark_unasked("c1");
    assert!(f.runtime.take_unasked("c1"));
    assert!(!f.runtime.take_unasked("c1"));
}
