//! Prices of the built-in models, and the session's price table (built-in prices under
//! config's `[models.NAME] pricing`).
//!
//! Prices as published on 2025-11-20, USD per million tokens, standard tier, prompts
//! under 200k tokens, 5-minute cache writes. Sources: https://www.anthropic.com/pricing
//! (Claude API), https://openai.com/api/pricing, https://ai.google.dev/gemini-api/docs/pricing.
//! OpenAI and Gemini bill cache writes as ordinary input. A provider's price change
//! needs a change here, or a `pricing` line in config until then.

use crate::config::FileConfig;
use saki_llm_client::{UsageEvent, WireApi};
use saki_llm_worker::pricing::{PriceTable, Pricing};
use saki_llm_worker::BackgroundBreakdown;
use std::sync::OnceLock;

const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Pricing {
    Pricing {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write: Some(cache_write),
    }
}

/// Model-name prefixes and their prices; the longest matching prefix wins, so dated
/// names (`claude-sonnet-4-5-20250929`) get their family's price.
const BUILTIN: &[(&str, Pricing)] = &[
    ("claude-opus-4-5", p(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-1", p(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4", p(15.0, 75.0, 1.50, 18.75)),
    ("claude-sonnet-4", p(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-7-sonnet", p(3.0, 15.0, 0.30, 3.75)),
    ("claude-haiku-4-5", p(1.0, 5.0, 0.10, 1.25)),
    ("claude-3-5-haiku", p(0.80, 4.0, 0.08, 1.0)),
    ("gpt-5.1", p(1.25, 10.0, 0.125, 1.25)),
    ("gpt-5", p(1.25, 10.0, 0.125, 1.25)),
    ("gpt-5-mini", p(0.25, 2.0, 0.025, 0.25)),
    ("gpt-5-nano", p(0.05, 0.40, 0.005, 0.05)),
    ("gpt-4.1", p(2.0, 8.0, 0.50, 2.0)),
    ("gpt-4.1-mini", p(0.40, 1.60, 0.10, 0.40)),
    ("gpt-4.1-nano", p(0.10, 0.40, 0.025, 0.10)),
    ("gpt-4o", p(2.50, 10.0, 1.25, 2.50)),
    ("gpt-4o-mini", p(0.15, 0.60, 0.075, 0.15)),
    ("o3", p(2.0, 8.0, 0.50, 2.0)),
    ("o4-mini", p(1.10, 4.40, 0.275, 1.10)),
    ("gemini-3-pro", p(2.0, 12.0, 0.20, 2.0)),
    ("gemini-2.5-pro", p(1.25, 10.0, 0.125, 1.25)),
    ("gemini-2.5-flash", p(0.30, 2.50, 0.03, 0.30)),
    ("gemini-2.5-flash-lite", p(0.10, 0.40, 0.01, 0.10)),
];

/// The built-in price of `model`, by its longest known prefix.
pub fn builtin_price(model: &str) -> Option<Pricing> {
    let m = model.to_ascii_lowercase();
    BUILTIN
        .iter()
        .filter(|(prefix, _)| m.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
}

/// The price of `model`: config's `[models.NAME] pricing`, else the built-in one.
pub fn price(file: &FileConfig, model: &str) -> Option<Pricing> {
    file.models
        .get(model)
        .and_then(|m| m.pricing)
        .or_else(|| builtin_price(model))
}

/// The price table of a session on these models.
pub fn table(file: &FileConfig, main: &str, fast: &str, compaction: &str) -> PriceTable {
    let mut table = PriceTable {
        main_model: main.to_owned(),
        fast_model: fast.to_owned(),
        compaction_model: compaction.to_owned(),
        ..PriceTable::default()
    };
    for model in [main, fast, compaction] {
        if let Some(price) = price(file, model) {
            table.prices.insert(model.to_owned(), price);
        }
    }
    table
}

/// The running session's table, set once at start-up, read where costs are reported
/// (`turn.completed`, the exit line) without threading it through every front end.
static SESSION: OnceLock<(PriceTable, WireApi)> = OnceLock::new();

pub fn set_session(table: PriceTable, wire: WireApi) {
    let _ = SESSION.set((table, wire));
}

pub fn session() -> Option<&'static PriceTable> {
    SESSION.get().map(|(table, _)| table)
}

/// A turn's cost in USD, main requests and the background work reported with it, when
/// every model involved has a price.
pub fn turn_cost(main: &UsageEvent, spent: &BackgroundBreakdown) -> Option<f64> {
    let (table, wire) = SESSION.get()?;
    let main = if main.is_empty() {
        0.0
    } else {
        table.main_cost(main, *wire)?
    };
    Some(round(main + table.background_cost(spent)?))
}

/// Micro-dollars are as fine as any provider bills.
pub fn round(usd: f64) -> f64 {
    (usd * 1e6).round() / 1e6
}

/// `session cost: $0.42` for the exit line, when the prices are known.
pub fn session_line(stats: &saki_read_ahead::ReadAheadStats) -> Option<String> {
    let cost = session()?.session_cost(&stats.main, &stats.background)?;
    Some(format!(
        "session cost: {}",
        saki_llm_worker::pricing::usd_label(cost)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_config_overrides() {
        assert_eq!(builtin_price("gpt-5-mini").map(|p| p.input), Some(0.25));
        assert_eq!(builtin_price("gpt-5").map(|p| p.input), Some(1.25));
        assert_eq!(
            builtin_price("claude-sonnet-4-5-20250929").map(|p| p.output),
            Some(15.0)
        );
        assert_eq!(builtin_price("qwen2.5-coder"), None);
        let file: FileConfig = toml::from_str(
            "[models.qwen]\npricing = { input = 0.1, output = 0.2 }\n\
             [models.gpt-5]\npricing = { input = 9.0, output = 9.0, cache_read = 1.0 }\n",
        )
        .unwrap();
        let table = table(&file, "gpt-5", "qwen", "qwen");
        assert_eq!(table.price("gpt-5").map(|p| p.input), Some(9.0));
        assert_eq!(table.price("qwen").map(|p| p.output), Some(0.2));
    }
}
