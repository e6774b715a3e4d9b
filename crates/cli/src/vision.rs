//! Whether the session's model reads images. Sending one to a model that does not is a
//! provider error on every later request (the image stays in history), so saki sends
//! images only where it has reason to think they are read, and otherwise says why it
//! did not (an alert for `@path`, a note in `read_file`'s result):
//!
//! 1. `[models.NAME] vision = true | false` in config wins.
//! 2. A local server that says: llama.cpp (`/props` `modalities.vision`: a projector is
//!    loaded) or Ollama (`/api/show` `capabilities` has `vision`).
//! 3. The built-in list below: model families known to read images.
//! 4. Anything else is taken not to: a guess the other way would fail the session.
//!
//! A provider's refusal that gets through anyway becomes a clear error naming the config
//! key (`saki-llm-client`'s `ClientError::from_http`).

use crate::config::Resolved;

/// Whether images go to the model of `resolved`.
pub fn reads_images(resolved: &Resolved) -> bool {
    resolved
        .vision
        .or(resolved.server.and_then(|s| s.vision))
        .unwrap_or_else(|| builtin_vision(&resolved.model))
}

/// Model families known to read images, by name. Gateways' vendor prefixes
/// (`openai/gpt-4o`, `anthropic/claude-sonnet-4`) and Ollama tags (`gemma3:4b`) are
/// looked through.
pub fn builtin_vision(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
    let has = |parts: &[&str]| parts.iter().any(|p| name.contains(p));
    if starts(&["claude-"]) {
        return !starts(&["claude-1", "claude-2", "claude-instant"]);
    }
    if starts(&["gemini-"]) {
        return !starts(&["gemini-1.0", "gemini-pro"]);
    }
    if starts(&["o1-mini", "o1-preview", "o3-mini"]) {
        return false;
    }
    starts(&[
        "gpt-4o",
        "chatgpt-4o",
        "gpt-4.1",
        "gpt-4.5",
        "gpt-4-turbo",
        "gpt-4-vision",
        "gpt-5",
        "o1",
        "o3",
        "o4-mini",
        "grok-4",
        "pixtral",
        "llava",
        "bakllava",
        "moondream",
        "minicpm-v",
        "gemma-3",
        "gemma3",
        "llama-4",
        "llama4",
    ]) || has(&["-vl", "vision"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vision_families_and_others() {
        for yes in [
            "claude-sonnet-4-5",
            "claude-3-5-haiku-latest",
            "anthropic/claude-opus-4",
            "gpt-4o-mini",
            "gpt-4.1",
            "gpt-5",
            "gpt-5-codex",
            "o3",
            "o4-mini",
            "gemini-2.5-flash",
            "qwen2.5-vl-7b-instruct",
            "Qwen3-VL-8B",
            "llama-3.2-11b-vision-instruct",
            "gemma3:4b",
            "openrouter/openai/gpt-4o",
        ] {
            assert!(builtin_vision(yes), "{yes}");
        }
        for no in [
            "gpt-3.5-turbo",
            "o3-mini",
            "o1-mini",
            "claude-2.1",
            "gemini-1.0-pro",
            "qwen3-coder-30b",
            "deepseek-chat",
            "llama-3.1-8b-instruct",
            "gpt-oss-20b",
            "main",
        ] {
            assert!(!builtin_vision(no), "{no}");
        }
    }
}
