//! Code intelligence (language servers) as the tools see it. saki-tools defines the
//! seam; `saki-lsp` fills it. A workspace that has one ([`crate::Workspace::code_intel`])
//! offers the `lsp` tool, and `edit` and `write_file` report the new diagnostics of the
//! file they wrote. A speculation passes its overlay as a [`FileView`], so the servers
//! are shown the speculation's text and never the real files change.

use saki_llm_worker::Tool;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The name of the tool [`CodeIntel::tool`] makes.
pub const TOOL_NAME: &str = "lsp";

/// Where the files a tool reads have their current text: a speculation's overlay.
pub trait FileView: Send + Sync {
    /// The text of the workspace file `path` (absolute) when the view holds its own
    /// copy of it; `None`: the file on disk is what counts.
    fn text(&self, path: &Path) -> Option<String>;
    /// The workspace files (absolute) the view holds its own copy of.
    fn written(&self) -> Vec<PathBuf>;
    /// The workspace path a tool's path stands for (a speculation's tools are handed
    /// paths inside the overlay).
    fn workspace_path(&self, path: &str) -> PathBuf;
}

/// Language servers for one session.
#[async_trait::async_trait]
pub trait CodeIntel: Send + Sync + std::fmt::Debug {
    /// The `lsp` tool, reading files through `view` (`None`: the disk).
    fn tool(&self, view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool>;
    /// `writer` (`edit` or `write_file`), its result followed by the new diagnostics of
    /// the file it wrote, read through `view`.
    fn diagnosing(&self, writer: Arc<dyn Tool>, view: Option<Arc<dyn FileView>>) -> Arc<dyn Tool>;
    /// `/lsp`: each server, its state and its counts, as lines for people.
    fn report(&self) -> String;
    /// Stops every server; called once, when the session ends.
    async fn shutdown(&self);
}
