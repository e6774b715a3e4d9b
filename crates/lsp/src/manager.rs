//! The session's language servers: started lazily on the first file of their kind,
//! one per (server, project root), restarted after a crash at most [`MAX_RESTARTS`]
//! times, stopped with the session.

use crate::config::ServerSpec;
use crate::server::Server;
use saki_tools::code_intel::FileView;
use saki_tools::Roots;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Restarts after a crash, per server and root, for the session.
pub const MAX_RESTARTS: u32 = 3;

/// The largest file shown to a server (bigger ones are not opened).
pub const MAX_FILE_BYTES: u64 = 8 << 20;

type Key = (String, PathBuf);

#[derive(Default)]
struct Slot {
    server: Option<Arc<Server>>,
    /// Times it was started (the first start included).
    starts: u32,
    /// Why the last start failed or the server ended.
    failure: Option<String>,
}

/// How long diagnostics are waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// After a change ([`crate::DIAGNOSTICS_WAIT`]).
    pub diagnostics: std::time::Duration,
    /// From a server that has published none yet ([`crate::FIRST_DIAGNOSTICS_WAIT`]).
    pub first_diagnostics: std::time::Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            diagnostics: crate::ops::DIAGNOSTICS_WAIT,
            first_diagnostics: crate::ops::FIRST_DIAGNOSTICS_WAIT,
        }
    }
}

pub(crate) struct Inner {
    pub specs: Vec<ServerSpec>,
    pub bounds: Bounds,
    pub roots: Roots,
    env: Vec<(String, String)>,
    slots: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<Slot>>>>,
    stopped: AtomicBool,
}

/// The session's language servers (cheap to clone).
#[derive(Clone)]
pub struct LspManager {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for LspManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspManager")
            .field("servers", &self.inner.specs.len())
            .finish()
    }
}

impl LspManager {
    /// Servers `specs` may start for files under `roots`, with `env` (the environment
    /// shell commands get, already scrubbed of secrets).
    pub fn new(specs: Vec<ServerSpec>, roots: Roots, env: Vec<(String, String)>) -> Self {
        Self {
            inner: Arc::new(Inner {
                specs,
                bounds: Bounds::default(),
                roots,
                env,
                slots: Mutex::default(),
                stopped: AtomicBool::new(false),
            }),
        }
    }

    /// The same servers with other waits (tests use short ones).
    pub fn with_bounds(self, bounds: Bounds) -> Self {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            specs: shared.specs.clone(),
            bounds,
            roots: shared.roots.clone(),
            env: shared.env.clone(),
            slots: Mutex::default(),
            stopped: AtomicBool::new(false),
        });
        Self {
            inner: Arc::new(Inner { bounds, ..inner }),
        }
    }

    pub fn bounds(&self) -> Bounds {
        self.inner.bounds
    }

    pub fn specs(&self) -> &[ServerSpec] {
        &self.inner.specs
    }

    pub fn roots(&self) -> &Roots {
        &self.inner.roots
    }

    /// The spec serving `path`, if any.
    pub fn spec_for(&self, path: &Path) -> Option<&ServerSpec> {
        self.inner.specs.iter().find(|s| s.serves(path))
    }

    /// The running server for `path`, started now if it is not running: `Ok(None)` when
    /// no server serves such files, `Err` when its server cannot run.
    pub async fn server_for(&self, path: &Path) -> Result<Option<Arc<Server>>, String> {
        let Some(spec) = self.spec_for(path) else {
            return Ok(None);
        };
        if self.inner.stopped.load(Ordering::Acquire) {
            return Err("the session is ending".into());
        }
        let root = self.root_for(spec, path);
        let slot = {
            let mut slots = self
                .inner
                .slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            slots
                .entry((spec.name.clone(), root.clone()))
                .or_default()
                .clone()
        };
        let mut slot = slot.lock().await;
        if let Some(server) = &slot.server {
            if server.alive() {
                return Ok(Some(server.clone()));
            }
            let tail = server.stderr_tail();
            slot.failure = Some(if tail.is_empty() {
                "it stopped".to_owned()
            } else {
                format!("it stopped; its stderr ends: {tail}")
            });
            tracing::warn!(server = spec.name, "language server stopped");
            slot.server = None;
        }
        if slot.starts > MAX_RESTARTS {
            return Err(format!(
                "`{}` stopped {} times and is not started again this session ({})",
                spec.name,
                slot.starts,
                slot.failure.as_deref().unwrap_or("no reason known")
            ));
        }
        slot.starts += 1;
        match Server::start(spec, &root, &self.inner.env).await {
            Ok(server) => {
                slot.server = Some(server.clone());
                Ok(Some(server))
            }
            Err(e) => {
                let why = format!("`{}` did not start: {e}", spec.name);
                slot.failure = Some(why.clone());
                // A program that cannot start will not start on the next file either.
                slot.starts = slot.starts.max(MAX_RESTARTS + 1);
                Err(why)
            }
        }
    }

    /// The root a server for `path` runs in: the nearest directory holding one of its
    /// root markers, up to the workspace root that holds `path` (that root without one).
    pub fn root_for(&self, spec: &ServerSpec, path: &Path) -> PathBuf {
        let workspace_root = self
            .inner
            .roots
            .roots()
            .iter()
            .find(|r| path.starts_with(r))
            .cloned()
            .unwrap_or_else(|| self.inner.roots.root().to_path_buf());
        for dir in path.ancestors().skip(1) {
            if !dir.starts_with(&workspace_root) {
                break;
            }
            if spec.root_markers.iter().any(|m| dir.join(m).exists()) {
                return dir.to_path_buf();
            }
        }
        workspace_root
    }

    /// The running servers.
    pub fn running(&self) -> Vec<Arc<Server>> {
        self.slots()
            .into_iter()
            .filter_map(|(_, slot)| slot.try_lock().ok().and_then(|s| s.server.clone()))
            .filter(|s| s.alive())
            .collect()
    }

    fn slots(&self) -> Vec<(Key, Arc<tokio::sync::Mutex<Slot>>)> {
        let slots = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = slots.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// `/lsp`: each server, its state and its counts, one line each.
    pub fn report(&self) -> String {
        if self.inner.specs.is_empty() {
            return "no language servers: none of the built-in ones is on PATH and config names none ([lsp.NAME])".into();
        }
        let slots = self.slots();
        let mut lines = Vec::new();
        for spec in &self.inner.specs {
            let command = spec.command.join(" ");
            let mine: Vec<_> = slots.iter().filter(|(k, _)| k.0 == spec.name).collect();
            if mine.is_empty() {
                lines.push(format!(
                    "{} (`{command}`): not started (starts with the first .{} file)",
                    spec.name,
                    spec.extensions.first().map_or("", String::as_str)
                ));
                continue;
            }
            for ((_, root), slot) in mine {
                let root = self.inner.roots.display(root);
                let state = match slot.try_lock() {
                    Err(_) => "starting or busy".to_owned(),
                    Ok(slot) => describe(&slot),
                };
                lines.push(format!("{} (`{command}`) in {root}: {state}", spec.name));
            }
        }
        lines.join("\n")
    }

    /// Stops every server (`shutdown`, `exit`, then a kill); no server starts after.
    pub async fn shutdown(&self) {
        self.inner.stopped.store(true, Ordering::Release);
        let mut stopping = tokio::task::JoinSet::new();
        for (_, slot) in self.slots() {
            stopping.spawn(async move {
                let server = slot.lock().await.server.take();
                if let Some(server) = server {
                    server.stop().await;
                }
            });
        }
        while stopping.join_next().await.is_some() {}
    }

    /// The text of `path` in `view` (a speculation's copy) or on disk; `None` when it
    /// does not exist, is not a regular file or is too large.
    pub fn text_of(&self, path: &Path, view: Option<&Arc<dyn FileView>>) -> Option<String> {
        if let Some(text) = view.and_then(|v| v.text(path)) {
            return Some(text);
        }
        let bytes = saki_tools::common::read_regular_at_most(path, MAX_FILE_BYTES).ok()?;
        if bytes.len() as u64 >= MAX_FILE_BYTES {
            return None;
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

fn describe(slot: &Slot) -> String {
    let restarts = slot.starts.saturating_sub(1);
    let restarts = if restarts > 0 {
        format!(
            ", {restarts} restart{}",
            if restarts == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    match &slot.server {
        Some(server) if server.alive() => {
            let (mut errors, mut warnings) = (0, 0);
            for (_, published) in server.store.all() {
                for d in &published.diagnostics {
                    match crate::diagnostics::Severity::from_lsp(d.severity) {
                        crate::diagnostics::Severity::Error => errors += 1,
                        crate::diagnostics::Severity::Warning => warnings += 1,
                        _ => {}
                    }
                }
            }
            let open = server.docs.try_lock().map(|d| d.len()).ok();
            let open = open.map_or("busy".to_owned(), |n| {
                format!("{n} file{} open", if n == 1 { "" } else { "s" })
            });
            format!("running, {open}, {errors} errors, {warnings} warnings{restarts}")
        }
        Some(_) => format!("stopped{restarts} (restarts on the next file)"),
        None => match &slot.failure {
            Some(why) => format!("not running: {why}{restarts}"),
            None => format!("stopped{restarts}"),
        },
    }
}
