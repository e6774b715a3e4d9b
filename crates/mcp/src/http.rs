//! rmcp's streamable HTTP client transport, on the workspace's reqwest.
//!
//! rmcp ships this glue for reqwest 0.13 (with its own TLS stack); saki already builds
//! reqwest 0.12, so the three requests the transport makes (POST a message, GET the
//! event stream, DELETE the session) are written here instead of building a second
//! HTTP client. rmcp drives them: session ids, reconnects, the protocol-version header.

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use saki_tools::common::{prefix_at_boundary, read_body_at_most};
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A complete JSON answer larger than this is refused (a tool result is capped far
/// below it anyway; this only bounds memory).
const MAX_JSON_BODY: usize = 16 * 1024 * 1024;
/// One event of an event stream larger than this ends the stream with an error.
const MAX_SSE_EVENT: usize = 16 * 1024 * 1024;
/// How much of an HTTP error body is quoted (and read).
const MAX_ERROR_BODY: usize = 2048;

/// The byte limits a request is held to: saki's own, or rmcp's transport limits where
/// those are smaller.
#[derive(Debug, Clone, Copy)]
struct Limits {
    json: usize,
    sse_event: usize,
    error: usize,
}

impl Limits {
    const SAKI: Self = Self {
        json: MAX_JSON_BODY,
        sse_event: MAX_SSE_EVENT,
        error: MAX_ERROR_BODY,
    };

    fn with_sse_event(max_sse_event_size: usize) -> Self {
        Self {
            sse_event: max_sse_event_size.min(MAX_SSE_EVENT),
            ..Self::SAKI
        }
    }

    fn from_rmcp(limits: StreamableHttpResponseLimits) -> Self {
        Self {
            json: limits.max_json_response_size.min(MAX_JSON_BODY),
            sse_event: limits.max_sse_event_size.min(MAX_SSE_EVENT),
            error: limits.max_error_response_size.min(MAX_ERROR_BODY),
        }
    }
}

/// reqwest 0.12 as rmcp's streamable HTTP client.
#[derive(Clone)]
pub struct HttpClient(pub reqwest::Client);

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct HttpError(#[from] reqwest::Error);

type Error = StreamableHttpError<HttpError>;

fn client_error(e: reqwest::Error) -> Error {
    StreamableHttpError::Client(HttpError(e))
}

fn with_headers(
    mut request: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(token) = auth {
        request = request.bearer_auth(token);
    }
    if let Some(id) = session_id {
        request = request.header(HEADER_SESSION_ID, id);
    }
    for (name, value) in headers {
        request = request.header(name, value);
    }
    request
}

fn media_type_is(content_type: Option<&HeaderValue>, expected: &str) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(expected))
}

/// Why an event stream's body ended early.
#[derive(Debug, thiserror::Error)]
enum SseBodyError {
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    #[error("an event of the server's stream is larger than {0} bytes")]
    EventTooLarge(usize),
}

/// Counts what the SSE parser would keep of the event being read: its unfinished line
/// and the field lines so far (comment lines are dropped by the parser, but their
/// length still counts while they are unfinished). A blank line ends the event.
#[derive(Debug)]
struct EventSize {
    max: usize,
    kept: usize,
    line: usize,
    line_is_comment: bool,
    after_cr: bool,
}

impl EventSize {
    fn new(max: usize) -> Self {
        Self {
            max,
            kept: 0,
            line: 0,
            line_is_comment: false,
            after_cr: false,
        }
    }

    /// False once the event being read is larger than `max`.
    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' | b'\n' => {
                    if self.line == 0 {
                        self.kept = 0;
                    } else if !self.line_is_comment {
                        // The parser joins data lines with a newline.
                        self.kept = self.kept.saturating_add(self.line).saturating_add(1);
                    }
                    self.line = 0;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    if self.line == 0 {
                        self.line_is_comment = byte == b':';
                    }
                    self.line += 1;
                }
            }
            if self.kept.saturating_add(self.line) > self.max {
                return false;
            }
        }
        true
    }
}

/// A response body that fails, and then ends, once one event grows past its bound,
/// before the SSE parser buffers it.
struct BoundedEvents<S> {
    inner: S,
    size: EventSize,
    done: bool,
}

impl<S, B> Stream for BoundedEvents<S>
where
    S: Stream<Item = reqwest::Result<B>> + Unpin,
    B: AsRef<[u8]>,
{
    type Item = Result<B, SseBodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let item = match std::task::ready!(self.inner.poll_next_unpin(cx)) {
            None => None,
            Some(Err(e)) => {
                self.done = true;
                Some(Err(SseBodyError::Http(e)))
            }
            Some(Ok(chunk)) if self.size.observe(chunk.as_ref()) => Some(Ok(chunk)),
            Some(Ok(_)) => {
                self.done = true;
                Some(Err(SseBodyError::EventTooLarge(self.size.max)))
            }
        };
        Poll::Ready(item)
    }
}

fn sse(
    response: reqwest::Response,
    max_event_size: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(BoundedEvents {
        inner: response.bytes_stream().boxed(),
        size: EventSize::new(max_event_size),
        done: false,
    })
    .boxed()
}

/// A 401 with a challenge is rmcp's "authorization required"; anything else unsuccessful
/// is an unexpected answer quoting the start of its body (of which at most `max` bytes,
/// and a few more to end on a whole character, are read).
async fn refusal(response: reqwest::Response, max: usize) -> Error {
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        if let Some(header) = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
        {
            return StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_owned()));
        }
    }
    let (body, cut) = read_body_at_most(response, max.saturating_add(3))
        .await
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body);
    let quoted = prefix_at_boundary(&body, max);
    let more = if cut || quoted.len() < body.len() {
        "…"
    } else {
        ""
    };
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
        "HTTP {status}: {quoted}{more}"
    )))
}

impl HttpClient {
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: Limits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let request = self.0.post(uri.as_ref()).header(
            http::header::ACCEPT,
            [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "),
        );
        let request = with_headers(request, session_id.as_deref(), auth_header, custom_headers);
        let response = request.json(&message).send().await.map_err(client_error)?;
        let status = response.status();
        if matches!(
            status,
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            return Err(refusal(response, limits.error).await);
        }
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Notifications and responses await nothing: whatever the body, they went through.
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let content_type = response.headers().get(http::header::CONTENT_TYPE).cloned();
        if media_type_is(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            return Ok(StreamableHttpPostResponse::Sse(
                sse(response, limits.sse_event),
                new_session,
            ));
        }
        if media_type_is(content_type.as_ref(), JSON_MIME_TYPE) {
            let too_large = || StreamableHttpError::ResponseBodyTooLarge {
                max_size: limits.json,
            };
            if response
                .content_length()
                .is_some_and(|n| n > limits.json as u64)
            {
                return Err(too_large());
            }
            let (body, cut) = read_body_at_most(response, limits.json)
                .await
                .map_err(client_error)?;
            if cut {
                return Err(too_large());
            }
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::Deserialize(e)),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        ))
    }

    async fn get(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut request = self.0.get(uri.as_ref()).header(
            http::header::ACCEPT,
            [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "),
        );
        if let Some(id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, id);
        }
        let request = with_headers(request, session_id.as_deref(), auth_header, custom_headers);
        let response = request.send().await.map_err(client_error)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(refusal(response, MAX_ERROR_BODY).await);
        }
        let content_type = response.headers().get(http::header::CONTENT_TYPE);
        if !media_type_is(content_type, EVENT_STREAM_MIME_TYPE)
            && !media_type_is(content_type, JSON_MIME_TYPE)
        {
            return Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        Ok(sse(response, max_event_size))
    }
}

// rmcp calls the `*_with_*` methods with its transport's limits; the plain ones are
// there for any other caller. Every path holds the body to `Limits`.
impl StreamableHttpClient for HttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            Limits::SAKI,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = Limits::with_sse_event(max_sse_event_size);
        self.post(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = Limits::from_rmcp(limits);
        self.post(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let request = with_headers(
            self.0.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let response = request.send().await.map_err(client_error)?;
        // A server that keeps no sessions to delete says so with 405.
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response.error_for_status().map_err(client_error)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_SSE_EVENT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size.min(MAX_SSE_EVENT),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    //! Hostile servers, hand-rolled over TCP: each answers one request with `head`, then
    //! `body`, then (if `endless`) `body` again until the client hangs up.

    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const SMALL: usize = 64 * 1024;

    async fn serve(head: &'static str, body: Vec<u8>, endless: bool) -> Arc<str> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: Arc<str> = format!("http://{}/mcp", listener.local_addr().unwrap()).into();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            read_request(&mut socket).await;
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            loop {
                if socket.write_all(&body).await.is_err() || !endless {
                    return;
                }
            }
        });
        uri
    }

    /// Reads the request whole, so closing the socket after the answer is not a reset.
    async fn read_request(socket: &mut tokio::net::TcpStream) {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let head_end = loop {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client hung up before its request ended");
            seen.extend_from_slice(&buf[..n]);
            if let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while seen.len() < head_end + length {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
        }
    }

    fn ping() -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .unwrap()
    }

    fn small_limits() -> StreamableHttpResponseLimits {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_json_response_size = SMALL;
        limits.max_sse_event_size = SMALL;
        limits
    }

    async fn post(uri: Arc<str>) -> Result<StreamableHttpPostResponse, Error> {
        let client = HttpClient(reqwest::Client::new());
        let call = client.post_message_with_response_limits(
            uri,
            ping(),
            None,
            None,
            HashMap::new(),
            small_limits(),
        );
        tokio::time::timeout(Duration::from_secs(20), call)
            .await
            .expect("the client kept reading a body past its bound")
    }

    async fn next_event(
        stream: &mut BoxStream<'static, Result<Sse, SseError>>,
    ) -> Option<Result<Sse, SseError>> {
        tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("the client kept reading an event past its bound")
    }

    #[tokio::test]
    async fn a_json_answer_without_length_past_the_bound_is_refused() {
        let uri = serve(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
            br#"{"jsonrpc":"2.0","id":1,"result":{"padding":""#.repeat(100),
            true,
        )
        .await;
        match post(uri).await {
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                assert_eq!(max_size, SMALL);
            }
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("an endless JSON body was accepted"),
        }
    }

    #[tokio::test]
    async fn a_json_answer_within_the_bound_is_read() {
        let uri = serve(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
            false,
        )
        .await;
        assert!(matches!(
            post(uri).await,
            Ok(StreamableHttpPostResponse::Json(..))
        ));
    }

    #[tokio::test]
    async fn an_endless_event_ends_the_posted_stream_with_an_error() {
        let uri = serve(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ",
            vec![b'x'; 8192],
            true,
        )
        .await;
        let Ok(StreamableHttpPostResponse::Sse(mut stream, _)) = post(uri).await else {
            panic!("not an event stream");
        };
        let error = next_event(&mut stream).await.unwrap().unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("larger than {SMALL} bytes")),
            "{error}"
        );
        assert!(next_event(&mut stream).await.is_none());
    }

    #[tokio::test]
    async fn an_endless_event_ends_the_standing_stream_with_an_error() {
        // Many data lines, none long: the event, not the line, is what is bounded.
        let uri = serve(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n"
                .to_vec(),
            true,
        )
        .await;
        let client = HttpClient(reqwest::Client::new());
        let mut stream = client
            .get_stream_with_max_sse_event_size(uri, None, None, None, HashMap::new(), SMALL)
            .await
            .unwrap();
        let error = next_event(&mut stream).await.unwrap().unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("larger than {SMALL} bytes")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn many_events_each_within_the_bound_all_arrive() {
        let event = format!("id: 1\ndata: {}\n\n", "y".repeat(1000));
        let uri = serve(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            event.repeat(200).into_bytes(),
            false,
        )
        .await;
        let Ok(StreamableHttpPostResponse::Sse(mut stream, _)) = post(uri).await else {
            panic!("not an event stream");
        };
        let mut count = 0;
        while let Some(event) = next_event(&mut stream).await {
            assert_eq!(event.unwrap().data.unwrap().len(), 1000);
            count += 1;
        }
        assert_eq!(count, 200);
    }

    #[tokio::test]
    async fn an_endless_error_body_is_quoted_short() {
        let uri = serve(
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
            "é".repeat(4096).into_bytes(),
            true,
        )
        .await;
        let Err(StreamableHttpError::UnexpectedServerResponse(message)) = post(uri).await else {
            panic!("not an unexpected server response");
        };
        let quoted = message
            .strip_prefix("HTTP 500 Internal Server Error: ")
            .unwrap();
        let quoted = quoted.strip_suffix('…').unwrap();
        assert!(quoted.len() <= MAX_ERROR_BODY && quoted.len() > MAX_ERROR_BODY - 2);
        assert!(quoted.chars().all(|c| c == 'é'), "{quoted}");
    }

    #[test]
    fn event_size_counts_kept_lines_and_resets_on_a_blank_line() {
        let mut size = EventSize::new(20);
        // A comment line counts only while unfinished.
        assert!(size.observe(b": 01234567890123456\r\n"));
        assert!(size.observe(b"data: 0123456789\r"));
        // The LF of a CRLF split across chunks is not a blank line.
        assert!(size.observe(b"\n"));
        assert_eq!(size.kept, 17);
        assert!(!size.observe(b"data: 0123"));
        let mut size = EventSize::new(20);
        assert!(size.observe(b"data: 0123456789\r\n\r\n"));
        assert_eq!(size.kept, 0);
        assert!(size.observe(b"data: 0123456789\n\n"));
        assert!(!size.observe(b": 012345678901234567890"));
    }
}
