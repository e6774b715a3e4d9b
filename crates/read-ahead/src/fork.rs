//! Forked queries that share the main conversation's cache: [`CacheSafeParams`] is a
//! snapshot of what the last successful main turn sent (system prompt, tools, the whole
//! history, model, thinking); a fork appends its own items to exactly that, so its
//! request is a byte prefix-extension of the main one and the provider's prompt cache
//! sees a prefix it already holds.
//!
//! The spec keeps the newest 40 history items; saki keeps them all. A provider caches the
//! exact prefix of the request: a window of the newest items is a different prompt from
//! the second it drops one, so past 40 items every fork missed the cache (and lost the
//! conversation's start).

use crate::suggestion::{
    filter_suggestion, parse_suggestion_reply, reply_to_nothing, suggestion_json_schema,
    SuppressReason, SUGGESTION_PROMPT,
};
use crate::turn_usage::UsageSink;
use saki_llm_client::{
    CancellationToken, Client, ClientError, Request, ResponseSchema, ResponseStatus,
    ThinkingConfig, ToolDefinition, WireApi,
};
use saki_llm_worker::{to_messages, BackgroundKind, Item, Responder};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheSafeParams {
    pub system: Option<String>,
    pub tools: Vec<ToolDefinition>,
    /// The whole history the main request was built from.
    pub history: Vec<Item>,
    pub model: String,
    /// The main request's thinking setting. A fork on the same model sends it unchanged:
    /// Anthropic documents that changed thinking parameters invalidate cached message
    /// prefixes, and servers that render a reasoning effort into the chat template
    /// change the prompt's first tokens with it (see the README, "Thinking in forks").
    pub thinking: Option<ThinkingConfig>,
    /// Increases whenever the system prompt or the tools change.
    pub version: u64,
}

impl CacheSafeParams {
    /// A request for `model` that sends this snapshot followed by `extra`: the main
    /// request's system prompt, tools and history byte for byte, then `extra`. On the main
    /// model it thinks as the main request does (the cache is shared only there); on
    /// another (fast) model nothing is shared, and thinking is off.
    pub fn fork_request(&self, model: &str, extra: &[Item]) -> Request {
        let mut history = self.history.clone();
        history.extend_from_slice(extra);
        Request {
            model: model.to_owned(),
            system: self.system.clone(),
            messages: to_messages(&history),
            tools: self.tools.clone(),
            thinking: self.thinking.filter(|_| model == self.model),
            ..Request::default()
        }
    }
}

/// Where the snapshot lives between turns: saved after each successful main turn,
/// cleared for a new or reset session.
#[derive(Debug, Default)]
pub struct CacheSafeStore {
    params: Option<CacheSafeParams>,
    version: u64,
    /// System prompt and tools JSON of the last save, to detect a change.
    config_key: Option<String>,
}

impl CacheSafeStore {
    /// Saves the snapshot from the request the main turn sent last and the history after it.
    pub fn save(&mut self, request: &Request, history: &[Item]) {
        let key = serde_json::to_string(&(&request.system, &request.tools)).unwrap_or_default();
        if self.config_key.as_ref().is_some_and(|k| *k != key) {
            self.version += 1;
        }
        self.config_key = Some(key);
        self.params = Some(CacheSafeParams {
            system: request.system.clone(),
            tools: request.tools.clone(),
            history: history.to_vec(),
            model: request.model.clone(),
            thinking: request.thinking,
            version: self.version,
        });
    }

    pub fn get(&self) -> Option<&CacheSafeParams> {
        self.params.as_ref()
    }

    /// A new or reset session: nothing may leak into it.
    pub fn clear(&mut self) {
        self.params = None;
        self.config_key = None;
    }
}

/// Whether a finished turn may get a suggestion: no error, not in plan mode, and at
/// least two assistant messages in history (before that, the person's next step is a
/// guess).
pub fn suggestion_allowed(
    history: &[Item],
    turn_ok: bool,
    plan_mode: bool,
) -> Result<(), SuppressReason> {
    if !turn_ok {
        return Err(SuppressReason::TurnFailed);
    }
    if plan_mode {
        return Err(SuppressReason::PlanMode);
    }
    let assistant_messages = to_messages(history)
        .iter()
        .filter(|m| m.role == saki_llm_client::Role::Assistant)
        .count();
    if assistant_messages < 2 {
        return Err(SuppressReason::TooEarly);
    }
    Ok(())
}

/// Whether a suggestion may ask for structured output without costing the cache: on
/// Chat Completions servers (llama.cpp, Ollama, vLLM: the schema becomes a grammar, not
/// prompt text), not on OpenAI itself, where the schema is cached as a prefix of the
/// system message (a fork with one shares nothing with the main request), nor Gemini's
/// or Anthropic's APIs (strong models answer the plain prompt).
fn schema_keeps_the_cache(client: &Client) -> bool {
    let config = client.config();
    config.wire_api == WireApi::Chat && !config.base_url.contains("api.openai.com")
}

#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Client(#[from] saki_llm_client::ClientError),
    #[error("the forked request ended {0:?}")]
    Ended(ResponseStatus),
}

/// Asks `model` for the person's next prompt after the snapshot and `extra` (a
/// speculation's items, for the pipelined suggestion: it sees what the speculation did,
/// as the suggestion after the accept would) and filters the reply. The request is the
/// snapshot, `extra`, then [`SUGGESTION_PROMPT`] as a user message. Its tokens are
/// recorded in `usage` under the given kind.
pub async fn generate_suggestion(
    client: &Client,
    params: &CacheSafeParams,
    model: &str,
    extra: &[Item],
    cancel: CancellationToken,
    usage: Option<(&UsageSink, BackgroundKind)>,
) -> Result<Result<String, SuppressReason>, ForkError> {
    let prompt = SuggestionPrompt(SUGGESTION_PROMPT);
    generate_suggestion_with(client, params, model, extra, prompt, cancel, usage).await
}

/// The text asking for the suggestion (see [`crate::suggestion::suggestion_prompt`]).
#[derive(Debug, Clone, Copy)]
pub struct SuggestionPrompt<'a>(pub &'a str);

/// [`generate_suggestion`] with its own suggestion prompt.
pub async fn generate_suggestion_with(
    client: &Client,
    params: &CacheSafeParams,
    model: &str,
    extra: &[Item],
    prompt: SuggestionPrompt<'_>,
    cancel: CancellationToken,
    usage: Option<(&UsageSink, BackgroundKind)>,
) -> Result<Result<String, SuppressReason>, ForkError> {
    let mut items = extra.to_vec();
    items.push(Item::user(prompt.0));
    let mut request = params.fork_request(model, &items);
    if schema_keeps_the_cache(client) {
        request.response_schema = Some(ResponseSchema {
            name: "suggestion".into(),
            schema: suggestion_json_schema(),
        });
    }
    let response = match Responder::new()
        .respond(client, &request, cancel.clone())
        .await
    {
        // A server without structured output may refuse the schema: ask in plain text.
        Err(ClientError::BadRequest { .. }) => {
            request.response_schema = None;
            Responder::new().respond(client, &request, cancel).await?
        }
        other => other?,
    };
    if let Some((usage, kind)) = usage {
        usage.record(kind, &response.usage, client.config().wire_api);
    }
    match response.status {
        ResponseStatus::Completed | ResponseStatus::Incomplete => {}
        other => return Err(ForkError::Ended(other)),
    }
    let suggestion = filter_suggestion(&parse_suggestion_reply(&response.text()));
    // The answer the suggestion would reply to: the last assistant text before it.
    let last_answer = params
        .history
        .iter()
        .chain(extra)
        .rev()
        .find_map(|item| match item {
            Item::AssistantText { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    Ok(
        suggestion.and_then(|s| match reply_to_nothing(&s, last_answer) {
            Some(reason) => Err(reason),
            None => Ok(s),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(t: &str) -> Item {
        Item::AssistantText { text: t.into() }
    }

    #[test]
    fn a_fork_thinks_as_the_main_request_only_on_the_main_model() {
        let mut store = CacheSafeStore::default();
        let request = Request {
            model: "main".into(),
            thinking: Some(ThinkingConfig::default()),
            ..Request::default()
        };
        let history: Vec<Item> = (0..60)
            .flat_map(|i| [Item::user(format!("u{i}")), answer("a")])
            .collect();
        store.save(&request, &history);
        let params = store.get().unwrap();
        assert_eq!(params.history.len(), 120, "the whole history is kept");
        let same = params.fork_request("main", &[Item::user("next")]);
        assert_eq!(same.thinking, Some(ThinkingConfig::default()));
        assert_eq!(same.messages.len(), 121);
        assert_eq!(params.fork_request("fast", &[]).thinking, None);
    }

    #[test]
    fn the_version_moves_only_when_system_or_tools_change() {
        let mut store = CacheSafeStore::default();
        let mut request = Request {
            model: "m".into(),
            system: Some("s".into()),
            ..Request::default()
        };
        store.save(&request, &[Item::user("a")]);
        store.save(&request, &[Item::user("a"), answer("b")]);
        assert_eq!(store.get().unwrap().version, 0);
        assert_eq!(store.get().unwrap().history.len(), 2);
        request.system = Some("changed".into());
        store.save(&request, &[]);
        assert_eq!(store.get().unwrap().version, 1);
        store.clear();
        assert!(store.get().is_none());
    }

    #[test]
    fn suggestions_wait_for_two_assistant_messages_and_skip_plan_mode() {
        let one = [Item::user("a"), answer("b")];
        assert_eq!(
            suggestion_allowed(&one, true, false),
            Err(SuppressReason::TooEarly)
        );
        let two = [Item::user("a"), answer("b"), Item::user("c"), answer("d")];
        assert_eq!(suggestion_allowed(&two, true, false), Ok(()));
        assert_eq!(
            suggestion_allowed(&two, true, true),
            Err(SuppressReason::PlanMode)
        );
        assert_eq!(
            suggestion_allowed(&two, false, false),
            Err(SuppressReason::TurnFailed)
        );
    }
}
