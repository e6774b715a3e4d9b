//! HTTP transport: sends the encoded request, retries failures that happen before the
//! first event, then pumps SSE through the protocol decoder into an [`EventStream`].

use crate::decode::{end_stream, feed_chunk, stray_json_error, too_large};
use crate::error::ClientError;
use crate::event::Event;
use crate::protocol::{Decoder, WireApi};
use crate::request::Request;
use crate::sse::SseParser;
use futures::{Stream, StreamExt};
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP + TLS connection setup.
    pub connect: Duration,
    /// From sending the request to the first SSE event (local models may read a long
    /// prompt before they answer).
    pub first_event: Duration,
    /// Longest silence between two events once streaming.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            first_event: Duration::from_secs(300),
            idle: Duration::from_secs(300),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Further attempts after the first one.
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A `Retry-After` longer than this is not waited for; the error is returned.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Delay before retry number `attempt` (0-based), or `None` to give up.
    /// Exponential backoff with jitter in [50%, 100%]; a server's `Retry-After` wins.
    pub fn delay(&self, attempt: u32, error: &ClientError) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_retryable() {
            return None;
        }
        if let ClientError::RateLimited {
            retry_after: Some(after),
            ..
        } = error
        {
            return (*after <= self.max_retry_after).then_some(*after);
        }
        let exp = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(self.max_backoff);
        Some(exp.mul_f64(0.5 + fastrand::f64() * 0.5))
    }
}

/// Events decoded ahead of the consumer.
const EVENT_QUEUE: usize = 1024;

/// Where and how to reach one provider.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub wire_api: WireApi,
    pub base_url: String,
    pub api_key: Option<String>,
    pub extra_headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// How tools reach the model: the protocol's tool list, or the system prompt
    /// ([`crate::prompted`]).
    pub tool_calling: crate::ToolCalling,
}

impl ClientConfig {
    pub fn new(wire_api: WireApi, base_url: impl Into<String>) -> Self {
        Self {
            wire_api,
            base_url: base_url.into(),
            api_key: None,
            extra_headers: Vec::new(),
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            tool_calling: crate::ToolCalling::Native,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    config: ClientConfig,
    /// OpenAI's `prompt_cache_key`, shared by every clone (the main loop, forks,
    /// compaction): requests with one key are routed to the same prompt cache.
    cache_key: Arc<RwLock<Option<String>>>,
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send>>;

/// A response whose first SSE event has arrived and been decoded into `pending`.
struct Opened {
    decoder: Box<dyn Decoder>,
    parser: SseParser,
    pending: Vec<Event>,
    rest: ByteStream,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        check_base_url(&config.base_url)?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .user_agent(concat!("saki/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Config(e.to_string()))?;
        Ok(Self {
            http,
            config,
            cache_key: Arc::default(),
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Sets (or clears) the `prompt_cache_key` sent with every OpenAI-style request (Chat
    /// Completions, Responses) of this client and all its clones: a stable key per
    /// conversation (the session id) keeps its requests on one prompt cache. Anthropic
    /// and Gemini requests never carry it. Whether a Chat Completions server accepts the
    /// field is the caller's call (set it only for servers known to).
    pub fn set_prompt_cache_key(&self, key: Option<String>) {
        *self
            .cache_key
            .write()
            .unwrap_or_else(PoisonError::into_inner) = key;
    }

    pub fn prompt_cache_key(&self) -> Option<String> {
        self.cache_key
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The request body as sent: the wire's encoding (of the prompted form when tools
    /// are offered in the prompt), plus the prompt cache key.
    pub fn body(&self, request: &Request) -> serde_json::Value {
        let wire = self.config.wire_api;
        let mut body = match self.config.tool_calling {
            crate::ToolCalling::Native => wire.encode(request),
            crate::ToolCalling::Prompted => wire.encode(&crate::prompted::rewrite(request)),
            crate::ToolCalling::Constrained => wire.encode(&crate::constrained::rewrite(request)),
        };
        if matches!(wire, WireApi::Chat | WireApi::Responses) {
            if let Some(key) = self.prompt_cache_key() {
                body["prompt_cache_key"] = serde_json::Value::String(key);
            }
        }
        body
    }

    /// Sends `request` and returns its normalized event stream once the first event
    /// arrived. Errors before that point are retried per the [`RetryPolicy`]; after it,
    /// failures arrive in the stream as `Error` + `Status(Failed)`. Cancelling the token
    /// aborts the open block, emits `Status(Cancelled)` and closes the connection.
    pub async fn stream(
        &self,
        request: &Request,
        cancel: CancellationToken,
    ) -> Result<EventStream, ClientError> {
        let wire = self.config.wire_api;
        let url = wire.endpoint_url(&self.config.base_url, &request.model);
        // Bytes: each retry shares the encoded body instead of copying it.
        let body: bytes::Bytes = serde_json::to_vec(&self.body(request))
            .map_err(|e| ClientError::Config(format!("request could not be encoded: {e}")))?
            .into();
        let mut attempt = 0;
        let opened = loop {
            let result = tokio::select! {
                _ = cancel.cancelled() => return Err(ClientError::Cancelled),
                r = self.open(&url, body.clone()) => r,
            };
            match result {
                Ok(opened) => break opened,
                Err(err) => {
                    let Some(delay) = self.config.retry.delay(attempt, &err) else {
                        return Err(err);
                    };
                    attempt += 1;
                    tracing::warn!(error = %err, attempt, delay_ms = delay.as_millis() as u64, "retrying request");
                    tokio::select! {
                        _ = cancel.cancelled() => return Err(ClientError::Cancelled),
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
            }
        };
        // Bounded: a consumer slower than the server holds the server back (TCP flow
        // control) instead of queueing events without limit.
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let idle = self.config.timeouts.idle;
        // A constrained reply is JSON: its answer is let out as text when the block ends.
        let unwrap = (self.config.tool_calling == crate::ToolCalling::Constrained
            && !request.tools.is_empty()
            && request.response_schema.is_none())
        .then(crate::constrained::AnswerUnwrap::default);
        tokio::spawn(pump(opened, idle, cancel, tx, unwrap));
        Ok(EventStream { rx })
    }

    async fn open(&self, url: &str, body: bytes::Bytes) -> Result<Opened, ClientError> {
        let wire = self.config.wire_api;
        let mut builder = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        for (name, value) in wire.auth_headers(self.config.api_key.as_deref()) {
            builder = builder.header(name, value);
        }
        for (name, value) in &self.config.extra_headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let first_event = self.config.timeouts.first_event;
        let no_answer = || ClientError::NoAnswer {
            url: url.to_owned(),
            secs: first_event.as_secs(),
        };
        let deadline = tokio::time::Instant::now() + first_event;
        let response = tokio::time::timeout_at(deadline, builder.send())
            .await
            .map_err(|_| no_answer())?
            .map_err(|e| network_error(url, &e))?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = retry_after(response.headers());
            let text = read_capped(response, deadline).await;
            return Err(ClientError::from_http(status, &text, url, retry_after));
        }
        let is_json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/json"));
        if is_json {
            // Some servers answer a streaming request with a plain JSON error and status 200.
            let text = read_capped(response, deadline).await;
            return Err(match ClientError::from_http(400, &text, url, None) {
                ClientError::BadRequest { message, .. } => ClientError::Protocol(message),
                other => other,
            });
        }
        let mut opened = Opened {
            decoder: wire.decoder(),
            parser: SseParser::new(),
            pending: Vec::new(),
            rest: Box::pin(response.bytes_stream()),
        };
        let mut seen_event = false;
        while !seen_event {
            // Keep-alive comments do not count: the deadline is for the first event.
            let next = tokio::time::timeout_at(deadline, opened.rest.next())
                .await
                .map_err(|_| no_answer())?;
            let Opened {
                decoder,
                parser,
                pending,
                ..
            } = &mut opened;
            match next {
                Some(Ok(chunk)) => {
                    parser.feed(&chunk, &mut |t, d| {
                        seen_event = true;
                        decoder.on_sse(t, d, pending);
                    });
                    if parser.overflow() {
                        return Err(ClientError::Protocol(too_large()));
                    }
                }
                Some(Err(e)) => return Err(network_error(url, &e)),
                None if !parser.stray().trim().is_empty() => {
                    return Err(stray_error(parser.stray(), url));
                }
                None => {
                    // llama-cpp-python answers an over-long prompt this way: 200, no events.
                    return Err(ClientError::Protocol(format!(
                        "{url} closed the stream without sending any event (some local servers do this when the prompt exceeds their context window)"
                    )));
                }
            }
        }
        Ok(opened)
    }
}

fn network_error(url: &str, e: &reqwest::Error) -> ClientError {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    if e.is_timeout() {
        ClientError::Timeout(format!("{url}: {message}"))
    } else {
        ClientError::Network {
            url: url.to_owned(),
            message,
        }
    }
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. HTTP dates are ignored, and so
/// are values no clock can wait for (`inf`, `1e20`, `NaN`).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .and_then(|v| v.parse::<f64>().ok())
    };
    let seconds = get("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| get("retry-after"))?;
    Duration::try_from_secs_f64(seconds.max(0.0)).ok()
}

/// The most of an error body that is read: enough for any provider's message, and a
/// server that sends hundreds of megabytes cannot make saki hold them.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of a body, before `deadline`.
async fn read_capped(response: reqwest::Response, deadline: tokio::time::Instant) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(chunk))) => {
                let room = MAX_ERROR_BODY_BYTES - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Only http and https base URLs can be used; anything else is a configuration error,
/// found before any request.
fn check_base_url(base_url: &str) -> Result<(), ClientError> {
    match reqwest::Url::parse(base_url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(()),
        Ok(url) => Err(ClientError::Config(format!(
            "the base URL `{base_url}` uses `{}:`; saki speaks http and https",
            url.scheme()
        ))),
        Err(e) => Err(ClientError::Config(format!(
            "the base URL `{base_url}` is not a URL ({e})"
        ))),
    }
}

/// A JSON error a provider wrote into the stream without SSE framing (Gemini does, with
/// status 200), as an error; other stray text as a protocol error.
fn stray_error(stray: &str, url: &str) -> ClientError {
    match stray_json_error(stray) {
        Some((code, message)) => ClientError::Server {
            status: code.and_then(|c| c.parse().ok()).unwrap_or(200),
            message,
        },
        None => ClientError::Protocol(format!(
            "{url} sent lines that are not an event stream: {}",
            stray.chars().take(200).collect::<String>()
        )),
    }
}

async fn pump(
    opened: Opened,
    idle: Duration,
    cancel: CancellationToken,
    tx: mpsc::Sender<Event>,
    mut unwrap: Option<crate::constrained::AnswerUnwrap>,
) {
    let Opened {
        mut decoder,
        mut parser,
        pending: mut out,
        mut rest,
    } = opened;
    // Silence is measured from the last event, not the last byte: a server that sends
    // only keep-alive comments does not hold the turn forever.
    let mut progress = tokio::time::Instant::now();
    let mut unwrapped = Vec::new();
    loop {
        match unwrap.as_mut() {
            Some(unwrap) => {
                for event in out.drain(..) {
                    unwrap.push(event, &mut unwrapped);
                }
            }
            None => unwrapped.append(&mut out),
        }
        for event in unwrapped.drain(..) {
            if tx.send(event).await.is_err() {
                return; // receiver gone: dropping `rest` closes the connection
            }
        }
        if decoder.is_finished() {
            return;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => decoder.cancel(&mut out),
            // Nobody listens any more: stop now rather than at the next chunk or timeout.
            _ = tx.closed() => return,
            next = tokio::time::timeout_at(progress + idle, rest.next()) => match next {
                Err(_) => decoder.fail(
                    Some("idle_timeout".into()),
                    format!("the provider sent no event for {}s", idle.as_secs()),
                    &mut out,
                ),
                Ok(None) => end_stream(&mut parser, decoder.as_mut(), &mut out),
                Ok(Some(Ok(chunk))) => {
                    if feed_chunk(&mut parser, decoder.as_mut(), &chunk, &mut out) {
                        progress = tokio::time::Instant::now();
                    }
                }
                Ok(Some(Err(e))) => decoder.fail(
                    Some("stream_interrupted".into()),
                    format!("the connection broke mid-stream: {}", network_error("", &e)),
                    &mut out,
                ),
            },
        }
    }
}

/// The normalized events of one response. Ends after the terminal status.
pub struct EventStream {
    rx: mpsc::Receiver<Event>,
}

impl Stream for EventStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.rx.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_wins_and_long_waits_give_up() {
        let policy = RetryPolicy::default();
        let limited = |s| ClientError::RateLimited {
            retry_after: Some(Duration::from_secs(s)),
            message: String::new(),
        };
        assert_eq!(policy.delay(0, &limited(7)), Some(Duration::from_secs(7)));
        assert_eq!(policy.delay(0, &limited(600)), None);
        assert_eq!(policy.delay(4, &limited(1)), None);
        assert_eq!(policy.delay(0, &ClientError::Cancelled), None);
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let policy = RetryPolicy::default();
        let err = ClientError::Server {
            status: 500,
            message: String::new(),
        };
        for attempt in 0..4 {
            let d = policy.delay(attempt, &err).unwrap();
            let full = policy.initial_backoff * 2u32.pow(attempt);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
        let long = RetryPolicy {
            max_retries: 40,
            ..policy
        };
        assert!(long.delay(30, &err).unwrap() <= long.max_backoff);
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}
