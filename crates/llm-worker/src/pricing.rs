//! What tokens cost in money. Prices are USD per million tokens; the table of the
//! built-in models lives with the built-in model list (saki-cli), and config
//! `[models.NAME] pricing` overrides and extends it.

use crate::background::{BackgroundBreakdown, TokenCount};
use saki_llm_client::{UsageEvent, WireApi};
use serde::Deserialize;
use std::collections::BTreeMap;

/// One model's prices, USD per million tokens. `cache_read` and `cache_write` default to
/// `input` (a provider without a prompt cache bills every input token alike).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

const PER_TOKEN: f64 = 1e-6;

impl Pricing {
    /// Tokens summed over requests. Cache writes are not told apart there, so they are
    /// priced as ordinary input.
    pub fn cost_of(&self, count: &TokenCount) -> f64 {
        let cached = count.cached_input_tokens.min(count.input_tokens);
        let fresh = count.input_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cache_read.unwrap_or(self.input)
            + count.output_tokens as f64 * self.output)
            * PER_TOKEN
    }

    /// One report (or a turn's sum) as the provider gave it, cache writes included.
    pub fn cost_of_usage(&self, usage: &UsageEvent, wire: WireApi) -> f64 {
        let prompt = usage.prompt_tokens(wire).unwrap_or(0);
        let read = usage.cache_read_input_tokens.unwrap_or(0);
        let written = usage.cache_creation_input_tokens.unwrap_or(0);
        let fresh = prompt.saturating_sub(read).saturating_sub(written);
        (fresh as f64 * self.input
            + read as f64 * self.cache_read.unwrap_or(self.input)
            + written as f64 * self.cache_write.unwrap_or(self.input)
            + usage.output_tokens.unwrap_or(0) as f64 * self.output)
            * PER_TOKEN
    }
}

/// Prices by model name, and which model each kind of work runs on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    pub prices: BTreeMap<String, Pricing>,
    /// The session's model.
    pub main_model: String,
    /// The model that suggests and speculates.
    pub fast_model: String,
    /// The model that writes compaction summaries.
    pub compaction_model: String,
}

impl PriceTable {
    pub fn price(&self, model: &str) -> Option<&Pricing> {
        self.prices.get(model)
    }

    /// The main turns' cost, when the main model's prices are known.
    pub fn main_cost(&self, usage: &UsageEvent, wire: WireApi) -> Option<f64> {
        Some(self.price(&self.main_model)?.cost_of_usage(usage, wire))
    }

    /// Background work's cost, when the prices of every model that did some are known.
    pub fn background_cost(&self, spent: &BackgroundBreakdown) -> Option<f64> {
        let mut total = 0.0;
        for (count, model) in [
            (&spent.suggestion, &self.fast_model),
            (&spent.speculation, &self.fast_model),
            (&spent.pipelined_suggestion, &self.fast_model),
            (&spent.compaction, &self.compaction_model),
        ] {
            if count.requests > 0 {
                total += self.price(model)?.cost_of(count);
            }
        }
        Some(total)
    }

    /// A session's cost: the main turns' tokens and background work's.
    pub fn session_cost(&self, main: &TokenCount, spent: &BackgroundBreakdown) -> Option<f64> {
        let main = match main.requests {
            0 => 0.0,
            _ => self.price(&self.main_model)?.cost_of(main),
        };
        Some(main + self.background_cost(spent)?)
    }
}

/// `$0.42`, `$0.0031`, `$12.30`: two significant places for small sums.
pub fn usd_label(usd: f64) -> String {
    if usd >= 1.0 || usd == 0.0 {
        format!("${usd:.2}")
    } else if usd >= 0.01 {
        format!("${usd:.3}")
    } else {
        format!("${usd:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sonnet() -> Pricing {
        Pricing {
            input: 3.0,
            output: 15.0,
            cache_read: Some(0.3),
            cache_write: Some(3.75),
        }
    }

    #[test]
    fn anthropic_usage_prices_reads_writes_and_fresh_input_apart() {
        let usage = UsageEvent {
            input_tokens: Some(1_000),
            output_tokens: Some(2_000),
            cache_read_input_tokens: Some(100_000),
            cache_creation_input_tokens: Some(10_000),
            ..UsageEvent::default()
        };
        let cost = sonnet().cost_of_usage(&usage, WireApi::Anthropic);
        // 1000×3 + 100000×0.3 + 10000×3.75 + 2000×15 = 100500 µ$.
        assert!((cost - 0.1005).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn a_session_needs_every_model_priced() {
        let mut table = PriceTable {
            main_model: "big".into(),
            fast_model: "small".into(),
            compaction_model: "small".into(),
            ..PriceTable::default()
        };
        table.prices.insert("big".into(), sonnet());
        let main = TokenCount {
            requests: 1,
            input_tokens: 1_000_000,
            cached_input_tokens: 0,
            output_tokens: 0,
        };
        let mut spent = BackgroundBreakdown::default();
        assert_eq!(table.session_cost(&main, &spent), Some(3.0));
        spent.suggestion.requests = 1;
        assert_eq!(
            table.session_cost(&main, &spent),
            None,
            "small has no price"
        );
        assert_eq!(usd_label(3.0), "$3.00");
        assert_eq!(usd_label(0.0421), "$0.042");
        assert_eq!(usd_label(0.00312), "$0.0031");
    }
}
