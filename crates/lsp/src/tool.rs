//! The `lsp` tool: diagnostics, definition, references, hover and symbols from the
//! language server of a file, as `path:line:col` lines with a short context.

use crate::diagnostics::{problems, Diag};
use crate::manager::LspManager;
use crate::ops::{Session, QUERY_TIMEOUT};
use crate::present::{hover_text, locations, symbols_of_document, symbols_of_workspace, Lines};
use crate::uri::{file_uri, line_of, utf16_col};
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_tools::code_intel::{FileView, TOOL_NAME};
use saki_tools::common::failed;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

pub struct LspTool {
    pub manager: LspManager,
    pub view: Option<Arc<dyn FileView>>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Diagnostics,
    Definition,
    References,
    Hover,
    Symbols,
}

#[derive(Debug, Deserialize)]
struct Args {
    operation: Operation,
    path: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    query: Option<String>,
}

/// Most diagnostics the tool lists for one call.
const MAX_DIAGNOSTICS: usize = 100;

#[async_trait::async_trait]
impl Tool for LspTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn rank(&self) -> u32 {
        saki_tools::rank_of(TOOL_NAME)
    }
    fn read_only(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "Ask the language server. diagnostics: errors and warnings of path (all files it has seen without a path). definition, references, hover: of the symbol at path, line, column (1-based, as an editor shows them). symbols: the outline of path, or with query the workspace's symbols matching it. Results are path:line:col lines."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "operation": {"type": "string", "enum": ["diagnostics", "definition", "references", "hover", "symbols"]},
            "path": {"type": "string", "description": "File path, relative to the workspace root"},
            "line": {"type": "integer", "minimum": 1, "description": "1-based line"},
            "column": {"type": "integer", "minimum": 1, "description": "1-based column (characters)"},
            "query": {"type": "string", "description": "symbols: a name to search the workspace for"}
        }, "required": ["operation"]})
    }

    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: Args = saki_tools::common::parse_args(input)?;
        let text = match (args.operation, args.path.as_deref(), args.query.as_deref()) {
            (Operation::Diagnostics, None, _) => self.all_diagnostics(),
            (Operation::Symbols, None, Some(query)) => self.workspace_symbols(query).await?,
            (_, None, _) => {
                return Err(ToolError::InvalidInput(
                    "path is required (symbols without a path needs a query)".into(),
                ))
            }
            (op, Some(path), _) => self.on_file(op, path, &args).await?,
        };
        Ok(ToolOutput::new(text))
    }
}

impl LspTool {
    /// The workspace file `path` names (one the view holds counts, even if the disk
    /// has no such file yet).
    fn locate(&self, path: &str) -> Result<PathBuf, ToolError> {
        let roots = self.manager.roots();
        let path = match &self.view {
            Some(view) => view.workspace_path(path).to_string_lossy().into_owned(),
            None => path.to_owned(),
        };
        match roots.resolve(&path) {
            Ok(p) => Ok(p),
            Err(e) => {
                let lexical = roots
                    .resolve_for_write(&path)
                    .map_err(|_| failed(e.to_string()))?;
                if self
                    .view
                    .as_ref()
                    .is_some_and(|v| v.text(&lexical).is_some())
                {
                    Ok(lexical)
                } else {
                    Err(failed(e.to_string()))
                }
            }
        }
    }

    async fn on_file(&self, op: Operation, path: &str, args: &Args) -> Result<String, ToolError> {
        let file = self.locate(path)?;
        let server = match self.manager.server_for(&file).await {
            Ok(Some(server)) => server,
            Ok(None) => {
                let known: Vec<String> = self
                    .manager
                    .specs()
                    .iter()
                    .map(|s| format!("{} (.{})", s.name, s.extensions.join(", .")))
                    .collect();
                return Err(failed(format!(
                    "no language server serves {path}; servers here: {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join("; ")
                    }
                )));
            }
            Err(why) => return Err(failed(why)),
        };
        let mut session = Session::open(&self.manager, &server, self.view.as_ref()).await;
        let since = server.store.seq();
        let Some((text, synced)) = session.show_current(&file) else {
            return Err(failed(format!("cannot read {path}")));
        };
        let uri = file_uri(&file).ok_or_else(|| failed(format!("{path} has no file URI")))?;
        let position = || -> Result<Value, ToolError> {
            let (Some(line), Some(column)) = (args.line, args.column) else {
                return Err(ToolError::InvalidInput(
                    "line and column are required (1-based)".into(),
                ));
            };
            let line0 = line.saturating_sub(1);
            let character = utf16_col(line_of(&text, line0), column);
            Ok(json!({"line": line0, "character": character}))
        };
        let doc = json!({"uri": uri.as_str()});
        let mut lines = Lines::new(&self.manager, self.view.as_ref());
        let shown = self.manager.roots().display(&file);
        let out = match op {
            Operation::Diagnostics => {
                let bound = self.manager.bounds().diagnostics;
                match session
                    .diagnostics(&file, since, synced.changed, bound)
                    .await
                {
                    Some(diags) => list_diagnostics(&shown, diags),
                    None => format!(
                        "{} said nothing about {shown} within {} s; ask again",
                        server.spec.name,
                        bound.as_secs()
                    ),
                }
            }
            Operation::Definition | Operation::References => {
                let method = if op == Operation::Definition {
                    "textDocument/definition"
                } else {
                    "textDocument/references"
                };
                let mut params = json!({"textDocument": doc, "position": position()?});
                if op == Operation::References {
                    params["context"] = json!({"includeDeclaration": true});
                }
                let answer = query(&session, method, params).await?;
                locations(&answer, &mut lines)
            }
            Operation::Hover => {
                let params = json!({"textDocument": doc, "position": position()?});
                let answer = query(&session, "textDocument/hover", params).await?;
                hover_text(&answer).unwrap_or_else(|| "no hover information there".into())
            }
            Operation::Symbols => match args.query.as_deref() {
                Some(q) => {
                    let answer = query(&session, "workspace/symbol", json!({"query": q})).await?;
                    symbols_of_workspace(&answer, &mut lines)
                }
                None => {
                    let answer = query(
                        &session,
                        "textDocument/documentSymbol",
                        json!({"textDocument": doc}),
                    )
                    .await?;
                    symbols_of_document(&answer, &shown)
                }
            },
        };
        drop(session);
        Ok(out)
    }

    /// Every file's errors and warnings the running servers have published.
    fn all_diagnostics(&self) -> String {
        let mut all = Vec::new();
        for server in self.manager.running() {
            for (uri, published) in server.store.all() {
                let Some(path) = uri.parse().ok().and_then(|u| crate::uri::uri_path(&u)) else {
                    continue;
                };
                let text = self
                    .manager
                    .text_of(&path, self.view.as_ref())
                    .unwrap_or_default();
                let shown = self.manager.roots().display(&path);
                all.extend(
                    published
                        .diagnostics
                        .iter()
                        .map(|d| Diag::from_lsp(&shown, &text, d)),
                );
            }
        }
        if self.manager.running().is_empty() {
            return "no language server is running yet: give a path to start the one for it".into();
        }
        list_diagnostics("the files the servers have seen", all)
    }

    async fn workspace_symbols(&self, query_text: &str) -> Result<String, ToolError> {
        let running = self.manager.running();
        if running.is_empty() {
            return Err(failed(
                "no language server is running yet: give a path so the one for it starts",
            ));
        }
        let mut out = Vec::new();
        for server in running {
            let session = Session::open(&self.manager, &server, self.view.as_ref()).await;
            let answer = query(&session, "workspace/symbol", json!({"query": query_text})).await?;
            let mut lines = Lines::new(&self.manager, self.view.as_ref());
            out.push(symbols_of_workspace(&answer, &mut lines));
        }
        Ok(out.join("\n"))
    }
}

async fn query(session: &Session<'_>, method: &str, params: Value) -> Result<Value, ToolError> {
    session
        .server
        .request(method, params, QUERY_TIMEOUT)
        .await
        .map_err(|e| failed(e.to_string()))
}

fn list_diagnostics(what: &str, diags: Vec<Diag>) -> String {
    let diags = problems(diags);
    if diags.is_empty() {
        return format!("no errors or warnings in {what}");
    }
    let mut out: Vec<String> = diags.iter().take(MAX_DIAGNOSTICS).map(Diag::line).collect();
    if diags.len() > MAX_DIAGNOSTICS {
        out.push(format!("… {} more", diags.len() - MAX_DIAGNOSTICS));
    }
    out.join("\n")
}
