//! A small MCP server written with rmcp: over stdio (this test binary run again with
//! `SAKI_MCP_TEST_SERVER` set, see [`stdio_server`]) or over streamable HTTP (in
//! process).
//!
//! Tools: `echo {text}` (read-only), `add {a, b}` (structured content), `slow` (answers
//! only when cancelled, and records that it started and was cancelled), `crash` (the
//! process exits mid-call), `fail` (an error result), `image` (a valid PNG, invalid
//! base64, an SVG and audio), and `a.b` / `a_b` (names that clean to the same).

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The variable that turns the test binary into a stdio server: `stdio` serves,
/// `many` serves a tool list without end, `hang` never answers, `exit` fails at start.
pub const MODE_VAR: &str = "SAKI_MCP_TEST_SERVER";
/// A file the stdio server appends `started slow` and `cancelled slow` lines to.
pub const LOG_VAR: &str = "SAKI_MCP_TEST_LOG";
/// The arguments that make this test binary run [`stdio_server`] alone. libtest still
/// writes a line "running 1 test" to stdout first, which the client skips as it skips
/// any line that is not JSON; `--quiet` keeps it from starting a line of its own with
/// the test's name, and `--nocapture` lets the server's stderr through.
pub const STDIO_ARGS: &[&str] = &[
    "server::stdio_server",
    "--exact",
    "--ignored",
    "--quiet",
    "--nocapture",
    "--test-threads=1",
];

/// The stdio server the other tests start: this binary runs it when `MODE_VAR` is set.
/// Not a test of its own (ignored, and without `MODE_VAR` it does nothing).
#[test]
#[ignore = "the stdio MCP server that the other tests start as a child process"]
fn stdio_server() {
    if let Ok(mode) = std::env::var(MODE_VAR) {
        // Exits here: libtest must not print a verdict into the JSON-RPC stream.
        std::process::exit(run_stdio(&mode));
    }
}

#[derive(Clone, Default)]
pub struct TestServer {
    /// What the server saw cancelled (the in-process server).
    pub cancelled: Arc<Mutex<Vec<String>>>,
    /// Lists pages of 50 tools without end, the first with a tool whose schema is 40 KB
    /// (mode `many`).
    pub many: bool,
}

/// Page `page` of a tool list that never ends.
fn endless_page(page: usize) -> ListToolsResult {
    let none = schema(json!({"type": "object", "properties": {}}));
    let mut tools: Vec<Tool> = (0..50)
        .map(|i| Tool::new(format!("t{:05}", page * 50 + i), "A tool", none.clone()))
        .collect();
    if page == 0 {
        let huge = json!({"type": "object", "description": "s".repeat(40_000)});
        tools.push(Tool::new("big", "A large schema", schema(huge)));
    }
    let mut result = ListToolsResult::with_all_items(tools);
    result.next_cursor = Some((page + 1).to_string());
    result
}

/// Appends `line` to the stdio server's log, when the test gave it one.
fn log(line: &str) {
    if let Ok(path) = std::env::var(LOG_VAR) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

fn tools() -> Vec<Tool> {
    let text = schema(
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    );
    let numbers = schema(
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
    );
    let none = schema(json!({"type": "object", "properties": {}}));
    vec![
        Tool::new("echo", "Echoes the text back", text)
            .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new("add", "Adds two numbers", numbers),
        Tool::new("slow", "Answers only when cancelled", none.clone()),
        Tool::new("crash", "Exits the server mid-call", none.clone()),
        Tool::new("fail", "Always fails", none.clone()),
        Tool::new("image", "Returns an image", none.clone()),
        Tool::new("a.b", "Named a.b", none.clone()),
        // No type: the client adds `"type": "object"`.
        Tool::new("a_b", "Named a_b", Arc::new(serde_json::Map::new())),
    ]
}

fn text(t: impl Into<String>) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(vec![ContentBlock::text(t)]).into())
}

impl TestServer {
    fn record_cancel(&self, what: &str) {
        if let Ok(mut list) = self.cancelled.lock() {
            list.push(what.to_owned());
        }
        log(&format!("cancelled {what}"));
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if self.many {
            let page = request
                .and_then(|r| r.cursor)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            return Ok(endless_page(page));
        }
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        match request.name.as_ref() {
            "echo" => text(args["text"].as_str().unwrap_or_default()),
            "add" => {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                Ok(CallToolResult::structured(json!({ "sum": sum })).into())
            }
            "slow" => {
                log("started slow");
                context.ct.cancelled().await;
                self.record_cancel("slow");
                Err(McpError::internal_error("cancelled", None))
            }
            "crash" => {
                eprintln!("test server: crashing on purpose");
                std::process::exit(3)
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("it broke")]).into()),
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::text("the chart:"),
                ContentBlock::image(saki_testkit::TINY_PNG_BASE64, "image/png"),
                ContentBlock::image("!!not base64!!", "image/png"),
                ContentBlock::image(saki_testkit::TINY_PNG_BASE64, "image/svg+xml"),
                ContentBlock::audio("AAAA", "audio/wav"),
            ])
            .into()),
            other => text(format!("this is {other}")),
        }
    }
}

/// Runs the stdio server as `SAKI_MCP_TEST_SERVER` asks; the process's exit code.
fn run_stdio(mode: &str) -> i32 {
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        return 1;
    };
    runtime.block_on(async {
        match mode {
            // Never answers the handshake; the client kills it.
            "hang" => std::future::pending().await,
            "exit" => {
                eprintln!("test server: missing API_TOKEN, giving up");
                2
            }
            _ => match (TestServer {
                many: mode == "many",
                ..TestServer::default()
            })
            .serve(rmcp::transport::stdio())
            .await
            {
                Ok(service) => {
                    let _ = service.waiting().await;
                    0
                }
                Err(e) => {
                    eprintln!("test server: {e}");
                    1
                }
            },
        }
    })
}

/// Serves over streamable HTTP on a free local port until the token is cancelled;
/// returns the endpoint URL and the headers of every request it received.
pub async fn start_http(
    server: TestServer,
    stop: tokio_util::sync::CancellationToken,
) -> (String, Arc<Mutex<Vec<axum::http::HeaderMap>>>) {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let router =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    if let Ok(mut seen) = record.lock() {
                        seen.push(request.headers().clone());
                    }
                    next.run(request)
                },
            ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    (url, seen)
}
