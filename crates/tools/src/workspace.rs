//! The workspace scope: every path a tool touches is resolved (symlinks included) and
//! must stay inside one of the workspace roots.

use crate::shell::ShellRuntime;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("{path} is outside the workspace ({root})")]
    OutOfScope { path: String, root: String },
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("cannot resolve {path}: {message}")]
    Io { path: String, message: String },
}

#[derive(Debug, Clone)]
pub struct Workspace {
    /// Canonical roots; the first is where relative paths start.
    roots: Vec<PathBuf>,
    /// How shell commands run here (environment, temp dir, sandbox); `None`: a scrubbed
    /// copy of saki's environment and no sandbox.
    shell: Option<Arc<ShellRuntime>>,
    /// Most bytes of one tool's output the model sees (`tool_output_max_bytes`).
    output_cap: usize,
    /// How `web_fetch` may reach the web (`[web_fetch]`).
    web: crate::web_fetch::WebSettings,
}

impl Workspace {
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self {
            roots: vec![root.as_ref().canonicalize()?],
            shell: None,
            output_cap: crate::common::TOOL_OUTPUT_MAX_BYTES,
            web: crate::web_fetch::WebSettings::default(),
        })
    }

    /// Caps every tool's output at `bytes` (at least 1 KiB, so a notice still fits).
    pub fn set_output_cap(&mut self, bytes: usize) {
        self.output_cap = bytes.max(1024);
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

    pub fn shell_runtime(&self) -> Option<&Arc<ShellRuntime>> {
        self.shell.as_ref()
    }

    /// Adds another root (`--add-dir`).
    pub fn add_root(&mut self, root: impl AsRef<Path>) -> std::io::Result<()> {
        self.roots.push(root.as_ref().canonicalize()?);
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.roots[0]
    }

    /// All canonical roots, the first one first.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub(crate) fn absolute(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            self.rooted_in_workspace(p)
                .unwrap_or_else(|| p.to_path_buf())
        } else {
            self.root().join(p)
        }
    }

    /// Small models often write workspace paths as if the workspace were `/` (`/docs`
    /// for `docs`). Such a path that names nothing on this machine, while the same path
    /// under the first root does exist, means the workspace one. It can only lead inside.
    fn rooted_in_workspace(&self, p: &Path) -> Option<PathBuf> {
        if self.roots.iter().any(|r| p.starts_with(r)) || p.symlink_metadata().is_ok() {
            return None;
        }
        let inside = self.root().join(p.strip_prefix("/").ok()?);
        inside.symlink_metadata().ok().map(|_| inside)
    }

    fn check(&self, original: &str, resolved: PathBuf) -> Result<PathBuf, ScopeError> {
        if self.roots.iter().any(|r| resolved.starts_with(r)) {
            Ok(resolved)
        } else {
            Err(ScopeError::OutOfScope {
                path: original.to_owned(),
                root: self.root().display().to_string(),
            })
        }
    }

    /// Resolves an existing path (following symlinks) inside the scope.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ScopeError> {
        let abs = self.absolute(path);
        match abs.canonicalize() {
            Ok(real) => self.check(path, real),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Say "outside" rather than "missing" for paths that point outside anyway.
                self.resolve_for_write(path)?;
                Err(ScopeError::NotFound(path.to_owned()))
            }
            Err(e) => Err(ScopeError::Io {
                path: path.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// Resolves a path that may not exist yet: its deepest existing ancestor is
    /// canonicalized (so a symlinked directory cannot lead outside); a `..` below a
    /// missing directory cannot be resolved and is refused.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ScopeError> {
        let abs = self.absolute(path);
        let mut existing = abs.as_path();
        let mut rest = Vec::new();
        loop {
            match existing.canonicalize() {
                Ok(real) => {
                    let mut full = real;
                    for part in rest.iter().rev() {
                        full.push(part);
                    }
                    return self.check(path, full);
                }
                Err(_) => {
                    let (Some(parent), Some(name)) = (existing.parent(), existing.file_name())
                    else {
                        return Err(ScopeError::Io {
                            path: path.to_owned(),
                            message: "`..` after a directory that does not exist".into(),
                        });
                    };
                    rest.push(name.to_owned());
                    existing = parent;
                }
            }
        }
    }

    /// A path as shown to the model: relative to the first root when inside it.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(self.root()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}
