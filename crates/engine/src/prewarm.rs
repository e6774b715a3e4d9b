//! Prewarming a local server's prompt cache while the person types the first prompt.
//!
//! A cold llama.cpp server reads the base prompt (system prompt and tool schemas, ~1k
//! tokens) at 30–100 tokens/s on a small CPU before it writes the first token. The first
//! request of a session is that base prompt plus the person's own words, so sending the
//! base prompt once, with a blank user message and a one-token answer, while the person
//! is still typing, leaves the server holding exactly the prefix the real request starts
//! with: then the first answer waits only for the person's own tokens. The request is the
//! real one ([`Worker::build_request`]) with nothing changed but the blank message and the
//! token bound, so the prefix is byte-identical. It is cancelled as soon as the person
//! submits. Only local servers are prewarmed: a cloud provider bills the request.

use saki_llm_client::{CancellationToken, Message};
use saki_llm_worker::Worker;

/// Whether `base_url` points at this machine.
pub fn is_local(base_url: &str) -> bool {
    let host = base_url
        .split("://")
        .nth(1)
        .unwrap_or(base_url)
        .split(['/', '?'])
        .next()
        .unwrap_or("");
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1") || host.starts_with("127.")
}

/// A prewarm in flight; cancelled when dropped.
pub struct Prewarm(CancellationToken);

impl Drop for Prewarm {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Sends the base prompt of `worker`'s next request in the background.
pub fn start(worker: &Worker) -> Prewarm {
    let cancel = CancellationToken::new();
    let mut request = worker.build_request();
    // A blank, not empty: encoders drop empty messages, and some chat templates need a
    // user turn. The prefix the server caches ends right before the person's words.
    request.messages.push(Message::user_text(" "));
    request.max_output_tokens = Some(1);
    request.thinking = None;
    let client = worker.client().clone();
    let token = cancel.clone();
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        match client.stream(&request, token.clone()).await {
            Ok(mut events) => {
                use futures::StreamExt;
                // Cancelling ends the stream too.
                while events.next().await.is_some() {}
                tracing::debug!(ms = started.elapsed().as_millis() as u64, "prewarm done");
            }
            Err(e) => tracing::debug!(error = %e, "prewarm failed"),
        }
    });
    Prewarm(cancel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_is_local() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8080/v1",
            "http://127.0.0.2/v1",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://192.168.1.5:8080/v1",
            "http://localhost.evil.com/v1",
        ] {
            assert!(!is_local(url), "{url}");
        }
    }
}
