//! Failures of local servers worth another try: a parser that rejected the model's output,
//! or an empty response (see the crate README, "Failures of local servers").

use super::{Worker, WorkerEvent};
use crate::responder::AssistantResponse;
use saki_llm_client::{
    CancellationToken, ClientError, ContentPart, Request, ResponseStatus, StopReason, ToolChoice,
};

impl Worker {
    /// One model request, tried again where a local server's failure is worth it: once
    /// as it was, then once with tool choice "none" (see [`recoverable`]). Sampled
    /// greedily (temperature 0) the same request gives the same output, so only the
    /// second form is tried.
    pub(super) async fn respond(
        &mut self,
        request: &Request,
        cancel: &CancellationToken,
    ) -> Result<AssistantResponse, ClientError> {
        // Decided by the request as built: a tool choice "none" set below only keeps the
        // server's parser out, and a call the model then writes as text is still one.
        self.responder.set_recovery(
            self.config.tool_call_recovery && request.tool_choice == ToolChoice::Auto,
        );
        let greedy = request.temperature == Some(0.0);
        let retries = if greedy { 1 } else { 2 };
        let mut request = request.clone();
        let mut attempt = 0;
        loop {
            let result = self
                .responder
                .respond(&self.client, &request, cancel.clone())
                .await;
            let reason = match &result {
                _ if cancel.is_cancelled() || attempt >= retries => None,
                Ok(response) => recoverable(response, self.config.tool_call_recovery),
                Err(e) => parser_failure(&e.to_string()),
            };
            let Some(reason) = reason else {
                return result;
            };
            attempt += 1;
            if attempt == retries {
                // Without the tool grammar the server cannot fail to parse a call.
                request.tool_choice = ToolChoice::None;
            }
            tracing::warn!(attempt, reason, "retrying the request");
            self.emit(WorkerEvent::Retrying { reason });
        }
    }
}

/// Why a response is worth trying again, if it is: a local server's parser rejected what
/// the model wrote (llama.cpp: "... does not match the expected ... format"), or, where
/// small models are expected (`weak`: text-call recovery on), the response came back
/// with nothing in it and no reason given. A refusal or a content filter is an answer.
fn recoverable(response: &AssistantResponse, weak: bool) -> Option<String> {
    match response.status {
        ResponseStatus::Failed => response
            .error
            .as_ref()
            .and_then(|e| parser_failure(&e.message)),
        ResponseStatus::Completed | ResponseStatus::Incomplete => {
            let deliberate = matches!(
                response.stop_reason,
                Some(StopReason::ContentFilter | StopReason::MaxTokens)
            );
            if !weak || deliberate {
                return None;
            }
            let empty = response.content.iter().all(|p| match p {
                ContentPart::Text { text } | ContentPart::Thinking { text, .. } => {
                    text.trim().is_empty()
                }
                _ => false,
            });
            empty.then(|| "the server sent an empty response".to_owned())
        }
        ResponseStatus::Cancelled | ResponseStatus::Started => None,
    }
}

/// The server could not parse the model's output into its format (a grammar or tool-call
/// parser failure), as opposed to a failure of the server itself.
fn parser_failure(message: &str) -> Option<String> {
    saki_llm_client::is_parser_failure(message)
        .then(|| format!("the server could not parse the model's output: {message}"))
}
