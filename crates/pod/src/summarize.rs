//! The summary request of a [`Compactor`]: sent, checked for its sections, and asked for
//! once more when the goal or the plan is missing.

use super::{CompactionSettings, Compactor, SummaryFailure};
use crate::summary::{
    missing_sections, retry_prompt, snapshot_of, summary_prompt, COMPACTION_SYSTEM_PROMPT,
};
use saki_llm_client::{CancellationToken, Request, ResponseStatus};
use saki_llm_worker::{to_messages, BackgroundKind, CompactionStatus, Item, Responder};

impl Compactor {
    /// Asks for the snapshot of `head`; an answer without its goal or plan is asked for
    /// once more (as a continuation, so the first request's cached prefix is reused).
    pub(super) async fn summarize(
        &self,
        settings: &CompactionSettings,
        head: &[Item],
        cancel: &CancellationToken,
    ) -> Result<String, SummaryFailure> {
        let mut messages = vec![Item::user(summary_prompt(head))];
        let mut attempts = 0;
        loop {
            attempts += 1;
            let reply = self.request(settings, &messages, cancel).await?;
            let snapshot = snapshot_of(&reply);
            let missing = missing_sections(snapshot);
            if missing.is_empty() {
                return Ok(snapshot.to_owned());
            }
            if attempts == 2 {
                if snapshot.is_empty() {
                    return Err((CompactionStatus::FailedEmptySummary, None));
                }
                let tags: Vec<String> = missing.iter().map(|s| format!("<{s}>")).collect();
                return Err((
                    CompactionStatus::FailedMissingSections,
                    Some(format!(
                        "the summary had no {}, also when asked again",
                        tags.join(" or ")
                    )),
                ));
            }
            if !reply.trim().is_empty() {
                messages.push(Item::AssistantText { text: reply });
            }
            messages.push(Item::user(retry_prompt(&missing)));
        }
    }

    /// One summary request: the compaction system prompt, no tools, thinking off.
    async fn request(
        &self,
        settings: &CompactionSettings,
        messages: &[Item],
        cancel: &CancellationToken,
    ) -> Result<String, SummaryFailure> {
        let request = Request {
            model: settings.summary_model.clone(),
            system: Some(COMPACTION_SYSTEM_PROMPT.to_owned()),
            messages: to_messages(messages),
            tools: Vec::new(),
            max_output_tokens: settings.summary_max_output_tokens,
            temperature: settings.summary_temperature,
            thinking: None,
            response_schema: None,
            tool_choice: Default::default(),
        };
        let response = Responder::new()
            .respond(&self.client, &request, cancel.clone())
            .await;
        if let (Some(usage), Ok(r)) = (&self.usage, &response) {
            let wire = self.client.config().wire_api;
            usage.record(BackgroundKind::Compaction, &r.usage, wire);
        }
        match response {
            Ok(r)
                if matches!(
                    r.status,
                    ResponseStatus::Completed | ResponseStatus::Incomplete
                ) =>
            {
                Ok(r.text())
            }
            Ok(r) => {
                let message = r.error.map_or_else(
                    || format!("the summary request ended {:?}", r.status).to_lowercase(),
                    |e| e.message,
                );
                Err((CompactionStatus::FailedRequest, Some(message)))
            }
            Err(e) => Err((CompactionStatus::FailedRequest, Some(e.to_string()))),
        }
    }
}
