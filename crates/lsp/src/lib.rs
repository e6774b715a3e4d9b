//! saki-lsp: language servers for a session. Diagnostics after `edit` and `write_file`,
//! and the `lsp` tool (diagnostics, definition, references, hover, symbols). The tools
//! reach it through `saki_tools::code_intel::CodeIntel`, which [`LspManager`]
//! implements; see the crate README for what it owns and its bounds.

pub mod config;
pub mod diagnostics;
pub mod framing;
pub mod manager;
mod ops;
mod present;
pub mod rpc;
pub mod server;
pub mod store;
pub mod tool;
pub mod uri;
pub mod writer;

pub use config::{LspSetting, ServerConfig, ServerSpec};
pub use diagnostics::{error_count, parse_block, Diag, Severity};
pub use manager::{Bounds, LspManager, MAX_RESTARTS};
pub use ops::{DIAGNOSTICS_WAIT, FIRST_DIAGNOSTICS_WAIT, QUERY_TIMEOUT};

use saki_llm_worker::Tool;
use saki_tools::code_intel::{CodeIntel, FileView};
use std::sync::Arc;

#[async_trait::async_trait]
impl CodeIntel for LspManager {
    fn tool(&self, view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool> {
        Arc::new(tool::LspTool {
            manager: self.clone(),
            view,
        })
    }

    fn diagnosing(&self, writer: Arc<dyn Tool>, view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool> {
        Arc::new(writer::Diagnosing {
            inner: writer,
            manager: self.clone(),
            view,
        })
    }

    fn report(&self) -> String {
        LspManager::report(self)
    }

    async fn shutdown(&self) {
        LspManager::shutdown(self).await;
    }
}
