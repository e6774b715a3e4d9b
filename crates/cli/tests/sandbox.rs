#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The sandbox and the scope rules, with real commands: `saki exec` against the mock
//! provider, whose scripted model runs shell commands that try to leave the workspace,
//! read credentials and secrets, reach the network, and turn a config edit into code
//! execution.

mod common;

use common::{env_with, events as json_lines, wait_for, wait_for_value, Env};
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

const FAKE_KEY: &str = "FAKE-PRIVATE-KEY-0123";
const API_KEY: &str = "sk-ant-test-secret-4567";

/// A home with a fake SSH key, and the real toolchain reachable for cargo.
fn env(files: &[(&str, &str)]) -> Env {
    let e = env_with(files);
    let ssh = e.home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), FAKE_KEY).unwrap();
    e
}

/// Runs one prompt whose model makes `calls` (name, arguments) in one response and then
/// answers "done"; returns the JSON events.
fn run(e: &Env, approval: &str, calls: &[(&str, Value)], extra: &[&str]) -> Vec<Value> {
    let server = MockServer::start().unwrap();
    let mut turn = Turn::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        turn = turn.with_tool_call(format!("c{i}"), *name, args.to_string());
    }
    server.push(turn);
    server.push(Turn::text("done"));
    let real_home = std::env::var("HOME").unwrap();
    let out = e
        .saki()
        .env("PATH", std::env::var("PATH").unwrap())
        .env(
            "CARGO_HOME",
            std::env::var("CARGO_HOME").unwrap_or(format!("{real_home}/.cargo")),
        )
        .env(
            "RUSTUP_HOME",
            std::env::var("RUSTUP_HOME").unwrap_or(format!("{real_home}/.rustup")),
        )
        .env("ANTHROPIC_API_KEY", API_KEY)
        .args([
            "exec",
            "--json",
            "--provider",
            "anthropic",
            "--approval",
            approval,
        ])
        .args(extra)
        .arg("--base-url")
        .arg(server.url())
        .arg("go")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out.stdout)
}

fn results(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .map(|e| {
            (
                e["item"]["status"].as_str().unwrap().to_owned(),
                e["item"]["output"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn shell(command: &str) -> (&'static str, Value) {
    ("shell", json!({ "command": command }))
}

/// `false` (and says why) where the kernel has no Landlock: nothing to prove there.
fn sandboxed(events: &[Value]) -> bool {
    let sandbox = &events[0]["sandbox"];
    assert_eq!(sandbox["mode"], "workspace-write", "{sandbox}");
    let enforced = sandbox["enforced"].as_bool().unwrap();
    if !enforced {
        eprintln!("no sandbox on this kernel: {sandbox}");
    }
    // Where the kernel sandboxes at all, unasked commands get the read-only policy.
    assert_eq!(sandbox["read_only_unasked"], enforced, "{sandbox}");
    enforced
}

#[test]
fn even_yolo_cannot_write_outside_read_credentials_or_connect() {
    let e = env(&[]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port_no = port.local_addr().unwrap().port();
    let script = format!(
        "echo in > inside.txt && echo wrote-inside; \
         echo out > ../outside.txt || echo blocked-write; \
         cat ~/.ssh/id_rsa || echo blocked-read; \
         (exec 3<>/dev/tcp/127.0.0.1/{port_no}) && echo connected || echo blocked-net; \
         cargo --version > /dev/null && echo cargo-ok; \
         echo \"key=[$ANTHROPIC_API_KEY]\"; env | grep -c API_KEY; true"
    );
    let events = run(&e, "yolo", &[shell(&script)], &[]);
    if !sandboxed(&events) {
        return;
    }
    let (status, output) = &results(&events)[0];
    assert_eq!(status, "success", "{output}");
    for expected in [
        "wrote-inside",
        "blocked-write",
        "blocked-read",
        "blocked-net",
        "cargo-ok",
        "key=[]",
    ] {
        assert!(output.contains(expected), "{expected}: {output}");
    }
    assert!(
        !output.contains(FAKE_KEY) && !output.contains(API_KEY),
        "{output}"
    );
    assert!(e.ws.join("inside.txt").exists());
    assert!(!e.home.path().join("outside.txt").exists());
}

#[test]
fn a_build_inside_the_workspace_works_under_the_default_sandbox() {
    let e = env(&[
        (
            "Cargo.toml",
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "build.sh",
            "mkdir -p src && echo 'fn main() { println!(\"built-and-ran\"); }' > src/main.rs",
        ),
    ]);
    let events = run(
        &e,
        "yolo",
        &[shell("bash build.sh && cargo run --offline -q")],
        &[],
    );
    let (status, output) = &results(&events)[0];
    assert_eq!(status, "success");
    assert!(output.contains("built-and-ran"), "{output}");
    assert!(output.contains("[exit code: 0]"), "{output}");
}

#[test]
fn the_sandbox_can_be_turned_off_and_says_so() {
    let e = env(&[]);
    let events = run(
        &e,
        "yolo",
        &[shell("cat ~/.ssh/id_rsa")],
        &["--sandbox", "off"],
    );
    assert_eq!(events[0]["sandbox"]["mode"], "off");
    assert_eq!(events[0]["sandbox"]["enforced"], false);
    assert!(results(&events)[0].1.contains(FAKE_KEY));
}

#[test]
fn reads_outside_and_secrets_are_not_run_unasked_in_default_and_plan() {
    let e = env(&[("README.md", "hello\n")]);
    let outside = [
        "cat ~/.ssh/id_rsa",
        "cat ../x",
        "echo $ANTHROPIC_API_KEY",
        "env",
        "cat /proc/self/environ",
        "grep -r key ..",
    ];
    for approval in ["default", "plan"] {
        let mut calls: Vec<_> = outside.iter().map(|c| shell(c)).collect();
        calls.push(shell("cat README.md"));
        let events = run(&e, approval, &calls, &[]);
        let results = results(&events);
        for (i, command) in outside.iter().enumerate() {
            assert_eq!(results[i].0, "denied", "{approval}: {command}");
        }
        assert_eq!(
            results[outside.len()],
            ("success".into(), "hello\n[exit code: 0]".into())
        );
        let all: String = results.iter().map(|r| r.1.as_str()).collect();
        assert!(!all.contains(FAKE_KEY) && !all.contains(API_KEY));
    }
}

#[test]
fn a_git_config_edit_does_not_become_code_execution() {
    let e = env(&[("README.md", "hello\n")]);
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&e.ws)
            .env("HOME", e.home.path())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let pwned = e.home.path().join("pwned");
    let hostile = format!(
        "[core]\n\tfsmonitor = \"touch {0}; false\"\n\tpager = \"touch {0}\"\n[diff]\n\texternal = \"touch {0}\"\n",
        pwned.display()
    );
    // The model writes the config, then asks for a status and a diff.
    let events = run(
        &e,
        "auto-edit",
        &[
            (
                "write_file",
                json!({"path": ".git/config", "content": hostile}),
            ),
            shell("git status"),
            shell("git diff --ext-diff"),
        ],
        &[],
    );
    let first = results(&events);
    assert_eq!(first[0].0, "denied", "{:?}", first[0]);
    assert!(first[0].1.contains("run code"), "{}", first[0].1);
    assert_eq!(
        first[1].0, "success",
        "git status is fine while the config is"
    );
    assert_eq!(first[2].0, "denied", "--ext-diff runs configured programs");
    assert!(!pwned.exists());
    // A tree that arrives with the hostile config already in place.
    std::fs::write(e.ws.join(".git/config"), &hostile).unwrap();
    let events = run(
        &e,
        "auto-edit",
        &[shell("git status"), shell("git log")],
        &[],
    );
    for (status, output) in results(&events) {
        assert_eq!(status, "denied", "{output}");
        assert!(output.contains("core.fsmonitor"), "{output}");
    }
    assert!(!pwned.exists());
}

/// Whether a process is gone (or a zombie nobody will run again).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().unwrap().trim().starts_with('Z'),
    }
}

/// The line a command writes to `path`, once it is all there.
fn written_line(path: &std::path::Path) -> String {
    wait_for_value(&path.display().to_string(), || {
        std::fs::read_to_string(path)
            .ok()
            .filter(|text| text.ends_with('\n'))
    })
}

#[test]
fn no_process_outlives_its_shell_call_not_even_with_setsid() {
    for sandbox in ["workspace-write", "off"] {
        let e = env(&[]);
        let events = run(
            &e,
            "yolo",
            // The daemon says through a FIFO that its pid is written; the call ends then.
            &[shell(
                "mkfifo ready; setsid -f sh -c 'echo $$ > daemon.pid; echo > ready; \
                 exec sleep 300'; sleep 300 & echo $! > job.pid; read _ < ready; echo started",
            )],
            &["--sandbox", sandbox],
        );
        assert!(results(&events)[0].1.contains("started"));
        for file in ["daemon.pid", "job.pid"] {
            let pid = std::fs::read_to_string(e.ws.join(file)).unwrap();
            assert!(gone(&pid), "{sandbox}: {file} {pid} survived");
        }
    }
}

#[test]
fn sigterm_kills_running_commands_keeps_the_session_and_exits_143() {
    let e = env(&[]);
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "c0",
        "shell",
        json!({"command": "setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 300'; sleep 300 & echo $! > job.pid; wait"})
            .to_string(),
    ));
    let mut child = e
        .cmd()
        .env("PATH", std::env::var("PATH").unwrap())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .args([
            "exec",
            "--json",
            "--provider",
            "anthropic",
            "--approval",
            "yolo",
        ])
        .arg("--base-url")
        .arg(server.url())
        .arg("go")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let daemon = written_line(&e.ws.join("daemon.pid"));
    let job = written_line(&e.ws.join("job.pid"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    // The helper got its stop request; it kills them on its own time.
    wait_for(
        &format!("the daemon {daemon} and the job {job} to be gone"),
        || gone(&daemon) && gone(&job),
    );
    let log = std::fs::read_to_string(&e.session_files()[0]).unwrap();
    assert!(
        log.contains("\"tool_result\"") || log.contains("cancelled"),
        "{log}"
    );
}
