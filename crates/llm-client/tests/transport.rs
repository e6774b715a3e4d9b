#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The real client over real HTTP against the mock server: scripted turns in all four
//! protocols, retries, timeouts, cancellation and broken streams.

mod common;

use common::*;
use futures::StreamExt;
use saki_llm_client::*;
use saki_testkit::{Finish, MockServer, Reply, Turn};
use std::time::Duration;

fn client(server: &MockServer, wire: WireApi) -> Client {
    let base = match wire {
        WireApi::Chat | WireApi::Responses => server.openai_url(),
        _ => server.url(),
    };
    let mut config = ClientConfig::new(wire, base);
    config.api_key = Some("test-key".into());
    config.retry = RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    Client::new(config).unwrap()
}

fn request() -> Request {
    Request {
        model: "mock-model".into(),
        ..Default::default()
    }
}

async fn run(client: &Client) -> Result<Vec<Event>, ClientError> {
    let stream = client.stream(&request(), CancellationToken::new()).await?;
    Ok(stream.collect().await)
}

#[tokio::test]
async fn scripted_turns_decode_the_same_in_every_protocol() {
    let server = MockServer::start().unwrap();
    for wire in WireApi::ALL {
        let turn = Turn::new()
            .with_thinking("Let me look at the file first.")
            .with_text("I will read two files.")
            .with_tool_call("call_1", "read_file", r#"{"path":"a.txt"}"#)
            .with_tool_call("call_2", "grep", r#"{"pattern":"fn main","path":"src"}"#)
            .with_usage(120, 40);
        server.push(turn);
        let s = fold(&run(&client(&server, wire)).await.unwrap());
        assert_eq!(s.thinking, "Let me look at the file first.", "{wire}");
        assert_eq!(s.text, "I will read two files.", "{wire}");
        let names: Vec<_> = s.tool_calls.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(names, ["read_file", "grep"], "{wire}");
        let args: serde_json::Value = serde_json::from_str(&s.tool_calls[1].2).unwrap();
        assert_eq!(
            args,
            serde_json::json!({"pattern": "fn main", "path": "src"}),
            "{wire}"
        );
        assert_ne!(s.tool_calls[0].0, s.tool_calls[1].0, "{wire}: ids unique");
        if wire != WireApi::Gemini {
            assert_eq!(s.tool_calls[0].0, "call_1", "{wire}");
        }
        assert_eq!(s.status, Some(ResponseStatus::Completed), "{wire}");
        assert_eq!(s.stop_reason, Some(StopReason::ToolUse), "{wire}");
        assert_eq!(s.usage.input_tokens, Some(120), "{wire}");
        assert_eq!(s.usage.output_tokens, Some(40), "{wire}");
    }
}

#[tokio::test]
async fn max_tokens_and_missing_finish_are_reported() {
    let server = MockServer::start().unwrap();
    for wire in WireApi::ALL {
        server.push(Turn::text("cut short").with_finish(Finish::MaxTokens));
        let s = fold(&run(&client(&server, wire)).await.unwrap());
        assert_eq!(
            (s.status, s.stop_reason),
            (Some(ResponseStatus::Completed), Some(StopReason::MaxTokens)),
            "{wire}"
        );

        server.push(Turn::text("no finish at all").with_finish(Finish::None));
        let s = fold(&run(&client(&server, wire)).await.unwrap());
        assert_eq!(s.text, "no finish at all", "{wire}: text survives");
        assert_eq!(s.status, Some(ResponseStatus::Incomplete), "{wire}");
    }
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = MockServer::start().unwrap();
    server.push(Reply::status(500, r#"{"error":{"message":"boom"}}"#));
    server.push(Reply::rate_limited(0));
    server.push(Turn::text("third time lucky"));
    let s = fold(&run(&client(&server, WireApi::Chat)).await.unwrap());
    assert_eq!(s.text, "third time lucky");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_exhausted_with_a_typed_error() {
    let server = MockServer::start().unwrap();
    for _ in 0..3 {
        server.push(Reply::status(503, r#"{"error":{"message":"overloaded"}}"#));
    }
    server.push(Turn::text("never reached"));
    let err = run(&client(&server, WireApi::Anthropic)).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Server { status: 503, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("overloaded"));
    assert_eq!(server.requests().len(), 3, "one attempt plus two retries");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().unwrap();
    server.push(Reply::status(
        401,
        r#"{"error":{"message":"invalid x-api-key"}}"#,
    ));
    let err = run(&client(&server, WireApi::Anthropic)).await.unwrap_err();
    assert_eq!(err.kind(), "auth");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retry_after_beyond_the_limit_is_not_waited_for() {
    let server = MockServer::start().unwrap();
    server.push(Reply::rate_limited(3600));
    let err = run(&client(&server, WireApi::Responses)).await.unwrap_err();
    assert!(
        matches!(err, ClientError::RateLimited { retry_after: Some(d), .. } if d.as_secs() == 3600)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_dropped_connection_fails_the_stream_and_aborts_the_block() {
    let server = MockServer::start().unwrap();
    for wire in WireApi::ALL {
        server.push(Turn::text("one two three four five six seven").drop_after(4));
        let events = run(&client(&server, wire)).await.unwrap();
        let s = fold(&events);
        assert_eq!(s.status, Some(ResponseStatus::Failed), "{wire}");
        assert!(s.error.is_some(), "{wire}");
        assert!(
            events.iter().any(|e| matches!(e, Event::BlockAbort(_))),
            "{wire}: {events:?}"
        );
    }
}

#[tokio::test]
async fn malformed_chunks_are_skipped() {
    let server = MockServer::start().unwrap();
    for wire in WireApi::ALL {
        server.push(Turn::text("still whole").malformed_at(2));
        let s = fold(&run(&client(&server, wire)).await.unwrap());
        assert_eq!(s.text, "still whole", "{wire}");
        assert_eq!(s.status, Some(ResponseStatus::Completed), "{wire}");
    }
}

#[tokio::test]
async fn slow_chunks_still_arrive_in_order() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("slow but steady wins").chunk_delay(Duration::from_millis(5)));
    let s = fold(&run(&client(&server, WireApi::Gemini)).await.unwrap());
    assert_eq!(s.text, "slow but steady wins");
}

#[tokio::test]
async fn cancel_mid_stream_aborts_the_block_and_ends_the_stream() {
    let server = MockServer::start().unwrap();
    for wire in WireApi::ALL {
        server.push(Turn::text("a b c d e f g h").stall_after(4));
        let cancel = CancellationToken::new();
        let client = client(&server, wire);
        let mut stream = client.stream(&request(), cancel.clone()).await.unwrap();
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            let is_delta = matches!(e, Event::BlockDelta(_));
            events.push(e);
            if is_delta {
                cancel.cancel();
            }
        }
        let s = fold(&events);
        assert_eq!(s.status, Some(ResponseStatus::Cancelled), "{wire}");
        assert!(
            matches!(events[events.len() - 2], Event::BlockAbort(_)),
            "{wire}: {events:?}"
        );
    }
}

#[tokio::test]
async fn cancel_before_the_first_event_returns_cancelled() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("never").stall_after(0));
    let cancel = CancellationToken::new();
    let c = client(&server, WireApi::Chat);
    let handle = {
        let cancel = cancel.clone();
        tokio::spawn(async move { c.stream(&request(), cancel).await.map(|_| ()) })
    };
    // The request is out; its first event never comes.
    server.wait_for_requests(1).await;
    cancel.cancel();
    assert!(matches!(handle.await.unwrap(), Err(ClientError::Cancelled)));
}

#[tokio::test]
async fn idle_and_first_event_timeouts() {
    let server = MockServer::start().unwrap();
    let mut c = client(&server, WireApi::Anthropic);
    let mut config = c.config().clone();
    config.timeouts.idle = Duration::from_millis(150);
    config.timeouts.first_event = Duration::from_millis(150);
    config.retry.max_retries = 1;
    c = Client::new(config).unwrap();

    server.push(Turn::text("x y z").stall_after(3));
    let s = fold(&run(&c).await.unwrap());
    assert_eq!(s.status, Some(ResponseStatus::Failed));

    server.push(Turn::text("x").stall_after(0));
    server.push(Turn::text("x").stall_after(0));
    let err = run(&c).await.unwrap_err();
    assert_eq!(err.kind(), "timeout");
    assert!(err.to_string().contains("not sent again"), "{err}");
    assert_eq!(
        server.requests().len(),
        2,
        "a server that took the request and never answered is not asked again"
    );
}

#[tokio::test]
async fn unreachable_server_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = ClientConfig::new(WireApi::Chat, format!("http://127.0.0.1:{port}/v1"));
    config.retry.max_retries = 0;
    let err = run(&Client::new(config).unwrap()).await.unwrap_err();
    assert_eq!(err.kind(), "network");
    assert!(err.to_string().contains(&port.to_string()));
}

#[tokio::test]
async fn json_error_with_status_200_is_not_taken_for_a_stream() {
    let server = MockServer::start().unwrap();
    server.push(Reply::status(
        200,
        r#"{"error":"model 'nope' not found, try pulling it first"}"#,
    ));
    let err = run(&client(&server, WireApi::Chat)).await.unwrap_err();
    assert_eq!(err.kind(), "model_not_found", "{err}");
}

#[tokio::test]
async fn an_empty_stream_is_an_error_not_a_silent_success() {
    let server = MockServer::start().unwrap();
    server.push(Reply::raw_sse(""));
    let err = run(&client(&server, WireApi::Chat)).await.unwrap_err();
    assert_eq!(err.kind(), "protocol");
    assert!(
        err.to_string().contains("without sending any event"),
        "{err}"
    );
}
