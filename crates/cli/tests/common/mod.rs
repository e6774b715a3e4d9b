//! Shared fixture for CLI tests: an isolated home with a workspace in it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::time::{Duration, Instant};

/// How long a test waits for what only a file or another process shows, before it fails:
/// long, because the machine may be busy; a test that passes never waits this long.
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);
/// How often such a wait looks.
const POLL: Duration = Duration::from_millis(10);

pub struct Env {
    pub home: tempfile::TempDir,
    pub ws: std::path::PathBuf,
}

/// A fresh home (no config, no keys, no sessions) with `project/` holding `files`.
pub fn env_with(files: &[(&str, &str)]) -> Env {
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("project");
    std::fs::create_dir_all(&ws).unwrap();
    for (name, body) in files {
        let path = ws.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    Env { home, ws }
}

impl Env {
    /// `saki` run in the workspace with an empty environment but for HOME and XDG config.
    pub fn cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("saki"));
        cmd.env_clear()
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .current_dir(&self.ws);
        cmd
    }

    /// Writes the global `config.toml` (`$XDG_CONFIG_HOME/saki`), replacing any there.
    pub fn write_config(&self, text: &str) {
        let dir = self.home.path().join("config/saki");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    pub fn saki(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.cmd())
    }

    /// `saki exec --provider llamacpp --base-url URL [extra...] PROMPT`, which must succeed.
    pub fn exec_llamacpp(&self, url: &str, extra: &[&str], prompt: &str) -> std::process::Output {
        self.saki()
            .args(["exec", "--provider", "llamacpp", "--base-url", url])
            .args(extra)
            .arg(prompt)
            .assert()
            .success()
            .get_output()
            .clone()
    }

    pub fn session_files(&self) -> Vec<std::path::PathBuf> {
        let dir = self.home.path().join(".local/share/saki/sessions");
        std::fs::read_dir(dir)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

/// Parses `--json` output.
pub fn events(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Looks every 10 ms until `ready` gives a value; `None` after [`WAIT_LIMIT`].
fn poll<T>(mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + WAIT_LIMIT;
    loop {
        if let Some(value) = ready() {
            return Some(value);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Waits until `ready` holds, for what only a file or another process shows (the mock
/// server's requests have a wait of their own, `MockServer::wait_for_requests_blocking`);
/// fails the test naming `what` after [`WAIT_LIMIT`].
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    wait_for_value(what, || ready().then_some(()));
}

/// [`wait_for`] with a value: the first `ready` gives.
pub fn wait_for_value<T>(what: &str, ready: impl FnMut() -> Option<T>) -> T {
    poll(ready).unwrap_or_else(|| {
        panic!(
            "timed out after {} s waiting for {what}",
            WAIT_LIMIT.as_secs()
        )
    })
}

/// Waits until `child` exits, calling `between` at each look (e.g. to sample it); kills it
/// and fails the test naming `what` when it is still running after [`WAIT_LIMIT`].
pub fn wait_for_exit(
    child: &mut std::process::Child,
    what: &str,
    mut between: impl FnMut(),
) -> std::process::ExitStatus {
    let exited = poll(|| {
        between();
        child.try_wait().unwrap()
    });
    exited.unwrap_or_else(|| {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what}: still running after {} s", WAIT_LIMIT.as_secs())
    })
}

/// A llama.cpp server whose model has `parameters` parameters, with an 8192-token slot.
pub fn llamacpp(parameters: u64) -> saki_testkit::MockServer {
    let server = saki_testkit::MockServer::start().unwrap();
    server.set_server_info(
        "/props",
        serde_json::json!({"default_generation_settings": {"n_ctx": 8192},
            "chat_template_caps": {"supports_tool_calls": true}}),
    );
    server.set_server_info(
        "/v1/models",
        serde_json::json!({"data": [{"id": "local", "meta": {"n_params": parameters}}]}),
    );
    server
}

/// A call written as text, the way a small model on a prompted template writes one.
pub fn text_call(name: &str, arguments: Value) -> String {
    serde_json::json!({"name": name, "arguments": arguments}).to_string()
}

/// An `edit` call written as text.
pub fn edit_call(path: &str, old: &str, new: &str) -> String {
    text_call(
        "edit",
        serde_json::json!({"path": path, "old_string": old, "new_string": new}),
    )
}

/// `saki exec --json` of `prompt` on `server` as a llama.cpp server, in auto-edit: the
/// events it printed.
pub fn exec_on_llamacpp(server: &saki_testkit::MockServer, e: &Env, prompt: &str) -> Vec<Value> {
    let out = e
        .saki()
        .args(["exec", "--provider", "llamacpp", "--base-url"])
        .arg(server.openai_url())
        .args(["--json", "--approval", "auto-edit", prompt])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    events(&out)
}

/// The completed items of `kind` in `events` (`tool_call`, `tool_result`,
/// `assistant_message`, …).
pub fn items<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == kind)
        .map(|e| &e["item"])
        .collect()
}
