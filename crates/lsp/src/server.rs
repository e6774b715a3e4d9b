//! One running language server: its process (a process group of its own), the
//! handshake, the documents it was shown, and its diagnostics.

use crate::config::ServerSpec;
use crate::rpc::{Connection, RpcError};
use crate::store::DiagStore;
use lsp_types::{PublishDiagnosticsParams, ServerCapabilities};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a server may take to answer `initialize`.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long `shutdown` may take before the server is killed.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// Lines of a server's stderr kept to say why it failed.
const STDERR_LINES: usize = 8;

/// A document as the server was last shown it.
#[derive(Debug, Clone)]
pub struct Doc {
    pub version: i32,
    pub text: String,
}

/// What [`Server::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Synced {
    pub version: i32,
    /// The server was sent new text (open or change).
    pub changed: bool,
}

pub struct Server {
    pub spec: ServerSpec,
    pub root: PathBuf,
    conn: Connection,
    child: Mutex<Option<Child>>,
    pid: Option<i32>,
    pub caps: ServerCapabilities,
    pub store: Arc<DiagStore>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Open documents by URI. Held for the whole of an operation (a query with a
    /// speculation's text in place, an edit's before and after), so operations on one
    /// server do not interleave.
    pub docs: tokio::sync::Mutex<HashMap<String, Doc>>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("its handshake failed: {0}{1}")]
    Handshake(RpcError, String),
}

impl Server {
    /// Starts `spec` in `root` with `env` (the commands' scrubbed environment, the
    /// spec's own `env` over it) and completes the handshake.
    pub async fn start(
        spec: &ServerSpec,
        root: &Path,
        env: &[(String, String)],
    ) -> Result<Arc<Self>, StartError> {
        let program = spec.command.first().cloned().unwrap_or_default();
        let mut command = Command::new(&program);
        command
            .args(&spec.command[1..])
            .current_dir(root)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(&spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: the terminal's Ctrl+C (meant for a turn) does not reach it,
            // and the whole group can be killed (servers start helpers: tsserver).
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| StartError::Spawn {
            program: program.clone(),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(StartError::Spawn {
                program,
                source: std::io::Error::other("no pipes"),
            });
        };
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
            let keep = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut keep = keep.lock().unwrap_or_else(PoisonError::into_inner);
                    if keep.len() == STDERR_LINES {
                        keep.pop_front();
                    }
                    keep.push_back(line.chars().take(300).collect());
                }
            });
        }
        let store = Arc::new(DiagStore::default());
        let publish = store.clone();
        let options = spec.initialization_options.clone();
        let conn = Connection::start(
            stdout,
            stdin,
            move |method, params| {
                if method == crate::rpc::CLOSED {
                    publish.close();
                    return;
                }
                if method != "textDocument/publishDiagnostics" {
                    return;
                }
                match serde_json::from_value::<PublishDiagnosticsParams>(params) {
                    Ok(p) => publish.publish(p.uri.as_str(), p.version, p.diagnostics),
                    Err(e) => tracing::debug!(error = %e, "unreadable diagnostics"),
                }
            },
            Arc::new(move |method, params| answer_server(method, params, options.as_ref())),
        );
        let pid = child.id().and_then(|id| i32::try_from(id).ok());
        let root_uri = crate::uri::file_uri(root).map(|u| u.as_str().to_owned());
        let init = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "saki", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": root,
            "workspaceFolders": [{"uri": root_uri, "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
            "initializationOptions": spec.initialization_options,
            "capabilities": client_capabilities(),
        });
        let server_error = |e: RpcError, stderr: &Mutex<VecDeque<String>>| {
            let tail = stderr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ");
            let tail = if tail.is_empty() {
                String::new()
            } else {
                format!("; its stderr ends: {tail}")
            };
            StartError::Handshake(e, tail)
        };
        let answer = match conn.request("initialize", init, START_TIMEOUT).await {
            Ok(answer) => answer,
            Err(e) => {
                // Let the stderr reader catch up a moment for a useful message.
                let _ = tokio::time::timeout(Duration::from_millis(200), child.wait()).await;
                return Err(server_error(e, &stderr));
            }
        };
        let caps = answer
            .get("capabilities")
            .cloned()
            .and_then(|c| serde_json::from_value::<ServerCapabilities>(c).ok())
            .unwrap_or_default();
        conn.notify("initialized", json!({}));
        tracing::debug!(server = spec.name, root = %root.display(), "language server started");
        Ok(Arc::new(Self {
            spec: spec.clone(),
            root: root.to_path_buf(),
            conn,
            child: Mutex::new(Some(child)),
            pid,
            caps,
            store,
            stderr,
            docs: tokio::sync::Mutex::new(HashMap::new()),
        }))
    }

    /// Whether the process still runs and the connection is open.
    pub fn alive(&self) -> bool {
        if self.conn.is_closed() {
            return false;
        }
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        match child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }

    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        self.conn.request(method, params, timeout).await
    }

    /// Shows the server `text` as the document `uri` (opens it, or changes it when the
    /// text differs from what it was last shown).
    pub fn sync(
        &self,
        docs: &mut HashMap<String, Doc>,
        uri: &str,
        path: &Path,
        text: &str,
    ) -> Synced {
        match docs.get_mut(uri) {
            Some(doc) if doc.text == text => Synced {
                version: doc.version,
                changed: false,
            },
            Some(doc) => {
                doc.version += 1;
                doc.text = text.to_owned();
                self.conn.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": doc.version},
                           "contentChanges": [{"text": text}]}),
                );
                Synced {
                    version: doc.version,
                    changed: true,
                }
            }
            None => {
                self.conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language_id(path),
                           "version": 1, "text": text}}),
                );
                docs.insert(
                    uri.to_owned(),
                    Doc {
                        version: 1,
                        text: text.to_owned(),
                    },
                );
                Synced {
                    version: 1,
                    changed: true,
                }
            }
        }
    }

    /// Tells the server the document is no longer open (its file is gone).
    pub fn close(&self, docs: &mut HashMap<String, Doc>, uri: &str) {
        if docs.remove(uri).is_some() {
            self.conn.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            );
            self.store.forget(uri);
        }
    }

    /// Tells the server the document was saved (servers that check on save).
    pub fn saved(&self, uri: &str, text: &str) {
        self.conn.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}, "text": text}),
        );
    }

    /// Whether the server answers pulls for diagnostics (LSP 3.17).
    pub fn pulls(&self) -> bool {
        self.caps.diagnostic_provider.is_some()
    }

    /// `shutdown`, `exit`, then the process group killed if it still runs.
    pub async fn stop(&self) {
        if !self.conn.is_closed() {
            let _ = self
                .conn
                .request("shutdown", Value::Null, SHUTDOWN_TIMEOUT)
                .await;
            self.conn.notify("exit", Value::Null);
        }
        let child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            if tokio::time::timeout(SHUTDOWN_TIMEOUT, child.wait())
                .await
                .is_err()
            {
                kill_group(self.pid, &mut child);
                let _ = child.wait().await;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(child) = child.as_mut() {
            kill_group(self.pid, child);
        }
    }
}

/// Kills the server's process group, while its leader runs (once reaped, its id may be
/// another process's).
fn kill_group(pid: Option<i32>, child: &mut Child) {
    if let (Some(pid), Ok(None)) = (pid, child.try_wait()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.start_kill();
}

/// What saki answers the requests servers send: no settings of its own (each server's
/// defaults, or its `initialization_options`), registrations and progress accepted.
fn answer_server(method: &str, params: &Value, options: Option<&Value>) -> Option<Value> {
    match method {
        "workspace/configuration" => {
            let items = params.get("items").and_then(Value::as_array);
            let n = items.map_or(0, Vec::len);
            let answers = items
                .into_iter()
                .flatten()
                .map(|item| {
                    let section = item.get("section").and_then(Value::as_str);
                    match (options, section) {
                        (Some(o), Some(s)) => section_of(o, s),
                        _ => Value::Null,
                    }
                })
                .collect::<Vec<_>>();
            debug_assert_eq!(answers.len(), n);
            Some(Value::Array(answers))
        }
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "workspace/diagnostic/refresh" => Some(Value::Null),
        "window/showMessageRequest" => Some(Value::Null),
        "workspace/workspaceFolders" => Some(Value::Null),
        _ => None,
    }
}

/// `a.b` of `options`, or null.
fn section_of(options: &Value, section: &str) -> Value {
    section
        .split('.')
        .try_fold(options, |v, key| v.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {"configuration": true, "workspaceFolders": true, "symbol": {}},
        "window": {"workDoneProgress": false},
        "textDocument": {
            "synchronization": {"didSave": true, "dynamicRegistration": false},
            "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
            "diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": false},
            "hover": {"contentFormat": ["plaintext", "markdown"]},
            "definition": {"linkSupport": true},
            "references": {},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
        }
    })
}

/// The language id servers expect for a file.
fn language_id(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "rs" => "rust",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        _ => "plaintext",
    }
}
