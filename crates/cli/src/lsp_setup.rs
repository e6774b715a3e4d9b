//! The session's language servers, wired in one place for every front end: the
//! entries `lsp` / `[lsp.NAME]` configure over the built-in ones whose program is on
//! the commands' `PATH`, started lazily by the tools (`saki-lsp`), with the environment
//! shell commands get (secrets scrubbed). The engine stops them when the session ends.

use crate::config::Resolved;
use saki_tools::Workspace;
use std::sync::Arc;

/// `workspace` with its language servers attached (unchanged when there are none).
pub fn attach(resolved: &Resolved, workspace: Arc<Workspace>) -> Arc<Workspace> {
    let env: Vec<(String, String)> = match workspace.shell_runtime() {
        Some(runtime) => runtime.env().to_vec(),
        None => saki_sandbox::shell_env::ShellEnvConfig::default()
            .build(std::env::vars(), &resolved.key_names)
            .unwrap_or_default(),
    };
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let specs = saki_lsp::config::specs(
        resolved.lsp.as_ref(),
        resolved.workspace_trusted,
        &|program| saki_lsp::config::on_path(program, path.as_deref()),
    );
    if specs.is_empty() {
        return workspace;
    }
    tracing::debug!(servers = specs.len(), "language servers available");
    let manager = saki_lsp::LspManager::new(specs, workspace.scope().clone(), env);
    let mut with = (*workspace).clone();
    with.set_code_intel(Arc::new(manager));
    Arc::new(with)
}
