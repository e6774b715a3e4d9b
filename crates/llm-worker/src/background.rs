//! Tokens spent on background work, apart from the main turns: suggestions, speculations,
//! pipelined suggestions, compaction summaries and a small model's file rewrites. Reading
//! ahead doubles some requests' cost; a person should see what it spends. One [`BackgroundUsage`] per session is shared
//! (clones share it) by everything that sends such requests; front ends report what
//! accrued since their last report (`--json`: `background_usage` on `turn.completed`) and
//! the session's total (`/stats`, the exit line).

use saki_llm_client::{UsageEvent, WireApi};
use serde::Serialize;
use std::sync::{Arc, Mutex, PoisonError};

/// Tokens of some requests, the same way for every provider: `input_tokens` is the whole
/// prompt (cached part included, also for Anthropic, which reports it apart),
/// `cached_input_tokens` the part read from the prompt cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TokenCount {
    pub requests: u64,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
}

impl TokenCount {
    /// Adds one request's report.
    pub fn add_report(&mut self, usage: &UsageEvent, wire: WireApi) {
        self.requests += 1;
        self.input_tokens += usage.prompt_tokens(wire).unwrap_or(0);
        self.cached_input_tokens += usage.cache_read_input_tokens.unwrap_or(0);
        self.output_tokens += usage.output_tokens.unwrap_or(0);
    }

    pub fn add(&mut self, other: &TokenCount) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
    }

    /// Input and output together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// What background work is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackgroundKind {
    Suggestion,
    Speculation,
    PipelinedSuggestion,
    Compaction,
    /// A small model asked for a file's whole new text in place of its `edit`.
    Rewrite,
}

/// Background tokens by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BackgroundBreakdown {
    pub suggestion: TokenCount,
    pub speculation: TokenCount,
    pub pipelined_suggestion: TokenCount,
    pub compaction: TokenCount,
    pub rewrite: TokenCount,
}

impl BackgroundBreakdown {
    fn slot(&mut self, kind: BackgroundKind) -> &mut TokenCount {
        match kind {
            BackgroundKind::Suggestion => &mut self.suggestion,
            BackgroundKind::Speculation => &mut self.speculation,
            BackgroundKind::PipelinedSuggestion => &mut self.pipelined_suggestion,
            BackgroundKind::Compaction => &mut self.compaction,
            BackgroundKind::Rewrite => &mut self.rewrite,
        }
    }

    pub fn total(&self) -> TokenCount {
        let mut total = TokenCount::default();
        for part in [
            &self.suggestion,
            &self.speculation,
            &self.pipelined_suggestion,
            &self.compaction,
            &self.rewrite,
        ] {
            total.add(part);
        }
        total
    }

    pub fn is_empty(&self) -> bool {
        self.total().requests == 0
    }

    /// The `background_usage` object of `--json`: each kind, and `total`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let (Some(map), Ok(total)) = (value.as_object_mut(), serde_json::to_value(self.total()))
        {
            map.insert("total".into(), total);
        }
        value
    }
}

#[derive(Debug, Default)]
struct Tally {
    /// Since the last [`BackgroundUsage::take`].
    unreported: BackgroundBreakdown,
    session: BackgroundBreakdown,
}

/// A session's background tokens; clones share them.
#[derive(Debug, Clone, Default)]
pub struct BackgroundUsage(Arc<Mutex<Tally>>);

impl BackgroundUsage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one request's usage report (an empty report still counts the request).
    pub fn record(&self, kind: BackgroundKind, usage: &UsageEvent, wire: WireApi) {
        let mut tally = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        tally.unreported.slot(kind).add_report(usage, wire);
        tally.session.slot(kind).add_report(usage, wire);
    }

    /// What accrued since the last call, for a report.
    pub fn take(&self) -> BackgroundBreakdown {
        let mut tally = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut tally.unreported)
    }

    /// Everything this session spent in the background.
    pub fn session(&self) -> BackgroundBreakdown {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .session
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_cached_input_counts_in_the_prompt_like_everywhere_else() {
        let usage = BackgroundUsage::new();
        let anthropic = UsageEvent {
            input_tokens: Some(10),
            output_tokens: Some(5),
            cache_read_input_tokens: Some(900),
            cache_creation_input_tokens: Some(90),
            ..UsageEvent::default()
        };
        usage.record(BackgroundKind::Speculation, &anthropic, WireApi::Anthropic);
        let openai = UsageEvent {
            input_tokens: Some(1000),
            output_tokens: Some(7),
            cache_read_input_tokens: Some(896),
            ..UsageEvent::default()
        };
        usage.record(BackgroundKind::Suggestion, &openai, WireApi::Responses);
        let taken = usage.take();
        assert_eq!(
            taken.speculation,
            TokenCount {
                requests: 1,
                input_tokens: 1000,
                cached_input_tokens: 900,
                output_tokens: 5
            }
        );
        assert_eq!(taken.total().tokens(), 2012);
        assert!(usage.take().is_empty(), "taken once");
        assert_eq!(usage.session().total().requests, 2, "the session keeps it");
        let json = taken.to_json();
        assert_eq!(json["total"]["cached_input_tokens"], 1796);
        assert_eq!(json["pipelined_suggestion"]["requests"], 0);
    }
}
