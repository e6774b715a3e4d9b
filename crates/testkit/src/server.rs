//! The mock provider HTTP server: 127.0.0.1, a free port, its own thread and runtime so
//! that both async tests and blocking CLI tests can use it.

use crate::render::{render, split_sse, Wire};
use crate::script::{Faults, Gate, Reply};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use std::collections::VecDeque;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    /// The raw body bytes (for byte-for-byte prefix comparisons).
    pub raw_body: Bytes,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: serde_json::Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    /// Where each request body is appended as one JSON line, if anywhere.
    log: Option<std::fs::File>,
    /// Answers to what local servers are asked about themselves (`GET /props`,
    /// `GET /v1/models`, `POST /api/show`), by path; those requests take no scripted reply.
    server_info: std::collections::BTreeMap<String, serde_json::Value>,
    /// How many such requests arrived.
    info_requests: usize,
}

/// Paths of the questions a client asks a local server about itself.
const INFO_PATHS: &[&str] = &["/props", "/v1/models", "/api/show", "/health"];

/// The recorded state, and a signal for each request that arrives (what
/// [`MockServer::wait_for_requests`] waits on).
#[derive(Default)]
struct Recorded {
    shared: Mutex<Shared>,
    arrived: Condvar,
}

type SharedState = Arc<Recorded>;

/// How long [`MockServer::wait_for_requests`] waits before it fails: long, because the
/// machine may be busy running other tests; a test that passes never waits this long.
const WAIT_LIMIT: Duration = Duration::from_secs(60);

fn lock(state: &Recorded) -> MutexGuard<'_, Shared> {
    // A panicking test thread must not hide the recorded requests from the others.
    state.shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Blocks until `n` requests were recorded; all of them, or (after `limit`) those that
/// did arrive.
fn wait_for(
    state: &Recorded,
    n: usize,
    limit: Duration,
) -> Result<Vec<RecordedRequest>, Vec<RecordedRequest>> {
    let deadline = Instant::now() + limit;
    let mut shared = lock(state);
    loop {
        if shared.requests.len() >= n {
            return Ok(shared.requests.clone());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(shared.requests.clone());
        }
        shared = state
            .arrived
            .wait_timeout(shared, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

fn too_few(n: usize, arrived: &[RecordedRequest]) -> ! {
    let paths: Vec<&str> = arrived.iter().map(|r| r.path.as_str()).collect();
    panic!(
        "testkit: waited {} s for {n} requests, {} arrived: {paths:?}",
        WAIT_LIMIT.as_secs(),
        arrived.len()
    )
}

pub struct MockServer {
    addr: SocketAddr,
    state: SharedState,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug)]
pub struct StartError(String);

impl std::error::Error for StartError {}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mock server failed to start: {}", self.0)
    }
}

impl MockServer {
    /// Starts the server; it stops when the value is dropped.
    pub fn start() -> Result<MockServer, StartError> {
        let state: SharedState = Arc::default();
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| StartError(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| StartError(e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| StartError(e.to_string()))?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app_state = state.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StartError(e.to_string()))?;
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let app = axum::Router::new().fallback(handle).with_state(app_state);
                // Each SSE event is its own write: with Nagle's algorithm a write waits
                // for the client's delayed ACK (40 ms on Linux) on a reused connection,
                // which real streaming servers avoid and timings must not include.
                use axum::serve::ListenerExt;
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
        });
        Ok(MockServer {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT` — the base URL for Anthropic and Gemini clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` — the base URL for OpenAI-style clients.
    pub fn openai_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Queues a reply; each request takes the oldest one.
    pub fn push(&self, reply: impl Into<Reply>) {
        lock(&self.state).replies.push_back(reply.into());
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// Waits until the server has received `n` requests (counting from its start; the
    /// questions [`set_server_info`] answers do not count) and returns them. Fails the test,
    /// naming what did arrive, when they do not come within a minute. For blocking tests;
    /// async ones use [`wait_for_requests`].
    ///
    /// [`set_server_info`]: MockServer::set_server_info
    /// [`wait_for_requests`]: MockServer::wait_for_requests
    pub fn wait_for_requests_blocking(&self, n: usize) -> Vec<RecordedRequest> {
        wait_for(&self.state, n, WAIT_LIMIT).unwrap_or_else(|arrived| too_few(n, &arrived))
    }

    /// [`wait_for_requests_blocking`] for async tests. It waits on the blocking pool with
    /// the real clock, so a test with tokio's clock paused does not time out at once.
    ///
    /// [`wait_for_requests_blocking`]: MockServer::wait_for_requests_blocking
    pub async fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let state = self.state.clone();
        let waited = tokio::task::spawn_blocking(move || wait_for(&state, n, WAIT_LIMIT)).await;
        match waited {
            Ok(Ok(requests)) => requests,
            Ok(Err(arrived)) => too_few(n, &arrived),
            Err(e) => panic!("testkit: waiting for {n} requests failed: {e}"),
        }
    }

    pub fn pending_replies(&self) -> usize {
        lock(&self.state).replies.len()
    }

    /// Answers `GET /props`, `GET /v1/models` (llama.cpp) or `POST /api/show` (Ollama)
    /// with `body`; without this they get a 404. Neither takes a scripted reply nor shows in [`requests`].
    ///
    /// [`requests`]: MockServer::requests
    pub fn set_server_info(&self, path: &str, body: serde_json::Value) {
        lock(&self.state).server_info.insert(path.to_owned(), body);
    }

    /// How many `/props`, `/v1/models`, `/api/show` and `/health` requests arrived.
    pub fn info_requests(&self) -> usize {
        lock(&self.state).info_requests
    }

    /// From now on, appends every request body to `file` as one line of compact JSON
    /// (a body that is not JSON is written as a JSON string), as it arrives.
    pub fn log_requests_to(&self, file: std::fs::File) {
        lock(&self.state).log = Some(file);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Streams stalled on purpose would keep graceful shutdown waiting; do not join.
        drop(self.thread.take());
    }
}

async fn handle(State(state): State<SharedState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let raw_body = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let body: serde_json::Value = serde_json::from_slice(&raw_body).unwrap_or_default();
    let path = parts.uri.path().to_owned();
    if INFO_PATHS.contains(&path.as_str()) {
        let mut shared = lock(&state);
        shared.info_requests += 1;
        return match shared.server_info.get(&path) {
            Some(info) => plain(200, &info.to_string()),
            None => plain(404, r#"{"error":{"message":"testkit: no server info"}}"#),
        };
    }
    let model = model_of(&path, &body);
    let reply = {
        let mut shared = lock(&state);
        if let Some(log) = &mut shared.log {
            let line = if body.is_null() && raw_body.trim_ascii() != b"null" {
                serde_json::Value::String(String::from_utf8_lossy(&raw_body).into_owned())
            } else {
                body.clone()
            };
            // Logging is for debugging scripts; a full disk must not fail the reply.
            let _ = writeln!(log, "{line}");
        }
        shared.requests.push(RecordedRequest {
            method: parts.method.to_string(),
            path: path.clone(),
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers,
            raw_body,
            body,
        });
        state.arrived.notify_all();
        shared.replies.pop_front()
    };
    let Some(reply) = reply else {
        return plain(
            500,
            r#"{"error":{"message":"testkit: no scripted reply left"}}"#,
        );
    };
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut response = plain(status, &body);
            for (name, value) in headers {
                if let (Ok(n), Ok(v)) = (
                    axum::http::HeaderName::try_from(name),
                    axum::http::HeaderValue::try_from(value),
                ) {
                    response.headers_mut().insert(n, v);
                }
            }
            response
        }
        Reply::RawSse { body, faults } => stream(split_sse(&body), faults, None),
        Reply::Endless(endless) => endless_body(endless),
        Reply::Turn(turn) => match Wire::from_path(&path) {
            Some(wire) => stream(render(wire, &turn, &model), turn.faults, turn.gate),
            None => plain(404, r#"{"error":{"message":"testkit: unknown endpoint"}}"#),
        },
    }
}

fn model_of(path: &str, body: &serde_json::Value) -> String {
    if let Some(m) = body.get("model").and_then(|m| m.as_str()) {
        return m.to_owned();
    }
    path.rsplit('/')
        .next()
        .and_then(|last| last.split(':').next())
        .unwrap_or("mock")
        .to_owned()
}

fn plain(status: u16, body: &str) -> Response {
    let mut response = Response::new(Body::from(body.to_owned()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    response
}

fn endless_body(e: crate::script::Endless) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let mut sent = e.prefix.len() as u64;
        if tx.send(Ok(Bytes::from(e.prefix))).await.is_err() {
            return;
        }
        // Larger writes for fast streams: the client, not the mock, should be the limit.
        let piece = if e.every.is_some() || e.repeat.len() >= 64 * 1024 {
            Bytes::from(e.repeat)
        } else {
            Bytes::from(e.repeat.repeat((64 * 1024 / e.repeat.len().max(1)).max(1)))
        };
        loop {
            if e.max_bytes.is_some_and(|max| sent >= max) {
                return;
            }
            if let Some(pause) = e.every {
                tokio::time::sleep(pause).await;
            }
            sent += piece.len() as u64;
            if tx.send(Ok(piece.clone())).await.is_err() {
                return;
            }
        }
    });
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() =
        StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = axum::http::HeaderValue::try_from(e.content_type) {
        response
            .headers_mut()
            .insert(axum::http::header::CONTENT_TYPE, v);
    }
    response
}

fn stream(mut events: Vec<String>, faults: Faults, gate: Option<Gate>) -> Response {
    if let Some(at) = faults.malformed_at {
        events.insert(
            at.min(events.len()),
            "data: {\"choices\": [{\"delta\": {\"conte\n\n".to_owned(),
        );
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        if let Some(gate) = gate {
            tokio::select! {
                () = gate.wait() => {}
                // The client gave up meanwhile.
                () = tx.closed() => return,
            }
        }
        for (i, event) in events.into_iter().enumerate() {
            if faults.drop_after == Some(i) {
                // The drop must come after the bytes sent so far, and hyper discards what
                // it has not written when the body fails. So wait until the body has taken
                // every event: hyper writes what it took to the socket before it yields,
                // and this runtime has one thread, so the write is done when this task
                // runs again.
                if let Ok(permits) = tx.reserve_many(tx.max_capacity()).await {
                    drop(permits);
                } else {
                    return;
                }
                let _ = tx
                    .send(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "testkit drop",
                    )))
                    .await;
                return;
            }
            if faults.stall_after == Some(i) {
                tx.closed().await;
                return;
            }
            if let Some(delay) = faults.chunk_delay {
                tokio::time::sleep(delay).await;
            }
            if tx.send(Ok(Bytes::from(event))).await.is_err() {
                return;
            }
        }
    });
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/event-stream"),
    );
    response
}
