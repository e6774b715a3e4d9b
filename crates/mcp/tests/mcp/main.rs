#![allow(clippy::unwrap_used, clippy::expect_used)]
//! saki-mcp against a small rmcp server, over stdio (a child process) and streamable
//! HTTP (in process): listing and calling, timeouts and cancellation, a crash mid-call,
//! servers that never start, tool filters and name cleaning, images in results. The stdio
//! server is this test binary run again (`server::stdio_server`).

mod images;
mod server;

use saki_llm_worker::{SharedTools, ToolError, ToolExecutionContext, ToolOutput};
use saki_mcp::{McpEvent, McpManager, ServerConfig, ServerState, StartOptions};
use serde_json::{json, Value};
use server::{TestServer, LOG_VAR, MODE_VAR};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

fn stdio(mode: &str) -> ServerConfig {
    let exe = std::env::current_exe().unwrap().display().to_string();
    let args = server::STDIO_ARGS.iter().map(|a| a.to_string()).collect();
    let mut config = ServerConfig::stdio(exe, args);
    config.env.insert(MODE_VAR.into(), mode.into());
    config.trusted = true;
    config
}

struct Session {
    manager: McpManager,
    events: UnboundedReceiver<McpEvent>,
    tools: SharedTools,
    _dir: tempfile::TempDir,
}

fn start(servers: Vec<(&str, ServerConfig)>) -> Session {
    let dir = tempfile::tempdir().unwrap();
    let tools = SharedTools::default();
    let servers: BTreeMap<String, ServerConfig> = servers
        .into_iter()
        .map(|(n, c)| (n.to_owned(), c))
        .collect();
    let (manager, events) = McpManager::start(
        servers,
        StartOptions {
            workspace: dir.path().to_path_buf(),
            tools: tools.clone(),
            decorate: None,
        },
    );
    Session {
        manager,
        events,
        tools,
        _dir: dir,
    }
}

async fn call(tools: &SharedTools, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let ctx = ToolExecutionContext {
        call_id: "c1".into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    };
    tools
        .snapshot()
        .call_tool(name, &args.to_string(), ctx)
        .await
}

fn state(session: &Session, server: &str) -> ServerState {
    let status = session.manager.status();
    status.into_iter().find(|s| s.name == server).unwrap().state
}

fn reason(session: &Session, server: &str) -> String {
    match state(session, server) {
        ServerState::Failed { reason } => reason,
        other => panic!("{server} is {other:?}"),
    }
}

/// Calls every kind of tool of a connected server named `s`.
async fn exercise(tools: &SharedTools) {
    let names = tools
        .snapshot()
        .names()
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>();
    assert_eq!(
        names,
        [
            "mcp__s__a_b",
            "mcp__s__a_b_88cb7aa4",
            "mcp__s__add",
            "mcp__s__crash",
            "mcp__s__echo",
            "mcp__s__fail",
            "mcp__s__image",
            "mcp__s__slow"
        ]
    );
    let echo = call(tools, "mcp__s__echo", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!(echo.content, "hello");
    let sum = call(tools, "mcp__s__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&sum.content).unwrap(),
        json!({"sum": 5.0})
    );
    let failed = call(tools, "mcp__s__fail", json!({})).await.unwrap_err();
    assert_eq!(failed, ToolError::Failed("it broke".into()));
    images::the_image_tool_returns_its_image(tools).await;
    let schema = tools.snapshot().get("mcp__s__echo").unwrap().input_schema();
    assert_eq!(schema["required"], json!(["text"]));
    let untyped = tools
        .snapshot()
        .get("mcp__s__a_b_88cb7aa4")
        .unwrap()
        .input_schema();
    assert_eq!(
        untyped["type"], "object",
        "a schema without a type gets one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_servers_list_and_call_their_tools() {
    let mut session = start(vec![("s", stdio("stdio"))]);
    session.manager.ready().await;
    assert_eq!(state(&session, "s"), ServerState::Connected);
    assert_eq!(
        session.events.recv().await.unwrap(),
        McpEvent::Connected {
            server: "s".into(),
            tools: 8
        }
    );
    exercise(&session.tools).await;
    let info = session.manager.tool_info("mcp__s__echo").unwrap();
    assert!(info.read_only_hint && info.trusted);
    assert_eq!(info.tool, "echo");
    assert!(
        !session
            .manager
            .tool_info("mcp__s__add")
            .unwrap()
            .read_only_hint
    );
    let status = &session.manager.status()[0];
    assert_eq!(status.transport, "stdio");
    assert_eq!(status.tools.len(), 8);
    session.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_servers_list_and_call_their_tools() {
    let stop = CancellationToken::new();
    let (url, seen) = server::start_http(TestServer::default(), stop.clone()).await;
    std::env::set_var("SAKI_MCP_TEST_TOKEN", "s3cret");
    let mut config = ServerConfig::http(url);
    config.bearer_token_env_var = Some("SAKI_MCP_TEST_TOKEN".into());
    config.headers.insert("X-Team".into(), "core".into());
    let session = start(vec![("s", config)]);
    session.manager.ready().await;
    assert_eq!(state(&session, "s"), ServerState::Connected);
    assert_eq!(session.manager.status()[0].transport, "http");
    exercise(&session.tools).await;
    let headers = seen.lock().unwrap().clone();
    assert!(!headers.is_empty());
    for h in &headers {
        assert_eq!(h.get("authorization").unwrap(), "Bearer s3cret");
        assert_eq!(h.get("x-team").unwrap(), "core");
    }
    session.manager.shutdown().await;
    stop.cancel();
}

/// Waits until `check` holds, looking every 10 ms: for what only a file or another
/// process shows. Fails the test after 30 s (long: the machine may be busy).
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened within 30 s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether the stdio server's log (`LOG_VAR`) has a line `line`.
fn logged(log: &std::path::Path, line: &str) -> bool {
    std::fs::read_to_string(log).is_ok_and(|l| l.lines().any(|l| l == line))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_tool_timeout_is_cancelled_on_the_server() {
    let stop = CancellationToken::new();
    let test_server = TestServer::default();
    let (url, _) = server::start_http(test_server.clone(), stop.clone()).await;
    let mut config = ServerConfig::http(url);
    config.tool_timeout_sec = Some(0.3);
    let session = start(vec![("s", config)]);
    session.manager.ready().await;
    let error = call(&session.tools, "mcp__s__slow", json!({}))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("did not answer within 0.3 s (tool_timeout_sec)"),
        "{error}"
    );
    let cancelled = test_server.cancelled.clone();
    eventually("the server saw the cancellation", || {
        !cancelled.lock().unwrap().is_empty()
    })
    .await;
    // The server is still there for the next call.
    let echo = call(
        &session.tools,
        "mcp__s__echo",
        json!({"text": "still here"}),
    )
    .await;
    assert_eq!(echo.unwrap().content, "still here");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_cancelled_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut config = stdio("stdio");
    config.env.insert(LOG_VAR.into(), log.display().to_string());
    let session = start(vec![("s", config)]);
    session.manager.ready().await;
    // The Worker drops a call's future when the person cancels the turn: here once the
    // server is working on it.
    let slow = call(&session.tools, "mcp__s__slow", json!({}));
    tokio::select! {
        answer = slow => panic!("the slow tool answered: {answer:?}"),
        () = eventually("the server started the call", || logged(&log, "started slow")) => {}
    }
    eventually("the server logged the cancellation", || {
        logged(&log, "cancelled slow")
    })
    .await;
    session.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_an_error_result_and_the_session_goes_on() {
    let session = start(vec![("s", stdio("stdio")), ("t", stdio("stdio"))]);
    session.manager.ready().await;
    let error = call(&session.tools, "mcp__s__crash", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the MCP server `s` is not running"),
        "{error}"
    );
    assert!(error.contains("exited with status 3"), "{error}");
    assert!(error.contains("crashing on purpose"), "{error}");
    let again = call(&session.tools, "mcp__s__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(again.to_string().contains("is not running"), "{again}");
    let other = call(&session.tools, "mcp__t__echo", json!({"text": "fine"}))
        .await
        .unwrap();
    assert_eq!(other.content, "fine", "the other server is untouched");
    session.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_starts_fails_once_after_its_startup_timeout() {
    let mut hanging = stdio("hang");
    hanging.startup_timeout_sec = Some(0.5);
    let mut session = start(vec![("slow", hanging), ("s", stdio("stdio"))]);
    // start() returned at once: nothing has connected yet.
    assert_eq!(state(&session, "slow"), ServerState::Starting);
    session.manager.ready().await;
    assert_eq!(
        reason(&session, "slow"),
        "it did not start within 0.5 s (startup_timeout_sec)"
    );
    assert_eq!(state(&session, "s"), ServerState::Connected);
    let mut events = Vec::new();
    while let Ok(event) = session.events.try_recv() {
        events.push(event);
    }
    let failures = events
        .iter()
        .filter(|e| matches!(e, McpEvent::Failed { .. }))
        .count();
    assert_eq!(failures, 1, "{events:?}");
    assert!(session
        .tools
        .snapshot()
        .names()
        .iter()
        .all(|n| n.starts_with("mcp__s__")));
    session.manager.shutdown().await;
}

/// A stdio server gets the core variables (`[shell_environment] inherit = "core"`'s, the
/// locale and temp dirs included) and its own `env`; saki's API keys never reach it, nor
/// a core variable whose value is a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_inherits_the_core_variables_and_no_api_key() {
    let vars = [
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
        ("GITHUB_TOKEN", "ghp-test"),
        ("LC_SECRET", "hidden"),
        // A core name holding a credential: left out by its value.
        ("LC_DEPLOY", "xoxb-123456789012-abcdefghijkl"),
        ("LANGUAGE", "de:en"),
        ("TEMP", "/tmp/saki-mcp-test"),
    ];
    let before: Vec<_> = vars
        .iter()
        .map(|(name, _)| (*name, std::env::var_os(name)))
        .collect();
    for (name, value) in vars {
        std::env::set_var(name, value);
    }
    let script = "echo \"key=${ANTHROPIC_API_KEY:-none} gh=${GITHUB_TOKEN:-none} \
                  lc=${LC_SECRET:-none} dep=${LC_DEPLOY:-none} language=${LANGUAGE:-none} temp=${TEMP:-none} \
                  set=${MY_API_KEY:-none}\" >&2; exit 1";
    let mut config = ServerConfig::stdio("/bin/sh", vec!["-c".into(), script.into()]);
    config.env.insert("MY_API_KEY".into(), "explicit".into());
    let session = start(vec![("env", config)]);
    session.manager.ready().await;
    let why = reason(&session, "env");
    assert!(
        why.contains(
            "key=none gh=none lc=none dep=none language=de:en temp=/tmp/saki-mcp-test set=explicit"
        ),
        "{why}"
    );
    for (name, value) in before {
        match value {
            Some(value) => std::env::set_var(name, value),
            None => std::env::remove_var(name),
        }
    }
    session.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_fail_at_start_say_why() {
    let mut no_token = ServerConfig::http("http://127.0.0.1:9/mcp");
    no_token.bearer_token_env_var = Some("SAKI_MCP_TEST_UNSET_VAR".into());
    let mut mixed = stdio("stdio");
    mixed.url = Some("http://127.0.0.1:9/mcp".into());
    let mut off = stdio("stdio");
    off.enabled = Some(false);
    let mut session = start(vec![
        (
            "missing",
            ServerConfig::stdio("/nonexistent/saki-mcp-server", Vec::new()),
        ),
        ("exits", stdio("exit")),
        ("no_token", no_token),
        ("mixed", mixed),
        ("off", off),
        ("refused", ServerConfig::http("http://127.0.0.1:9/mcp")),
    ]);
    session.manager.ready().await;
    assert!(reason(&session, "missing").starts_with("cannot start `/nonexistent/saki-mcp-server`"));
    let exits = reason(&session, "exits");
    assert!(
        exits.contains("exited with status 2") && exits.contains("missing API_TOKEN"),
        "{exits}"
    );
    assert!(reason(&session, "no_token").contains("SAKI_MCP_TEST_UNSET_VAR"));
    assert!(
        reason(&session, "mixed").starts_with("invalid config: `command` and `url` are both set")
    );
    assert!(
        reason(&session, "refused").contains("handshake"),
        "{}",
        reason(&session, "refused")
    );
    assert_eq!(state(&session, "off"), ServerState::Disabled);
    let mut failed = Vec::new();
    while let Ok(McpEvent::Failed { server, .. }) = session.events.try_recv() {
        failed.push(server);
    }
    failed.sort();
    assert_eq!(failed, ["exits", "missing", "mixed", "no_token", "refused"]);
    assert!(session.tools.snapshot().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enabled_and_disabled_tools_are_respected() {
    let mut config = stdio("stdio");
    config.enabled_tools = Some(vec!["echo".into(), "add".into(), "a.b".into()]);
    config.disabled_tools = vec!["add".into()];
    let session = start(vec![("s", config)]);
    session.manager.ready().await;
    assert_eq!(
        session.tools.snapshot().names(),
        ["mcp__s__a_b", "mcp__s__echo"]
    );
    assert!(call(&session.tools, "mcp__s__add", json!({"a": 1, "b": 1}))
        .await
        .is_err());
    session.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_clean_to_the_same_reach_their_own_tool() {
    let session = start(vec![("s", stdio("stdio"))]);
    session.manager.ready().await;
    let first = call(&session.tools, "mcp__s__a_b", json!({}))
        .await
        .unwrap();
    let second = call(&session.tools, "mcp__s__a_b_88cb7aa4", json!({}))
        .await
        .unwrap();
    assert_eq!(first.content, "this is a.b");
    assert_eq!(second.content, "this is a_b");
    assert_eq!(
        session
            .manager
            .tool_info("mcp__s__a_b_88cb7aa4")
            .unwrap()
            .tool,
        "a_b"
    );
    session.manager.shutdown().await;
}

/// The person cancels the turn (Esc, Ctrl+C) while the Worker waits for an MCP call: the
/// call gets a cancelled result and the server is told to stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_cancels_the_mcp_request() {
    use saki_llm_client::{CancellationToken as Cancel, Client, ClientConfig, WireApi};
    use saki_llm_worker::{Item, ToolResultStatus, TurnStatus, Worker, WorkerConfig};
    use saki_testkit::{MockServer, Turn};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut config = stdio("stdio");
    config.env.insert(LOG_VAR.into(), log.display().to_string());
    let session = start(vec![("s", config)]);
    let provider = MockServer::start().unwrap();
    provider.push(Turn::new().with_tool_call("c1", "mcp__s__slow", "{}"));
    let client = Client::new(ClientConfig::new(WireApi::Chat, provider.openai_url())).unwrap();
    let mut worker = Worker::new(client, std::sync::Arc::default(), WorkerConfig::new("m"));
    worker.set_shared_tools(session.tools.clone());
    session.manager.ready().await;
    let cancel = Cancel::new();
    // The person cancels once the server is working on the call.
    let cancelled = async {
        eventually("the server started the call", || {
            logged(&log, "started slow")
        })
        .await;
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(worker.run_turn("wait", cancel.clone()), cancelled);
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    let result = worker.history().iter().find_map(|item| match item {
        Item::ToolResult { status, .. } => Some(*status),
        _ => None,
    });
    assert_eq!(result, Some(ToolResultStatus::Cancelled));
    eventually("the server logged the cancellation", || {
        logged(&log, "cancelled slow")
    })
    .await;
    session.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_listing_tools_without_end_is_cut_with_a_warning() {
    let mut session = start(vec![("many", stdio("many"))]);
    session.manager.ready().await;
    assert_eq!(state(&session, "many"), ServerState::Connected);
    let snapshot = session.tools.snapshot();
    let names = snapshot.names();
    assert_eq!(names.len(), saki_mcp::listing::MAX_TOOLS, "{names:?}");
    assert!(
        !names.contains(&"mcp__many__big"),
        "its schema is too large"
    );
    let mut warnings = Vec::new();
    while let Ok(event) = session.events.try_recv() {
        if let McpEvent::ToolsLeftOut { server, message } = event {
            assert_eq!(server, "many");
            warnings.push(message);
        }
    }
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("more tools than saki reads")),
        "{warnings:?}"
    );
    assert!(warnings.iter().any(|w| w.contains("`big`")), "{warnings:?}");
    session.manager.shutdown().await;
}
