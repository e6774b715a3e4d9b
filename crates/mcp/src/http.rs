//! rmcp's streamable HTTP client transport, on the workspace's reqwest.
//!
//! rmcp ships this glue for reqwest 0.13 (with its own TLS stack); saki already builds
//! reqwest 0.12, so the three requests the transport makes (POST a message, GET the
//! event stream, DELETE the session) are written here instead of building a second
//! HTTP client. rmcp drives them: session ids, reconnects, the protocol-version header.

use futures::stream::BoxStream;
use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// A complete JSON answer larger than this is refused (a tool result is capped far
/// below it anyway; this only bounds memory).
const MAX_JSON_BODY: usize = 16 * 1024 * 1024;
/// How much of an HTTP error body is quoted.
const MAX_ERROR_BODY: usize = 2048;

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

fn sse(response: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(response.bytes_stream()).boxed()
}

/// A 401 with a challenge is rmcp's "authorization required"; anything else unsuccessful
/// is an unexpected answer quoting the start of its body.
async fn refusal(response: reqwest::Response) -> Error {
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
    let body = response.text().await.unwrap_or_default();
    let mut end = body.len().min(MAX_ERROR_BODY);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
        "HTTP {status}: {}",
        &body[..end]
    )))
}

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
            return Err(refusal(response).await);
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
            return Ok(StreamableHttpPostResponse::Sse(sse(response), new_session));
        }
        if media_type_is(content_type.as_ref(), JSON_MIME_TYPE) {
            if response
                .content_length()
                .is_some_and(|n| n > MAX_JSON_BODY as u64)
            {
                return Err(StreamableHttpError::ResponseBodyTooLarge {
                    max_size: MAX_JSON_BODY,
                });
            }
            let body = response.bytes().await.map_err(client_error)?;
            if body.len() > MAX_JSON_BODY {
                return Err(StreamableHttpError::ResponseBodyTooLarge {
                    max_size: MAX_JSON_BODY,
                });
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
            return Err(refusal(response).await);
        }
        let content_type = response.headers().get(http::header::CONTENT_TYPE);
        if !media_type_is(content_type, EVENT_STREAM_MIME_TYPE)
            && !media_type_is(content_type, JSON_MIME_TYPE)
        {
            return Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        Ok(sse(response))
    }
}
