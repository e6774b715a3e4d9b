//! The built-in providers and what saki knows of well-known models, beneath every
//! config file.

use super::{ModelConfig, ProviderConfig};
use saki_llm_client::WireApi;
use std::collections::BTreeMap;

pub(super) fn builtin(name: &str) -> Option<ProviderConfig> {
    let p = |wire, url: Option<&str>, key: Option<&str>, requires_key, model: Option<&str>| {
        ProviderConfig {
            wire_api: Some(wire),
            base_url: url.map(str::to_owned),
            env_key: key.map(str::to_owned),
            requires_key: Some(requires_key),
            headers: BTreeMap::new(),
            model: model.map(str::to_owned),
            tool_call_recovery: None,
            tool_calling: None,
            first_tool_call: None,
            lean_tools: None,
            rewrite_edits: None,
        }
    };
    Some(match name {
        "openai" => p(
            WireApi::Responses,
            Some("https://api.openai.com/v1"),
            Some("OPENAI_API_KEY"),
            true,
            Some("gpt-5"),
        ),
        "anthropic" => p(
            WireApi::Anthropic,
            Some("https://api.anthropic.com"),
            Some("ANTHROPIC_API_KEY"),
            true,
            Some("claude-sonnet-4-5"),
        ),
        "gemini" => p(
            WireApi::Gemini,
            Some("https://generativelanguage.googleapis.com"),
            Some("GEMINI_API_KEY"),
            true,
            Some("gemini-2.5-flash"),
        ),
        "openai-compatible" => p(WireApi::Chat, None, Some("OPENAI_API_KEY"), false, None),
        "ollama" => p(
            WireApi::Chat,
            Some("http://localhost:11434/v1"),
            None,
            false,
            None,
        ),
        // llama-server serves whatever model it loaded and ignores the name.
        "llamacpp" => p(
            WireApi::Chat,
            Some("http://localhost:8080/v1"),
            None,
            false,
            Some("default"),
        ),
        _ => return None,
    })
}

/// Built-in context windows for well-known model families; unknown models get a
/// conservative default. Config `[models.NAME]` overrides these.
/// The model a built-in cloud provider reads ahead with when no `fast_model` is set: the
/// provider's small model. Cheaper than the main model for a typical session even though
/// it shares no prompt cache with it (`cargo bench -p saki-read-ahead --bench
/// fast_model_cost`; figures in the read-ahead README). Local servers have none: they serve
/// one model.
pub fn builtin_fast_model(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some("claude-haiku-4-5"),
        "openai" => Some("gpt-5-mini"),
        "gemini" => Some("gemini-2.5-flash"),
        _ => None,
    }
}

pub fn builtin_model(model: &str) -> ModelConfig {
    let m = model.to_ascii_lowercase();
    let (context_window, max_output_tokens) = if m.starts_with("claude") {
        (200_000, 32_000)
    } else if m.starts_with("gemini") {
        (1_048_576, 65_536)
    } else if m.starts_with("gpt-5") {
        (400_000, 128_000)
    } else if m.starts_with("gpt-4.1") {
        (1_047_576, 32_768)
    } else if m.starts_with("gpt-4o") || m.starts_with("o3") || m.starts_with("o4") {
        (128_000, 16_384)
    } else {
        (32_768, 8_192)
    };
    ModelConfig {
        context_window: Some(context_window),
        max_output_tokens: Some(max_output_tokens),
        tool_call_recovery: None,
        tool_calling: None,
        first_tool_call: None,
        lean_tools: None,
        rewrite_edits: None,
        temperature: None,
        vision: None,
        pricing: None,
    }
}
