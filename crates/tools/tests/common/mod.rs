//! The fixture the tool tests share: a workspace with one source file and a file
//! beside it, outside, with the built-in tools on it.

use saki_llm_worker::{ToolExecutionContext, ToolServer};
use saki_tools::{builtin_server, Workspace};
use std::sync::Arc;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub server: ToolServer,
}

pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    let server = builtin_server(Arc::new(Workspace::new(&ws).unwrap())).unwrap();
    Fixture { dir, server }
}

impl Fixture {
    pub fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<String, String> {
        let ctx = ToolExecutionContext {
            call_id: "c".into(),
            batch_id: "b".into(),
            call_index: 0,
        };
        self.server
            .call_tool(name, &args.to_string(), ctx)
            .await
            .map(|o| o.content)
            .map_err(|e| e.to_string())
    }
}
