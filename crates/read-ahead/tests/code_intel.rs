#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Language servers during a speculation, against the mock provider: the `lsp` tool runs
//! ahead in every mode, the servers (a recording stand-in for saki-lsp) are shown the
//! overlay's text of the files the speculation wrote, `edit` is checked through the
//! same view, and no real file changes before accept.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::{Item, Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_read_ahead::*;
use saki_testkit::{MockServer, Turn};
use saki_tools::code_intel::{CodeIntel, FileView};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What the stand-in servers were shown: `(operation, workspace path, text, through a
/// view)`, in order.
type Log = Arc<Mutex<Vec<(String, String, String, bool)>>>;

#[derive(Debug, Default)]
struct Servers {
    log: Log,
}

/// The text of `path` as a server would be shown it: the view's copy, else the disk's.
fn shown(view: Option<&Arc<dyn FileView>>, path: &str) -> (String, String) {
    let real = match view {
        Some(view) => view.workspace_path(path),
        None => Path::new(path).to_path_buf(),
    };
    let text = view
        .and_then(|v| v.text(&real))
        .or_else(|| std::fs::read_to_string(&real).ok())
        .unwrap_or_default();
    (real.display().to_string(), text)
}

struct LspTool {
    view: Option<Arc<dyn FileView>>,
    log: Log,
}

#[async_trait::async_trait]
impl Tool for LspTool {
    fn name(&self) -> &str {
        saki_tools::code_intel::TOOL_NAME
    }
    fn description(&self) -> &str {
        "Ask the language server."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "operation": {"type": "string"}, "path": {"type": "string"}},
            "required": ["operation"]})
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        let input: Value = serde_json::from_str(input).unwrap();
        let path = input["path"].as_str().unwrap_or_default();
        let (real, text) = shown(self.view.as_ref(), path);
        self.log.lock().unwrap().push((
            input["operation"].as_str().unwrap_or_default().to_owned(),
            real,
            text.clone(),
            self.view.is_some(),
        ));
        Ok(ToolOutput::new(format!("the server sees: {}", text.trim())))
    }
}

/// `edit` / `write_file` followed by what the servers were shown of the file.
struct Checked {
    inner: Arc<dyn Tool>,
    view: Option<Arc<dyn FileView>>,
    log: Log,
}

#[async_trait::async_trait]
impl Tool for Checked {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut out = self.inner.execute(input, ctx).await?;
        let args: Value = serde_json::from_str(input).unwrap();
        let (real, text) = shown(self.view.as_ref(), args["path"].as_str().unwrap());
        self.log
            .lock()
            .unwrap()
            .push(("checked".into(), real, text.clone(), self.view.is_some()));
        out.content
            .push_str("\n[lsp fake: no new errors or warnings in the file]");
        Ok(out)
    }
}

#[async_trait::async_trait]
impl CodeIntel for Servers {
    fn tool(&self, view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool> {
        Arc::new(LspTool {
            view,
            log: self.log.clone(),
        })
    }
    fn diagnosing(&self, writer: Arc<dyn Tool>, view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool> {
        Arc::new(Checked {
            inner: writer,
            view,
            log: self.log.clone(),
        })
    }
    fn report(&self) -> String {
        "fake: running".into()
    }
    async fn shutdown(&self) {}
}

struct Fixture {
    server: MockServer,
    ws: tempfile::TempDir,
    base: tempfile::TempDir,
    workspace: Arc<Workspace>,
    log: Log,
}

fn fixture() -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), "pub fn a() {}\n").unwrap();
    let servers = Servers::default();
    let log = servers.log.clone();
    let mut workspace = Workspace::new(ws.path()).unwrap();
    workspace.set_code_intel(Arc::new(servers));
    Fixture {
        server: MockServer::start().unwrap(),
        ws,
        base: tempfile::tempdir().unwrap(),
        workspace: Arc::new(workspace),
        log,
    }
}

impl Fixture {
    async fn speculate(&self, mode: ApprovalMode) -> Speculation {
        let client =
            Client::new(ClientConfig::new(WireApi::Chat, self.server.openai_url())).unwrap();
        let mut speculator = Speculator::new(client, "fast", mode, self.workspace.clone());
        speculator.overlay_base = self.base.path().to_path_buf();
        // The main loop's tools, `lsp` among them: a speculation offers exactly these.
        let tools = saki_tools::builtin_server(self.workspace.clone()).unwrap();
        let params = CacheSafeParams {
            system: Some("sys".into()),
            tools: tools.definitions(),
            history: vec![
                Item::user("look at lib.rs"),
                Item::AssistantText {
                    text: "It defines a().".into(),
                },
            ],
            model: "main".into(),
            ..Default::default()
        };
        speculator
            .run(&params, "check lib.rs", CancellationToken::new())
            .await
    }

    fn lib(&self) -> String {
        std::fs::read_to_string(self.ws.path().join("src/lib.rs")).unwrap()
    }

    fn real_lib(&self) -> String {
        self.ws
            .path()
            .canonicalize()
            .unwrap()
            .join("src/lib.rs")
            .display()
            .to_string()
    }
}

fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::new().with_tool_call(id, name, args.to_string())
}

fn result(spec: &Speculation, call_id: &str) -> String {
    spec.items
        .iter()
        .find_map(|i| match i {
            Item::ToolResult { content, ctx, .. } if ctx.call_id == call_id => {
                Some(content.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}: {:?}", spec.items))
}

#[tokio::test]
async fn lsp_runs_ahead_in_every_mode() {
    for mode in ApprovalMode::ALL {
        let f = fixture();
        f.server.push(call(
            "l1",
            "lsp",
            json!({"operation": "diagnostics", "path": "src/lib.rs"}),
        ));
        f.server.push(Turn::text("No problems in lib.rs."));
        let spec = f.speculate(mode).await;
        assert_eq!(
            spec.status,
            SpeculationStatus::Completed,
            "{mode}: {:?}",
            spec.reason
        );
        assert_eq!(result(&spec, "l1"), "the server sees: pub fn a() {}");
        let log = f.log.lock().unwrap().clone();
        assert_eq!(
            log,
            [(
                "diagnostics".to_owned(),
                f.real_lib(),
                "pub fn a() {}\n".to_owned(),
                true
            )],
            "{mode}: the speculation's servers read through its overlay"
        );
        spec.abort();
    }
}

#[tokio::test]
async fn the_servers_see_the_overlays_text_and_the_real_file_stays() {
    let f = fixture();
    f.server.push(call(
        "e1",
        "edit",
        json!({"path": "src/lib.rs", "old_string": "pub fn a() {}", "new_string": "pub fn a() -> u8 { 1 }"}),
    ));
    f.server.push(call(
        "l1",
        "lsp",
        json!({"operation": "diagnostics", "path": "src/lib.rs"}),
    ));
    f.server.push(Turn::text("a() returns 1 now."));
    let spec = f.speculate(ApprovalMode::AutoEdit).await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    assert!(
        result(&spec, "e1").ends_with("[lsp fake: no new errors or warnings in the file]"),
        "the edit is checked in the speculation too"
    );
    assert_eq!(
        result(&spec, "l1"),
        "the server sees: pub fn a() -> u8 { 1 }"
    );
    let log = f.log.lock().unwrap().clone();
    let seen: Vec<(&str, &str, bool)> = log
        .iter()
        .map(|(op, path, text, view)| {
            assert_eq!(path, &f.real_lib());
            (op.as_str(), text.as_str(), *view)
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("checked", "pub fn a() -> u8 { 1 }\n", true),
            ("diagnostics", "pub fn a() -> u8 { 1 }\n", true),
        ]
    );
    assert_eq!(
        f.lib(),
        "pub fn a() {}\n",
        "no real file changes before accept"
    );
    let accepted = accept(spec, "check lib.rs").unwrap();
    assert_eq!(accepted.applied.applied().len(), 1);
    assert_eq!(f.lib(), "pub fn a() -> u8 { 1 }\n");
}

/// A path outside the workspace is a boundary before any server is asked.
#[tokio::test]
async fn an_lsp_path_outside_the_workspace_is_a_boundary() {
    let f = fixture();
    f.server.push(call(
        "l1",
        "lsp",
        json!({"operation": "hover", "path": "/etc/passwd", "line": 1, "column": 1}),
    ));
    f.server.push(Turn::text("unreachable"));
    let spec = f.speculate(ApprovalMode::Yolo).await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Boundary,
        "{:?}",
        spec.reason
    );
    assert!(f.log.lock().unwrap().is_empty());
    spec.abort();
}
