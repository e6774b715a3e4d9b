#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The library's server seen from a plain TCP client: waiting for requests without
//! sleeping, and a dropped connection that still delivers what came before the drop.

use saki_testkit::{MockServer, Turn};
use std::io::{Read, Write};

/// One HTTP/1.1 POST to the Chat endpoint; the raw bytes that arrived before the server
/// closed the connection (a broken connection ends the read, it is not an error here).
fn post(server_url: &str) -> String {
    let addr = server_url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let body = r#"{"model": "m", "messages": []}"#;
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response).into_owned()
}

#[test]
fn waiting_for_requests_returns_once_they_arrived() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("hello"));
    server.push(Turn::text("again"));
    std::thread::scope(|s| {
        s.spawn(|| {
            post(&server.url());
            post(&server.url());
        });
        let requests = server.wait_for_requests_blocking(2);
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].path, "/v1/chat/completions");
    });
}

#[tokio::test(start_paused = true)]
async fn an_async_wait_uses_the_real_clock_even_when_tokio_s_is_paused() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("hello"));
    let url = server.url();
    // With nothing to run here, a paused clock jumps to the next timer at once: a wait
    // timed on it would fail before the request could arrive.
    let client = std::thread::spawn(move || post(&url));
    assert_eq!(server.wait_for_requests(1).await.len(), 1);
    client.join().unwrap();
}

#[test]
fn a_dropped_connection_delivers_every_event_before_the_drop() {
    let server = MockServer::start().unwrap();
    // Several rounds: the drop must never overtake the events sent before it.
    for _ in 0..20 {
        server.push(Turn::text("one two three four five").drop_after(3));
        let response = post(&server.url());
        let events = response.matches("data: ").count();
        assert_eq!(events, 3, "{response}");
    }
}
