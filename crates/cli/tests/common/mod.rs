//! Shared fixture for CLI tests: an isolated home with a workspace in it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

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
        std::fs::write(ws.join(name), body).unwrap();
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
