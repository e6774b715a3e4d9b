//! A workspace, an undo store and the real built-in tools, driven the way the Worker
//! drives interceptors: `on_prompt_submit`, then for each batch `pre_tool_call`, the
//! tool, `post_tool_call`; then the engine's `end_turn`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use saki_llm_worker::interceptor::{Interceptor, ToolCallInfo, ToolResultInfo};
use saki_llm_worker::{Item, ToolExecutionContext, ToolResultStatus, ToolServer};
use saki_tools::Workspace;
use saki_undo::{Checkpoints, TurnReport, UndoLimits};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct Env {
    pub dir: tempfile::TempDir,
    pub data: tempfile::TempDir,
    pub root: PathBuf,
    pub checkpoints: Checkpoints,
    tools: ToolServer,
    batch: u64,
}

impl Env {
    pub fn new() -> Env {
        Self::with_limits(UndoLimits::default())
    }

    pub fn with_limits(limits: UndoLimits) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
        let root = workspace.root().to_path_buf();
        let checkpoints = Checkpoints::new(
            workspace.clone(),
            saki_undo::store_dir(data.path()),
            Some(limits),
        );
        checkpoints.set_session(Some("session-1"), 0);
        Env {
            tools: saki_tools::builtin_server(workspace).unwrap(),
            dir,
            data,
            root,
            checkpoints,
            batch: 0,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    pub fn mode(&self, rel: &str) -> u32 {
        std::fs::metadata(self.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    /// One turn: each entry of `batches` is one model response's calls, run together.
    pub async fn turn(&mut self, prompt: &str, batches: &[&[(&str, Value)]]) -> TurnReport {
        let cp = &self.checkpoints;
        cp.on_prompt_submit(&Item::user(prompt)).await;
        for calls in batches {
            self.batch += 1;
            let infos: Vec<ToolCallInfo> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, input))| ToolCallInfo {
                    name: (*name).to_owned(),
                    arguments: input.to_string(),
                    input: input.clone(),
                    ctx: ToolExecutionContext {
                        call_id: format!("c{}-{i}", self.batch),
                        batch_id: format!("b{}", self.batch),
                        call_index: i,
                    },
                })
                .collect();
            for info in &infos {
                cp.pre_tool_call(info).await;
            }
            let mut results = Vec::new();
            for info in &infos {
                let out = self
                    .tools
                    .call_tool(&info.name, &info.arguments, info.ctx.clone())
                    .await;
                let (content, status) = match out {
                    Ok(o) => (o.content, ToolResultStatus::Success),
                    Err(e) => (e.to_string(), ToolResultStatus::Error),
                };
                assert_eq!(
                    status,
                    ToolResultStatus::Success,
                    "{}: {content}",
                    info.name
                );
                results.push(ToolResultInfo {
                    call: info.clone(),
                    content,
                    status,
                });
            }
            for result in &results {
                cp.post_tool_call(result).await;
            }
        }
        cp.end_turn().await.expect("a turn report")
    }

    pub async fn shell(&mut self, prompt: &str, command: &str) -> TurnReport {
        self.turn(prompt, &[&[("shell", json!({ "command": command }))]])
            .await
    }
}

/// Every file under `dir` with its content and mode, for "untouched" checks.
pub fn digest_tree(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if meta.is_dir() {
                stack.push(path);
                out.push((rel, Vec::new(), meta.permissions().mode()));
            } else {
                let content = std::fs::read(&path).unwrap_or_default();
                out.push((rel, content, meta.permissions().mode()));
            }
        }
    }
    out.sort();
    out
}
