//! saki-lsp against real servers from the registries: pyright (npm), and clangd
//! (Debian) or typescript-language-server (npm). Each test is skipped, saying why, when
//! its server is not on PATH. Prints how long diagnostics took after each edit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use saki_llm_worker::{Tool, ToolExecutionContext};
use saki_lsp::LspManager;
use saki_tools::Workspace;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

type Tools = BTreeMap<String, Arc<dyn Tool>>;

fn env() -> Vec<(String, String)> {
    saki_sandbox::shell_env::ShellEnvConfig::default()
        .build(std::env::vars(), &[])
        .unwrap()
}

fn tools(root: &std::path::Path, only: &str) -> Option<(LspManager, Tools)> {
    let path = std::env::var("PATH").ok();
    let specs: Vec<_> = saki_lsp::config::specs(None, true, &|p| {
        saki_lsp::config::on_path(p, path.as_deref())
    })
    .into_iter()
    .filter(|s| s.name == only)
    .collect();
    if specs.is_empty() {
        eprintln!("skipped: no `{only}` language server on PATH");
        return None;
    }
    let mut workspace = Workspace::new(root).unwrap();
    let manager = LspManager::new(specs, workspace.scope().clone(), env());
    workspace.set_code_intel(Arc::new(manager.clone()));
    let tools = saki_tools::builtin_tools(Arc::new(workspace))
        .into_iter()
        .map(|t| (t.name().to_owned(), t))
        .collect();
    Some((manager, tools))
}

async fn call(
    tools: &BTreeMap<String, Arc<dyn Tool>>,
    name: &str,
    input: serde_json::Value,
) -> String {
    let ctx = ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    };
    let started = Instant::now();
    let out = match tools[name].execute(&input.to_string(), ctx).await {
        Ok(o) => o.content,
        Err(e) => format!("error: {e}"),
    };
    eprintln!("{name} took {} ms:\n{out}\n", started.elapsed().as_millis());
    out
}

#[tokio::test]
async fn pyright_reports_what_an_edit_broke() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some((manager, tools)) = tools(&root, "pyright") else {
        return;
    };
    std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"demo\"\n").unwrap();
    std::fs::write(
        root.join("util.py"),
        "def add(a: int, b: int) -> int:\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(
        root.join("main.py"),
        "from util import add\n\nprint(add(1, 2))\n",
    )
    .unwrap();
    // The first edit starts the server (cold).
    let out = call(
        &tools,
        "edit",
        json!({"path": "main.py", "old_string": "add(1, 2)", "new_string": "add(1, \"two\")"}),
    )
    .await;
    assert!(out.contains("[lsp pyright: 1 error"), "{out}");
    assert!(out.contains("main.py:3:"), "{out}");
    // A warm edit.
    let out = call(
        &tools,
        "edit",
        json!({"path": "main.py", "old_string": "print(", "new_string": "print(undefined_name, "}),
    )
    .await;
    assert!(out.contains("\"undefined_name\" is not defined"), "{out}");
    let block = saki_lsp::parse_block(&out).unwrap();
    assert_eq!(block.len(), 1, "the old error is not new: {out}");
    let out = call(
        &tools,
        "write_file",
        json!({"path": "main.py", "content": "from util import add\n\nprint(add(1, 2))\n"}),
    )
    .await;
    assert!(out.contains("no new errors"), "{out}");
    let def = call(
        &tools,
        "lsp",
        json!({"operation": "definition", "path": "main.py", "line": 3, "column": 8}),
    )
    .await;
    assert!(def.starts_with("util.py:1:5: def add"), "{def}");
    let refs = call(
        &tools,
        "lsp",
        json!({"operation": "references", "path": "util.py", "line": 1, "column": 5}),
    )
    .await;
    assert!(refs.contains("main.py:3:7"), "{refs}");
    let hover = call(
        &tools,
        "lsp",
        json!({"operation": "hover", "path": "main.py", "line": 3, "column": 8}),
    )
    .await;
    assert!(hover.contains("def add"), "{hover}");
    let symbols = call(
        &tools,
        "lsp",
        json!({"operation": "symbols", "path": "util.py"}),
    )
    .await;
    assert!(symbols.contains("function add"), "{symbols}");
    eprintln!("{}", manager.report());
    manager.shutdown().await;
}

#[tokio::test]
async fn clangd_reports_what_an_edit_broke() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some((manager, tools)) = tools(&root, "clangd") else {
        return;
    };
    std::fs::write(root.join("compile_flags.txt"), "-std=c11\n").unwrap();
    std::fs::write(root.join("a.c"), "int main(void) {\n    return 0;\n}\n").unwrap();
    let out = call(
        &tools,
        "edit",
        json!({"path": "a.c", "old_string": "return 0;", "new_string": "return missing;"}),
    )
    .await;
    assert!(out.contains("[lsp clangd: 1 error"), "{out}");
    assert!(
        out.contains("a.c:2:12 error: Use of undeclared identifier 'missing'"),
        "{out}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn typescript_reports_what_an_edit_broke() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let Some((manager, tools)) = tools(&root, "typescript") else {
        return;
    };
    std::fs::write(
        root.join("tsconfig.json"),
        "{\"compilerOptions\": {\"strict\": true}}\n",
    )
    .unwrap();
    std::fs::write(root.join("a.ts"), "const n: number = 1;\nexport {};\n").unwrap();
    let out = call(
        &tools,
        "edit",
        json!({"path": "a.ts", "old_string": "= 1", "new_string": "= \"one\""}),
    )
    .await;
    if out.contains("not available") {
        eprintln!("skipped: typescript-language-server did not start (is typescript installed?)");
        return;
    }
    assert!(out.contains("[lsp typescript: 1 error"), "{out}");
    manager.shutdown().await;
}
