//! The workspace scope: every path a tool touches is resolved (symlinks included) and
//! must stay inside one of the workspace roots.

use crate::shell::ShellRuntime;
pub use saki_shell_safety::roots::{Roots, ScopeError};
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Workspace {
    /// Where paths may lead (the scope).
    roots: Roots,
    /// How shell commands run here (environment, temp dir, sandbox); `None`: a scrubbed
    /// copy of saki's environment and no sandbox.
    shell: Option<Arc<ShellRuntime>>,
    /// Most bytes of one tool's output the model sees (`tool_output_max_bytes`).
    output_cap: usize,
    /// How `web_fetch` may reach the web (`[web_fetch]`).
    web: crate::web_fetch::WebSettings,
    /// The session's language servers (`saki-lsp`); `None`: no `lsp` tool, and edits
    /// report no diagnostics.
    code_intel: Option<Arc<dyn crate::code_intel::CodeIntel>>,
    /// Where the file tools read and write ([`crate::fs::DiskFs`] unless a front end or
    /// a speculation sets another).
    fs: Arc<dyn crate::fs::Fs>,
}

impl Workspace {
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self {
            roots: Roots::new(root)?,
            shell: None,
            output_cap: crate::common::TOOL_OUTPUT_MAX_BYTES,
            web: crate::web_fetch::WebSettings::default(),
            code_intel: None,
            fs: Arc::new(crate::fs::DiskFs),
        })
    }

    /// Caps every tool's output at `bytes` (at least 1 KiB, so a notice still fits, and
    /// at most [`crate::common::TOOL_OUTPUT_HARD_MAX_BYTES`]).
    pub fn set_output_cap(&mut self, bytes: usize) {
        self.output_cap = bytes.clamp(1024, crate::common::TOOL_OUTPUT_HARD_MAX_BYTES);
    }

    pub fn output_cap(&self) -> usize {
        self.output_cap
    }

    /// `web_fetch` in this workspace reaches the web as `settings` say.
    pub fn set_web(&mut self, settings: crate::web_fetch::WebSettings) {
        self.web = settings;
    }

    pub fn web(&self) -> &crate::web_fetch::WebSettings {
        &self.web
    }

    /// Shell commands in this workspace run as `runtime` says.
    pub fn set_shell_runtime(&mut self, runtime: Arc<ShellRuntime>) {
        self.shell = Some(runtime);
    }

    /// Tools in this workspace ask these language servers.
    pub fn set_code_intel(&mut self, code_intel: Arc<dyn crate::code_intel::CodeIntel>) {
        self.code_intel = Some(code_intel);
    }

    pub fn code_intel(&self) -> Option<&Arc<dyn crate::code_intel::CodeIntel>> {
        self.code_intel.as_ref()
    }

    /// This workspace without language servers: a speculation's file tools, which
    /// attach them to its overlay's text themselves.
    pub fn without_code_intel(mut self) -> Self {
        self.code_intel = None;
        self
    }

    /// The file tools of this workspace read and write through `fs` (an editor's
    /// buffers, say); paths are still resolved and scope-checked here first.
    pub fn set_fs(&mut self, fs: Arc<dyn crate::fs::Fs>) {
        self.fs = fs;
    }

    /// This workspace with its files seen through `fs` (a speculation's overlay).
    pub fn with_fs(&self, fs: Arc<dyn crate::fs::Fs>) -> Self {
        let mut workspace = self.clone();
        workspace.fs = fs;
        workspace
    }

    pub fn fs(&self) -> &Arc<dyn crate::fs::Fs> {
        &self.fs
    }

    /// Resolves an existing path inside the roots (see [`Roots::resolve`]), asking the
    /// file system whether it exists (an overlay holds files the disk lacks).
    pub fn resolve(&self, path: &str) -> Result<std::path::PathBuf, ScopeError> {
        self.fs.resolve(&self.roots, path)
    }

    /// [`Self::resolve`] for a path to read: a missing path written as a file with a line
    /// after it (`settings.py:2:DEBUG = True`) or without a dotfile's dot (`env`) is that
    /// file (see [`Roots::meant`]). Never for a change, which goes where it says.
    pub fn resolve_to_read(&self, path: &str) -> Result<std::path::PathBuf, ScopeError> {
        match self.resolve(path) {
            Err(ScopeError::NotFound(missing)) => match self.roots.meant(path) {
                Some(meant) => self.resolve(&meant),
                None => Err(ScopeError::NotFound(missing)),
            },
            other => other,
        }
    }

    /// The file `path` (as a model wrote it) names, and its text, if it is in scope, text,
    /// and at most `max` bytes.
    pub async fn read_text(&self, path: &str, max: u64) -> Option<(std::path::PathBuf, String)> {
        let resolved = self.resolve(path).ok()?;
        let bytes = self.fs.read(&resolved, max.saturating_add(1)).await.ok()?;
        if bytes.len() as u64 > max || crate::common::looks_binary(&bytes) {
            return None;
        }
        Some((resolved, String::from_utf8(bytes).ok()?))
    }

    /// What the existing path `path` (as a model wrote it) is inside the roots, if
    /// anything.
    pub async fn kind(&self, path: &str) -> Option<crate::fs::Kind> {
        let resolved = self.resolve(path).ok()?;
        let stat = self.fs.stat(&resolved).await.ok().flatten()?;
        Some(stat.kind)
    }

    pub fn shell_runtime(&self) -> Option<&Arc<ShellRuntime>> {
        self.shell.as_ref()
    }

    /// The roots, for the shell scope check and whoever resolves paths.
    pub fn scope(&self) -> &Roots {
        &self.roots
    }

    /// Adds another root (`--add-dir`).
    pub fn add_root(&mut self, root: impl AsRef<Path>) -> std::io::Result<()> {
        self.roots.add_root(root)
    }
}

/// A workspace resolves paths as its roots do (`resolve`, `display`, ...).
impl Deref for Workspace {
    type Target = Roots;

    fn deref(&self) -> &Roots {
        &self.roots
    }
}
