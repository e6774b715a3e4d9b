//! Operations on one server with the right text in place: the files a speculation
//! wrote shown as the speculation has them for the length of one operation (then as
//! they are on disk again), open documents kept in step with the disk, and
//! diagnostics waited for (pushed) or asked for (pulled) within a bound.

use crate::diagnostics::Diag;
use crate::manager::LspManager;
use crate::server::{Doc, Server};
use crate::uri::file_uri;
use saki_tools::code_intel::FileView;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::MutexGuard;
use tokio::time::Instant;

/// How long diagnostics of a change are waited for.
pub const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(5);

/// How long the first diagnostics of a server that has just started are waited for (it
/// reads the project first).
pub const FIRST_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(15);

/// How long one query (definition, references, hover, symbols) may take.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// One server, locked for an operation, with the view's files shown to it.
pub struct Session<'a> {
    pub server: &'a Arc<Server>,
    pub docs: MutexGuard<'a, HashMap<String, Doc>>,
    manager: &'a LspManager,
    view: Option<&'a Arc<dyn FileView>>,
    /// Files shown with the view's text, to show as on disk again at the end.
    borrowed: Vec<PathBuf>,
}

impl<'a> Session<'a> {
    /// Locks `server` and brings it up to date: open documents as on disk, and the
    /// files `view` wrote (those this server serves) as the view has them.
    pub async fn open(
        manager: &'a LspManager,
        server: &'a Arc<Server>,
        view: Option<&'a Arc<dyn FileView>>,
    ) -> Session<'a> {
        let docs = server.docs.lock().await;
        let mut session = Session {
            server,
            docs,
            manager,
            view: None,
            borrowed: Vec::new(),
        };
        session.refresh_from_disk();
        if let Some(view) = view {
            for path in view.written() {
                if server.spec.serves(&path) && path.starts_with(&server.root) {
                    if let Some(text) = view.text(&path) {
                        session.show(&path, &text);
                        session.borrowed.push(path);
                    }
                }
            }
        }
        session.view = view;
        session
    }

    /// Open documents whose file changed on disk since (a shell command, an accepted
    /// speculation, an undo) are shown again; those whose file is gone are closed.
    fn refresh_from_disk(&mut self) {
        let uris: Vec<String> = self.docs.keys().cloned().collect();
        for uri in uris {
            let Some(path) =
                lsp_types::Uri::from_str_opt(&uri).and_then(|u| crate::uri::uri_path(&u))
            else {
                continue;
            };
            match self.manager.text_of(&path, None) {
                Some(text) => {
                    self.server.sync(&mut self.docs, &uri, &path, &text);
                }
                None => self.server.close(&mut self.docs, &uri),
            }
        }
    }

    /// The text of `path` as this operation sees it.
    pub fn text(&self, path: &Path) -> Option<String> {
        self.manager.text_of(path, self.view)
    }

    /// Shows the server `text` for `path`; the version it now has and whether it changed.
    pub fn show(&mut self, path: &Path, text: &str) -> Option<crate::server::Synced> {
        let uri = file_uri(path)?;
        Some(self.server.sync(&mut self.docs, uri.as_str(), path, text))
    }

    /// Shows the server `path` as this operation sees it (opening it if need be).
    pub fn show_current(&mut self, path: &Path) -> Option<(String, crate::server::Synced)> {
        let text = self.text(path)?;
        let synced = self.show(path, &text)?;
        Some((text, synced))
    }

    /// The diagnostics of `path` for the text it was last shown, waiting at most
    /// `bound` for them; `None` when the server said nothing in time. `changed`: that
    /// text was sent after the store's sequence number `since`, so only a publication
    /// after it counts; otherwise one already in for the same version does.
    pub async fn diagnostics(
        &mut self,
        path: &Path,
        since: u64,
        changed: bool,
        bound: Duration,
    ) -> Option<Vec<Diag>> {
        let uri = file_uri(path)?;
        let doc = self.docs.get(uri.as_str())?.clone();
        let shown = self.manager.roots().display(path);
        let published = if self.server.pulls() {
            self.pull(uri.as_str(), doc.version, bound).await
        } else {
            let stored = self
                .server
                .store
                .get(uri.as_str())
                .filter(|p| !changed && p.version.is_none_or(|v| v == doc.version));
            match stored {
                Some(p) => Some(p.diagnostics),
                None => self
                    .server
                    .store
                    .wait(uri.as_str(), doc.version, since, Instant::now() + bound)
                    .await
                    .map(|p| p.diagnostics),
            }
        }?;
        Some(
            published
                .iter()
                .map(|d| Diag::from_lsp(&shown, &doc.text, d))
                .collect(),
        )
    }

    async fn pull(
        &self,
        uri: &str,
        version: i32,
        bound: Duration,
    ) -> Option<Vec<lsp_types::Diagnostic>> {
        let answer = self
            .server
            .request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
                bound,
            )
            .await
            .ok()?;
        match answer.get("kind").and_then(|k| k.as_str()) {
            Some("unchanged") => self.server.store.get(uri).map(|p| p.diagnostics),
            _ => {
                let items: Vec<lsp_types::Diagnostic> = answer
                    .get("items")
                    .cloned()
                    .and_then(|i| serde_json::from_value(i).ok())
                    .unwrap_or_default();
                self.server.store.publish(uri, Some(version), items.clone());
                Some(items)
            }
        }
    }
}

/// The files shown with a view's text are shown as they are on disk again when the
/// operation ends, also when it is cancelled (dropped) midway.
impl Drop for Session<'_> {
    fn drop(&mut self) {
        for path in std::mem::take(&mut self.borrowed) {
            let Some(uri) = file_uri(&path) else { continue };
            match self.manager.text_of(&path, None) {
                Some(text) => {
                    self.server.sync(&mut self.docs, uri.as_str(), &path, &text);
                }
                None => self.server.close(&mut self.docs, uri.as_str()),
            }
        }
    }
}

/// A URI string parsed, or `None`.
trait FromStrOpt: Sized {
    fn from_str_opt(s: &str) -> Option<Self>;
}

impl FromStrOpt for lsp_types::Uri {
    fn from_str_opt(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}
