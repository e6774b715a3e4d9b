#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki acp` driven by the ACP SDK's client side, as an editor drives it, against the
//! mock provider: initialize, sessions, prompts with their updates, approvals both ways,
//! modes, the model option, list and load.

mod common;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ClientSessionCapabilities, ContentBlock, FileSystemCapabilities,
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SetSessionModeRequest, StopReason,
    TextContent, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client, UntypedMessage};
use common::env_with;
use saki_testkit::{MockServer, Turn};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

type Seen = Arc<Mutex<Vec<Value>>>;

/// Runs `saki acp` in `env` against `url`, answers permission requests with `answer`,
/// and hands the connection and what the client has been sent to `body`.
async fn with_agent<F>(env: &common::Env, url: &str, answer: &'static str, body: F) -> Seen
where
    F: AsyncFnOnce(ConnectionTo<Agent>, Seen) + Send + 'static,
{
    with_agent_args(env, url, &["--no-suggestions"], answer, body).await
}

/// [`with_agent`] with `saki acp`'s flags beyond the provider's.
async fn with_agent_args<F>(
    env: &common::Env,
    url: &str,
    flags: &[&str],
    answer: &'static str,
    body: F,
) -> Seen
where
    F: AsyncFnOnce(ConnectionTo<Agent>, Seen) + Send + 'static,
{
    let mut cmd = tokio::process::Command::from(env.cmd());
    cmd.args(["acp", "--provider", "llamacpp", "--base-url", url])
        .args(flags)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    let seen: Seen = Arc::default();
    let (notes, asks, writes) = (seen.clone(), seen.clone(), seen.clone());
    let given = seen.clone();
    Client
        .v1()
        .on_receive_notification(
            // Untyped: updates newer than the SDK's schema (prompt suggestions) arrive too.
            async move |n: UntypedMessage, _cx| {
                if n.method == "session/update" {
                    notes.lock().unwrap().push(n.params);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder, _cx| {
                let mut asked = serde_json::to_value(&r).unwrap();
                asked["asked"] = Value::Bool(true);
                asks.lock().unwrap().push(asked);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(answer)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: ReadTextFileRequest, responder, _cx| {
                responder.respond(ReadTextFileResponse::new(format!(
                    "unsaved buffer of {}",
                    r.path.display()
                )))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: WriteTextFileRequest, responder, _cx| {
                let mut wrote = serde_json::to_value(&r).unwrap();
                wrote["wrote"] = Value::Bool(true);
                writes.lock().unwrap().push(wrote);
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            body(cx, given).await;
            Ok(())
        })
        .await
        .unwrap();
    drop(child);
    seen
}

/// Initializes the connection (no client capabilities) and opens a session in `ws`.
async fn open_session(
    cx: &ConnectionTo<Agent>,
    ws: std::path::PathBuf,
) -> agent_client_protocol::v1::schema::NewSessionResponse {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    cx.send_request(NewSessionRequest::new(ws))
        .block_task()
        .await
        .unwrap()
}

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(t))]
}

fn updates_of_kind(seen: &Seen, kind: &str) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|v| v["update"]["sessionUpdate"] == kind)
        .map(|v| v["update"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_streams_its_answer_and_asks_before_an_edit() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Hello from saki"));
    server.push(Turn::new().with_tool_call(
        "call_1",
        "write_file",
        r#"{"path":"notes.txt","content":"written\n"}"#,
    ));
    server.push(Turn::text("Wrote it."));
    let env = env_with(&[("a.txt", "x\n")]);
    let ws = env.ws.clone();
    let url = server.openai_url();
    let seen = with_agent(&env, &url, "allow_once", async move |cx, seen| {
        let init = cx
            .send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        let init = serde_json::to_value(&init).unwrap();
        assert_eq!(init["agentInfo"]["name"], "saki");
        assert_eq!(init["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            init["agentCapabilities"]["promptCapabilities"]["image"],
            true
        );
        let session = cx
            .send_request(NewSessionRequest::new(ws.clone()))
            .block_task()
            .await
            .unwrap();
        let id = session.session_id.clone();
        let new = serde_json::to_value(&session).unwrap();
        assert_eq!(new["modes"]["currentModeId"], "default");
        assert_eq!(new["configOptions"][0]["id"], "model");
        let done = cx
            .send_request(PromptRequest::new(id.clone(), text("say hello")))
            .block_task()
            .await
            .unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        let done = cx
            .send_request(PromptRequest::new(id.clone(), text("write notes.txt")))
            .block_task()
            .await
            .unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        cx.send_request(SetSessionModeRequest::new(id.clone(), "yolo"))
            .block_task()
            .await
            .unwrap();
        let mode = until_update(&seen, "current_mode_update").await;
        assert_eq!(mode["currentModeId"], "yolo");
        let listed = cx
            .send_request(ListSessionsRequest::new())
            .block_task()
            .await
            .unwrap();
        assert!(listed.sessions.iter().any(|s| s.session_id == id));
    })
    .await;
    let chunks: String = updates_of_kind(&seen, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(chunks.contains("Hello from saki") && chunks.contains("Wrote it."));
    let call = &updates_of_kind(&seen, "tool_call")[0];
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], "Write notes.txt");
    assert_eq!(call["content"][0]["type"], "diff");
    let asked: Vec<Value> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|v| v["asked"] == true)
        .cloned()
        .collect();
    assert_eq!(asked.len(), 1, "one permission request");
    let options: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_session", "reject"]);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes.txt")).unwrap(),
        "written\n"
    );
    let statuses: Vec<Value> = updates_of_kind(&seen, "tool_call_update")
        .iter()
        .map(|u| u["status"].clone())
        .collect();
    assert!(statuses.contains(&Value::from("completed")), "{statuses:?}");
    assert!(!updates_of_kind(&seen, "available_commands_update").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_edit_is_not_made_and_a_loaded_session_tells_its_history() {
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "call_1",
        "write_file",
        r#"{"path":"notes.txt","content":"no\n"}"#,
    ));
    server.push(Turn::text("Understood, left alone."));
    let env = env_with(&[]);
    let ws = env.ws.clone();
    let url = server.openai_url();
    let id = Arc::new(Mutex::new(String::new()));
    let kept = id.clone();
    let seen = with_agent(&env, &url, "reject", async move |cx, _| {
        let session = open_session(&cx, ws).await;
        *kept.lock().unwrap() = session.session_id.0.to_string();
        cx.send_request(PromptRequest::new(
            session.session_id,
            text("write notes.txt"),
        ))
        .block_task()
        .await
        .unwrap();
    })
    .await;
    assert!(!env.ws.join("notes.txt").exists());
    let failed = updates_of_kind(&seen, "tool_call_update");
    assert!(failed.iter().any(|u| u["status"] == "failed"), "{failed:?}");
    // A new connection loads the session: its conversation comes back as updates.
    let id = id.lock().unwrap().clone();
    let ws = env.ws.clone();
    let replayed = with_agent(&env, &url, "reject", async move |cx, seen| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        cx.send_request(LoadSessionRequest::new(id, ws))
            .block_task()
            .await
            .unwrap();
        // The history arrives before the answer to the load.
        assert!(!seen.lock().unwrap().is_empty());
    })
    .await;
    let users: Vec<Value> = updates_of_kind(&replayed, "user_message_chunk");
    assert_eq!(users[0]["content"]["text"], "write notes.txt");
    assert!(!updates_of_kind(&replayed, "tool_call").is_empty());
    let said: String = updates_of_kind(&replayed, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(said.contains("left alone"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_buffers_are_what_the_file_tools_read_and_write() {
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call("c1", "read_file", r#"{"path":"a.py"}"#));
    server.push(Turn::new().with_tool_call(
        "c2",
        "write_file",
        r#"{"path":"a.py","content":"new text\n"}"#,
    ));
    server.push(Turn::text("Done."));
    let env = env_with(&[("a.py", "on disk\n")]);
    let ws = env.ws.clone();
    let url = server.openai_url();
    let seen = with_agent(&env, &url, "allow_once", async move |cx, _| {
        let caps = ClientCapabilities::new().fs(FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true));
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
            .block_task()
            .await
            .unwrap();
        let session = cx
            .send_request(NewSessionRequest::new(ws))
            .block_task()
            .await
            .unwrap();
        cx.send_request(PromptRequest::new(
            session.session_id,
            text("look, then rewrite a.py"),
        ))
        .block_task()
        .await
        .unwrap();
    })
    .await;
    // The model was shown the buffer, not the disk.
    let second = &server.requests()[1].body;
    assert!(second.to_string().contains("unsaved buffer of"), "{second}");
    assert!(!second.to_string().contains("on disk"));
    // The write went to the editor; the disk is the editor's to save.
    let wrote: Vec<Value> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|v| v["wrote"] == true)
        .cloned()
        .collect();
    assert_eq!(wrote.len(), 1);
    assert_eq!(wrote[0]["content"], "new text\n");
    assert!(wrote[0]["path"].as_str().unwrap().ends_with("a.py"));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.py")).unwrap(),
        "on disk\n"
    );
}

/// Waits (with a deadline) until the client has been sent an update of `kind`.
async fn until_update(seen: &Seen, kind: &str) -> Value {
    let deadline = std::time::Instant::now() + common::WAIT_LIMIT;
    loop {
        if let Some(found) = updates_of_kind(seen, kind).into_iter().next() {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {kind} update came"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_shows_suggestions_gets_one_and_sending_it_accepts_its_speculation() {
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call("c1", "ls", r#"{"path":"."}"#));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(Turn::new().with_tool_call(
        "s1",
        "write_file",
        r#"{"path":"notes.txt","content":"hi\n"}"#,
    ));
    server.push(Turn::text("Added notes.txt."));
    server.push(Turn::text("show notes.txt"));
    let env = env_with(&[]);
    let ws = env.ws.clone();
    let url = server.openai_url();
    let flags = [
        "--approval",
        "auto-edit",
        "-m",
        "main",
        "--fast-model",
        "fast",
    ];
    let seen = with_agent_args(&env, &url, &flags, "reject", async move |cx, seen| {
        let mut meta = serde_json::Map::new();
        meta.insert("promptSuggestions".into(), serde_json::json!({}));
        let caps = ClientCapabilities::new().session(ClientSessionCapabilities::new().meta(meta));
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
            .block_task()
            .await
            .unwrap();
        let session = cx
            .send_request(NewSessionRequest::new(ws))
            .block_task()
            .await
            .unwrap();
        let id = session.session_id;
        cx.send_request(PromptRequest::new(id.clone(), text("hello")))
            .block_task()
            .await
            .unwrap();
        let offered = until_update(&seen, "prompt_suggestions_update").await;
        let suggestion = offered["suggestions"][0]["prompt"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(suggestion, "add notes.txt");
        let done = cx
            .send_request(PromptRequest::new(id, text(&suggestion)))
            .block_task()
            .await
            .unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
    })
    .await;
    // The speculation's work is the turn: its call and answer streamed, its file applied,
    // and no new turn asked the model.
    assert_eq!(
        std::fs::read_to_string(env.ws.join("notes.txt")).unwrap(),
        "hi\n"
    );
    let said: String = updates_of_kind(&seen, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(said.contains("Added notes.txt."), "{said}");
    assert!(updates_of_kind(&seen, "tool_call")
        .iter()
        .any(|c| c["title"] == "Write notes.txt"));
    // Only the first prompt went to the main model (its `ls` call and its answer);
    // everything after it was read ahead on the fast one.
    let main_requests = server
        .requests()
        .iter()
        .filter(|r| r.body["model"] == "main")
        .count();
    assert_eq!(main_requests, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_a_session_fails_naming_the_variable() {
    let env = env_with(&[]);
    let ws = env.ws.clone();
    let mut cmd = tokio::process::Command::from(env.cmd());
    cmd.args(["acp", "--provider", "openai"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let transport = ByteStreams::new(
        child.stdin.take().unwrap().compat_write(),
        child.stdout.take().unwrap().compat(),
    );
    Client
        .v1()
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert!(init.auth_methods.is_empty());
            let refused = cx
                .send_request(NewSessionRequest::new(ws))
                .block_task()
                .await
                .unwrap_err();
            let refused = serde_json::to_value(&refused).unwrap();
            assert_eq!(refused["code"], -32000, "{refused}");
            assert!(
                refused["data"].as_str().unwrap().contains("OPENAI_API_KEY"),
                "{refused}"
            );
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_buffer_joins_the_prompt_and_one_outside_the_workspace_does_not() {
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, EmbeddedResourceResource, TextResourceContents,
    };
    let server = MockServer::start().unwrap();
    server.push(Turn::text("Seen."));
    let env = env_with(&[("a.py", "on disk\n")]);
    let ws = env.ws.clone();
    let url = server.openai_url();
    let inside = format!("file://{}", env.ws.join("a.py").display());
    let outside = "file:///etc/hostname".to_owned();
    with_agent(&env, &url, "reject", async move |cx, _| {
        let session = open_session(&cx, ws).await;
        let embedded = |text: &str, uri: &str| {
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    text, uri,
                )),
            ))
        };
        let prompt = vec![
            ContentBlock::Text(TextContent::new("review this")),
            embedded("unsaved text", &inside),
            embedded("not yours", &outside),
        ];
        cx.send_request(PromptRequest::new(session.session_id, prompt))
            .block_task()
            .await
            .unwrap();
    })
    .await;
    let body = server.requests()[0].body.to_string();
    assert!(
        body.contains("[File: a.py]") && body.contains("unsaved text"),
        "{body}"
    );
    assert!(!body.contains("not yours"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_ends_the_prompt_cancelled() {
    use agent_client_protocol::v1::schema::CancelNotification;
    let server = MockServer::start().unwrap();
    let gate = saki_testkit::Gate::new();
    server.push(Turn::text("never seen").hold(&gate));
    let env = env_with(&[]);
    let ws = env.ws.clone();
    let url = server.openai_url();
    let waiting = Arc::new(server);
    let requests = waiting.clone();
    with_agent(&env, &url, "reject", async move |cx, _| {
        let session = open_session(&cx, ws).await;
        let id = session.session_id;
        let answered = cx.send_request(PromptRequest::new(id.clone(), text("hi")));
        requests.wait_for_requests(1).await;
        cx.send_notification(CancelNotification::new(id)).unwrap();
        let done = answered.block_task().await.unwrap();
        assert_eq!(done.stop_reason, StopReason::Cancelled);
    })
    .await;
    gate.open();
}
