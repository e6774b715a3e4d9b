//! Typed transport and provider errors, each phrased so a person can act on it.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "authentication failed (HTTP {status}): {message}. Check the API key for this provider."
    )]
    Auth { status: u16, message: String },
    #[error("rate limited by the provider{}: {message}", retry_hint(*.retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("quota exhausted: {message}. Check the plan and billing of this account.")]
    QuotaExceeded { message: String },
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextTooLong { message: String },
    #[error("model not found: {message}. Check the model name for this provider.")]
    ModelNotFound { message: String },
    #[error("endpoint not found (HTTP 404) at {url}: {message}. Check the base URL.")]
    EndpointNotFound { url: String, message: String },
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    #[error("the provider failed (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    #[error("could not reach {url}: {message}")]
    Network { url: String, message: String },
    #[error("timed out: {0}")]
    Timeout(String),
    /// The request was sent and the server took it, but no event came in time. Not sent
    /// again: a server that holds a request that long would likely hold the next one too.
    #[error("no answer from {url} within {secs}s; the request was not sent again")]
    NoAnswer { url: String, secs: u64 },
    #[error("the provider answered with something that is not an event stream: {0}")]
    Protocol(String),
    #[error("cancelled")]
    Cancelled,
    #[error("invalid client configuration: {0}")]
    Config(String),
}

/// Whether a server's error message says it could not parse what the model wrote
/// (llama.cpp: "... does not match the expected ... format", "Failed to parse tool call
/// arguments").
pub fn is_parser_failure(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("does not match the expected") || lower.contains("failed to parse")
}

/// How servers say a request's images are not for this model (OpenAI, llama.cpp
/// without a projector, vLLM, Ollama and gateways), lowercase.
const IMAGES_REFUSED: &[&str] = &[
    "image_url is only supported",
    "image input is not supported",
    "image inputs are not supported",
    "does not support image",
    "doesn't support image",
    "does not support vision",
    "not a multimodal model",
    "images are not supported",
    "no vision support",
];

fn retry_hint(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(" (retry after {}s)", d.as_secs_f32().ceil()),
        None => String::new(),
    }
}

impl ClientError {
    /// Worth another attempt before the first event arrived. A server error that says
    /// the server could not parse the model's output (llama.cpp's tool-call parser) is
    /// not: sending the same bytes again after a pause rarely helps, and the caller has
    /// better ways to recover (see saki-llm-worker).
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Server { message, .. } => !self::is_parser_failure(message),
            ClientError::RateLimited { .. }
            | ClientError::Network { .. }
            | ClientError::Timeout(_) => true,
            _ => false,
        }
    }

    /// A stable machine-readable name, used in JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::Auth { .. } => "auth",
            ClientError::RateLimited { .. } => "rate_limited",
            ClientError::QuotaExceeded { .. } => "quota_exceeded",
            ClientError::ContextTooLong { .. } => "context_too_long",
            ClientError::ModelNotFound { .. } => "model_not_found",
            ClientError::EndpointNotFound { .. } => "endpoint_not_found",
            ClientError::BadRequest { .. } => "bad_request",
            ClientError::Server { .. } => "server_error",
            ClientError::Network { .. } => "network",
            ClientError::Timeout(_) | ClientError::NoAnswer { .. } => "timeout",
            ClientError::Protocol(_) => "protocol",
            ClientError::Cancelled => "cancelled",
            ClientError::Config(_) => "config",
        }
    }

    /// Maps an HTTP error answer to a typed error.
    pub(crate) fn from_http(
        status: u16,
        body: &str,
        url: &str,
        retry_after: Option<Duration>,
    ) -> Self {
        let (code, message) = error_message(body);
        let haystack = format!("{} {}", code.as_deref().unwrap_or(""), message).to_lowercase();
        let mentions = |needles: &[&str]| needles.iter().any(|n| haystack.contains(n));
        let context_words = [
            "context length",
            "context_length",
            "maximum context",
            "context window",
            "too many tokens",
            "prompt is too long",
            "exceed_context_size",
            "input is too long",
            "context size",
            "token limit",
        ];
        match status {
            401 | 403 => ClientError::Auth { status, message },
            429 if mentions(&["insufficient_quota", "quota"]) => {
                ClientError::QuotaExceeded { message }
            }
            429 => ClientError::RateLimited {
                retry_after,
                message,
            },
            404 if mentions(&["model"]) => ClientError::ModelNotFound { message },
            400..=499
                if mentions(&["model"])
                    && mentions(&["not found", "does not exist", "not exist"]) =>
            {
                ClientError::ModelNotFound { message }
            }
            404 => ClientError::EndpointNotFound {
                url: url.to_owned(),
                message,
            },
            // Any status: llama.cpp has answered this with a 500, which is not worth
            // sending again.
            _ if mentions(IMAGES_REFUSED) => ClientError::BadRequest {
                status,
                message: format!(
                    "the model does not accept images ({message}). Set `vision = false` \
                     for this model under [models.NAME] in config.toml, or choose a model \
                     that reads images"
                ),
            },
            400..=499 if mentions(&context_words) => ClientError::ContextTooLong { message },
            400..=499 => ClientError::BadRequest { status, message },
            _ if mentions(&context_words) => ClientError::ContextTooLong { message },
            _ => ClientError::Server { status, message },
        }
    }
}

/// Pulls `(code, message)` out of the error bodies providers send: `{"error":{...}}`,
/// `{"error":"..."}`, `[{"error":{...}}]` (Gemini), or plain text.
fn error_message(body: &str) -> (Option<String>, String) {
    let trimmed = body.trim();
    let fallback = || {
        let text: String = trimmed.chars().take(500).collect();
        if text.is_empty() {
            "no details given".to_owned()
        } else {
            text
        }
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(trimmed) else {
        return (None, fallback());
    };
    let value = match value {
        serde_json::Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    match value.get("error") {
        Some(error) => crate::protocol::openai_chat::error_parts(error),
        None => match value
            .get("message")
            .or_else(|| value.get("detail"))
            .and_then(|m| m.as_str())
        {
            Some(m) => (None, m.to_owned()),
            None => (None, fallback()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_common_provider_errors() {
        let e = ClientError::from_http(
            401,
            r#"{"error":{"message":"Incorrect API key"}}"#,
            "u",
            None,
        );
        assert_eq!(e.kind(), "auth");
        let e = ClientError::from_http(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
            "u",
            None,
        );
        assert_eq!(e.kind(), "context_too_long");
        let e = ClientError::from_http(404, r#"{"error":"model 'llama9' not found"}"#, "u", None);
        assert_eq!(e.kind(), "model_not_found");
        assert!(e.to_string().contains("llama9"));
        let e = ClientError::from_http(404, "Not Found", "http://x/v1/chat/completions", None);
        assert_eq!(e.kind(), "endpoint_not_found");
        let e = ClientError::from_http(
            429,
            r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
            "u",
            None,
        );
        assert!(!e.is_retryable());
        let e = ClientError::from_http(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            "u",
            Some(Duration::from_secs(3)),
        );
        assert!(e.is_retryable());
        assert!(e.to_string().contains("retry after 3s"));
        let e = ClientError::from_http(
            503,
            r#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#,
            "u",
            None,
        );
        assert_eq!(e.kind(), "server_error");
        assert!(e.to_string().contains("overloaded"));
    }

    #[test]
    fn a_refused_image_says_what_to_change() {
        for (status, body) in [
            (
                400,
                r#"{"error":{"message":"Invalid content type. image_url is only supported by certain models.","type":"invalid_request_error"}}"#,
            ),
            (
                500,
                r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#,
            ),
        ] {
            let e = ClientError::from_http(status, body, "u", None);
            assert_eq!(e.kind(), "bad_request", "{body}");
            assert!(!e.is_retryable());
            let text = e.to_string();
            assert!(text.contains("does not accept images"), "{text}");
            assert!(text.contains("vision = false"), "{text}");
        }
    }
}
