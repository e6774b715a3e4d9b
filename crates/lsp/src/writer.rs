//! `edit` and `write_file` with the new diagnostics of the file they wrote appended to
//! their result: the server is shown the file before the write (what was wrong already)
//! and after it, and only what is new is listed.

use crate::diagnostics::{block, new_since, Diag, Outcome};
use crate::manager::LspManager;
use crate::ops::Session;
use crate::server::Server;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_tools::code_intel::FileView;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct Diagnosing {
    pub inner: Arc<dyn Tool>,
    pub manager: LspManager,
    pub view: Option<Arc<dyn FileView>>,
}

/// How long to wait for a server's diagnostics: longer for one that has published
/// none yet (it has just started and reads the project first).
fn bound(manager: &LspManager, server: &Server) -> Duration {
    let bounds = manager.bounds();
    if server.store.seq() == 0 {
        bounds.first_diagnostics
    } else {
        bounds.diagnostics
    }
}

impl Diagnosing {
    /// The workspace file a call's `path` names (through the view's overlay paths).
    fn target(&self, input: &str) -> Option<PathBuf> {
        let input: Value = serde_json::from_str(input).ok()?;
        let path = input.get("path")?.as_str()?;
        let path = match &self.view {
            Some(view) => view.workspace_path(path).to_string_lossy().into_owned(),
            None => path.to_owned(),
        };
        let roots = self.manager.roots();
        roots
            .resolve(&path)
            .or_else(|_| roots.resolve_for_write(&path))
            .ok()
    }

    /// What the server says about `path` now: `None` when it said nothing in time.
    async fn diagnostics_now(
        &self,
        server: &Arc<Server>,
        path: &Path,
        saved: bool,
    ) -> Option<Vec<Diag>> {
        let mut session = Session::open(&self.manager, server, self.view.as_ref()).await;
        let since = server.store.seq();
        let Some((text, synced)) = session.show_current(path) else {
            // Not a file (yet): nothing can be wrong in it.
            return Some(Vec::new());
        };
        if saved && self.view.is_none() {
            if let Some(uri) = crate::uri::file_uri(path) {
                server.saved(uri.as_str(), &text);
            }
        }
        session
            .diagnostics(path, since, synced.changed, bound(&self.manager, server))
            .await
    }
}

#[async_trait::async_trait]
impl Tool for Diagnosing {
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
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }

    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(path) = self.target(input) else {
            return self.inner.execute(input, ctx).await;
        };
        let Some(spec) = self.manager.spec_for(&path) else {
            return self.inner.execute(input, ctx).await;
        };
        let name = spec.name.clone();
        let shown = self.manager.roots().display(&path);
        let server = match self.manager.server_for(&path).await {
            Ok(Some(server)) => server,
            Ok(None) => return self.inner.execute(input, ctx).await,
            Err(why) => {
                let mut output = self.inner.execute(input, ctx).await?;
                append(
                    &mut output,
                    &block(&name, &shown, &Outcome::Unavailable(why)),
                );
                return Ok(output);
            }
        };
        let before = self.diagnostics_now(&server, &path, false).await;
        let mut output = self.inner.execute(input, ctx).await?;
        let started = tokio::time::Instant::now();
        let after = self.diagnostics_now(&server, &path, true).await;
        tracing::debug!(
            server = name,
            path = shown,
            ms = started.elapsed().as_millis() as u64,
            "diagnostics after a write"
        );
        let outcome = match (before, after) {
            (_, None) if !server.alive() => {
                let tail = server.stderr_tail();
                Outcome::Unavailable(if tail.is_empty() {
                    "it stopped".to_owned()
                } else {
                    format!("it stopped; its stderr ends: {tail}")
                })
            }
            (_, None) => Outcome::NotReady {
                secs: bound(&self.manager, &server).as_secs(),
            },
            (Some(before), Some(after)) => Outcome::Problems {
                diags: new_since(&before, after),
                all: false,
            },
            (None, Some(after)) => Outcome::Problems {
                diags: after,
                all: true,
            },
        };
        append(&mut output, &block(&name, &shown, &outcome));
        Ok(output)
    }
}

fn append(output: &mut ToolOutput, block: &str) {
    if !output.content.ends_with('\n') {
        output.content.push('\n');
    }
    output.content.push_str(block);
}
