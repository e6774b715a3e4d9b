//! `/lsp` through the engine: the session's language servers as the workspace's
//! `CodeIntel` reports them, or a line saying there are none.
#![allow(clippy::unwrap_used)]

use crate::harness::unstarted;
use crate::{Action, EngineEvent, Level};
use saki_llm_worker::Tool;
use saki_testkit::MockServer;
use saki_tools::code_intel::{CodeIntel, FileView};
use saki_tools::ApprovalMode;
use std::sync::Arc;

/// Language servers that only report; no tool of theirs is called here.
#[derive(Debug)]
struct Reporting;

#[async_trait::async_trait]
impl CodeIntel for Reporting {
    fn tool(&self, _view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool> {
        Arc::new(saki_tools::plan::UpdatePlan)
    }
    fn diagnosing(&self, writer: Arc<dyn Tool>, _view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool> {
        writer
    }
    fn report(&self) -> String {
        "pyright (`pyright-langserver --stdio`) in .: running, 2 files open, 1 errors, 0 warnings"
            .into()
    }
    async fn shutdown(&self) {}
}

async fn lsp_alert(code_intel: Option<Arc<dyn CodeIntel>>) -> (Level, String) {
    let server = MockServer::start().unwrap();
    let (mut engine, actions, mut h) = unstarted(
        &server,
        ApprovalMode::Default,
        false,
        |_| {},
        |_| {},
        Vec::new(),
    );
    if let Some(code_intel) = code_intel {
        let mut workspace = (*engine.workspace).clone();
        workspace.set_code_intel(code_intel);
        engine.workspace = Arc::new(workspace);
    }
    tokio::spawn(engine.run(actions));
    h.send(Action::ListLsp);
    match h
        .until(|e| matches!(e, EngineEvent::Alert { .. }))
        .await
        .pop()
    {
        Some(EngineEvent::Alert { level, message }) => (level, message),
        other => unreachable!("{other:?}"),
    }
}

#[tokio::test]
async fn lsp_lists_the_servers_the_workspace_reports() {
    let (level, message) = lsp_alert(Some(Arc::new(Reporting))).await;
    assert_eq!(level, Level::Info);
    assert_eq!(
        message,
        "pyright (`pyright-langserver --stdio`) in .: running, 2 files open, 1 errors, 0 warnings"
    );
}

#[tokio::test]
async fn lsp_without_servers_says_so() {
    let (level, message) = lsp_alert(None).await;
    assert_eq!(level, Level::Info);
    assert!(message.starts_with("no language servers"), "{message}");
}
