//! Flags, environment and config files resolved into one [`Resolved`] provider + model
//! choice (precedence in the parent module's documentation).

use super::*;

/// What the person asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub fast_model: Option<String>,
}

/// The fully resolved choice of provider and model.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub provider: String,
    /// No provider was named: `openai-compatible` was taken from a bare `--base-url`
    /// (or `SAKI_BASE_URL`), so what the server is is saki's to find out.
    pub provider_inferred: bool,
    pub wire_api: WireApi,
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub model: String,
    /// Context window and output limit (built-in, overridden by `[models.NAME]`).
    pub limits: ModelConfig,
    /// `max_output_tokens` set explicitly in config; sent with requests. Built-in limits
    /// are not sent: a local server may reject a bound beyond its context size.
    pub requested_max_output: Option<u32>,
    /// Cap on one tool's output and on an `@file` body attached to a prompt.
    pub tool_output_max_bytes: usize,
    /// `tool_output_max_bytes` came from config: the context window does not lower it.
    pub tool_output_set: bool,
    /// The model set for background work (`--fast-model`, `SAKI_FAST_MODEL`,
    /// `fast_model`; an empty value means the session's model), as set. Compaction
    /// summaries use only this one.
    pub fast_model_set: Option<String>,
    /// The fast model in force, which reading ahead (suggestions and speculations) runs
    /// on: `fast_model` as set, else the built-in provider's small model
    /// ([`builtin_fast_model`]), else the session's model.
    pub fast_model: String,
    /// `SAKI_SUGGESTIONS`, else `suggestions` from config (default true). The UI's
    /// `--no-suggestions` turns it off on top ([`suggestions_on`]).
    pub suggestions: bool,
    /// `[compaction]`, validated.
    pub compaction: CompactionConfig,
    /// `[undo]` from trusted config files.
    pub undo: crate::undo_cmd::UndoConfig,
    /// `sandbox` from trusted config files (the `--sandbox` flag wins over its mode).
    pub sandbox: SandboxTable,
    /// `[shell_environment]` from trusted config files.
    pub shell_environment: ShellEnvConfig,
    /// `[mcp_servers.NAME]` from trusted config files (see `saki_engine::mcp`).
    pub mcp_servers: BTreeMap<String, saki_mcp::ServerConfig>,
    /// `[web_fetch]` from trusted config files.
    pub web_fetch: WebFetchConfig,
    /// `lsp` (tables from trusted config files only; attached by the engine's session builder).
    pub lsp: Option<saki_lsp::LspSetting>,
    /// Every API key variable a provider is configured with: never given to commands.
    pub key_names: Vec<String>,
    /// Keys of untrusted config files that were ignored (`file: key`).
    pub ignored: Vec<String>,
    /// The workspace's own config file is trusted (set by `setup::resolve`).
    pub workspace_trusted: bool,
    /// The person chose not to trust this workspace (`untrusted_directories`).
    pub trust_refused: bool,
    /// `[models.NAME] context_window` was set: the server is not asked for its window.
    pub window_configured: bool,
    /// A GGUF file to serve locally for this session, and its context size.
    pub local_model: Option<PathBuf>,
    pub local_context: Option<u32>,
    /// What the provider's server said about itself (local servers only; see `prepare`).
    pub server: Option<saki_llm_client::server_info::ServerInfo>,
    /// `prewarm` from config (default true).
    pub prewarm: bool,
    /// `subagent_depth` from config (default 1).
    pub subagent_depth: u32,
    /// Recover tool calls written as text (`tool_call_recovery`, model over provider;
    /// `auto` means on for Chat Completions).
    pub tool_call_recovery: bool,
    /// `tool_calling`, model over provider (`Auto` unless config says otherwise); what the
    /// session uses is [`Resolved::tool_calling`].
    pub tool_calling_setting: ToolCallingSetting,
    /// The first response of a turn must be a tool call (`first_tool_call`, model over
    /// provider; default off).
    pub first_tool_call_required: bool,
    /// Offer only the core tools (`lean_tools`, model over provider).
    pub lean_tools: bool,
    /// `lean_tools` came from config, not from the provider's name: what a local server
    /// says about itself does not change it (`setup::apply_server_facts`).
    pub lean_tools_set: bool,
    /// `rewrite_edits` (model over provider; default on where small models run).
    pub rewrite_edits: bool,
    /// `[models.NAME] temperature`.
    pub temperature: Option<f32>,
    /// `[models.NAME] vision`, when set (see `crate::vision`).
    pub vision: Option<bool>,
    /// `max_background_shells`, when set.
    pub max_background_shells: Option<usize>,
    /// `notify` (default `auto`).
    pub notify: crate::interactive_extras::NotifySetting,
    /// `[otel]` from trusted config files.
    pub otel: crate::telemetry::OtelConfig,
}

/// With `tool_calling = "auto"`, a model with fewer parameters than this, on a local
/// server that says how many it has, gets its tools in the prompt: Qwen2.5-Coder-0.5B
/// finished 5 of 12 everyday tasks with its template's tool format and 11 of 12 prompted
/// (crate README). Models from about 7B follow their template's format.
pub const PROMPTED_BELOW_PARAMETERS: u64 = 4_000_000_000;

impl Resolved {
    /// The local server said its model has fewer than [`PROMPTED_BELOW_PARAMETERS`]
    /// parameters: such a model samples greedily, and its turns change only what their
    /// prompt asks for (`saki_tools::intent`).
    pub fn small_local_model(&self) -> bool {
        self.server
            .and_then(|s| s.parameters)
            .is_some_and(|n| n < PROMPTED_BELOW_PARAMETERS)
    }

    /// How tools reach the model: `tool_calling` from config, or for `auto` what the
    /// local server said (a template without tools, or a small model: prompted).
    pub fn tool_calling(&self) -> saki_llm_client::ToolCalling {
        use saki_llm_client::ToolCalling;
        match self.tool_calling_setting {
            ToolCallingSetting::Native => ToolCalling::Native,
            ToolCallingSetting::Prompted => ToolCalling::Prompted,
            ToolCallingSetting::Constrained => ToolCalling::Constrained,
            ToolCallingSetting::Auto => match self.server {
                Some(server)
                    if server.template_tools == Some(false)
                        || server
                            .parameters
                            .is_some_and(|n| n < PROMPTED_BELOW_PARAMETERS) =>
                {
                    ToolCalling::Prompted
                }
                _ => ToolCalling::Native,
            },
        }
    }

    /// Output tokens kept free in the window: the requested bound, else the model's limit
    /// but never more than a quarter of the window (a small local window must stay usable).
    pub fn reserved_output(&self) -> u64 {
        let window = self.limits.context_window.unwrap_or(0);
        match self.requested_max_output {
            Some(n) => u64::from(n).min(window / 2),
            None => u64::from(self.limits.max_output_tokens.unwrap_or(0)).min(window / 4),
        }
    }
}

/// An on/off environment value; `None` when it is neither.
/// The environment switch for suggestions and speculation in the UI.
pub const SUGGESTIONS_ENV: &str = "SAKI_SUGGESTIONS";

fn switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "0" | "false" | "off" | "no" => Some(false),
        "1" | "true" | "on" | "yes" => Some(true),
        _ => None,
    }
}

/// Whether the UI suggests and speculates: `--no-suggestions` and `SAKI_SUGGESTIONS=0`
/// each turn it off whatever else says (so `SAKI_SUGGESTIONS=0` overrides both the flag's
/// absence and `suggestions = true`); `SAKI_SUGGESTIONS=1` overrides `suggestions = false`.
pub fn suggestions_on(resolved: &Resolved, no_suggestions_flag: bool) -> bool {
    resolved.suggestions && !no_suggestions_flag
}

/// Whether the server behind a provider is asked what it is: servers said to be
/// llama.cpp or Ollama, and one reached by a bare `--base-url` (no provider named) on
/// this machine or a private network. saki then behaves the same whichever way the
/// person reached a local server. A public host, or one the person declared a generic
/// OpenAI-compatible server, gets no request it did not ask for (a gateway may bill it,
/// a replay server serves it).
pub fn asks_server(provider: &str, inferred: bool, wire_api: WireApi, base_url: &str) -> bool {
    matches!(provider, "llamacpp" | "ollama")
        || (inferred
            && wire_api == WireApi::Chat
            && saki_llm_client::server_info::is_private_url(base_url))
}

pub fn resolve(
    file: &FileConfig,
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ConfigError> {
    let env_nonempty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let base_url_override = overrides
        .base_url
        .clone()
        .or_else(|| env_nonempty("SAKI_BASE_URL"));
    let named = overrides
        .provider
        .clone()
        .or_else(|| env_nonempty("SAKI_PROVIDER"))
        .or_else(|| file.provider.clone());
    let provider_inferred = named.is_none() && base_url_override.is_some();
    let name = match named {
        Some(name) => name,
        None if base_url_override.is_some() => "openai-compatible".to_owned(),
        None => detect_from_keys(env_nonempty)?,
    };
    let mut provider = builtin(&name).unwrap_or_default();
    match file.providers.get(&name) {
        Some(user) => overlay_provider(&mut provider, user.clone()),
        None if builtin(&name).is_none() => {
            let mut known: Vec<String> = BUILTIN_PROVIDERS.iter().map(|s| s.to_string()).collect();
            known.extend(file.providers.keys().cloned());
            return Err(ConfigError::UnknownProvider {
                name,
                known: known.join(", "),
            });
        }
        None => {}
    }
    let wire_api = provider.wire_api.unwrap_or(WireApi::Chat);
    let base_url = base_url_override
        .or(provider.base_url.clone())
        .ok_or_else(|| ConfigError::MissingBaseUrl {
            provider: name.clone(),
        })?;
    let user_provider_model = file.providers.get(&name).and_then(|p| p.model.clone());
    // The top-level `model` belongs to the top-level `provider` (or to any, if unset).
    let file_model = file
        .model
        .clone()
        .filter(|_| file.provider.as_deref().is_none_or(|p| p == name));
    let model = overrides
        .model
        .clone()
        .or_else(|| env_nonempty("SAKI_MODEL"))
        .or(user_provider_model)
        .or(file_model)
        .or_else(|| builtin(&name).and_then(|b| b.model));
    // A server saki asks about itself names its model: left empty here, it is taken
    // from the server's model list once the session starts (`open`).
    let model = match model {
        Some(model) => model,
        None if asks_server(&name, provider_inferred, wire_api, &base_url) => String::new(),
        None => {
            return Err(ConfigError::MissingModel {
                provider: name.clone(),
            })
        }
    };
    let api_key = provider.env_key.as_deref().and_then(&env_nonempty);
    if api_key.is_none() && provider.requires_key.unwrap_or(false) {
        let env_key = provider.env_key.clone().unwrap_or_default();
        return Err(ConfigError::MissingKey {
            provider: name,
            env_key,
        });
    }
    let model_name = model.clone();
    let mut limits = builtin_model(&model);
    let requested_max_output = file.models.get(&model).and_then(|m| m.max_output_tokens);
    if let Some(user) = file.models.get(&model) {
        limits.context_window = user.context_window.or(limits.context_window);
        limits.max_output_tokens = user.max_output_tokens.or(limits.max_output_tokens);
    }
    if let Some(t) = file.compaction.threshold {
        if !(t > 0.0 && t <= 1.0) {
            return Err(ConfigError::Invalid {
                key: "compaction.threshold",
                value: t.to_string(),
                expected:
                    "a share of the usable window, greater than 0 and at most 1 (default 0.85)",
            });
        }
    }
    let fast_set = overrides
        .fast_model
        .clone()
        .or_else(|| env_nonempty("SAKI_FAST_MODEL"))
        .or_else(|| file.fast_model.clone());
    let fast_model_set = fast_set.clone().filter(|m| !m.trim().is_empty());
    let fast_model = match &fast_set {
        Some(_) => fast_model_set.clone(),
        // A built-in provider (also adjusted in config) speaking its own protocol.
        None => builtin_fast_model(&name)
            .filter(|_| builtin(&name).and_then(|b| b.wire_api) == Some(wire_api))
            .map(str::to_owned),
    }
    .unwrap_or_else(|| model.clone());
    let suggestions = match env_nonempty(SUGGESTIONS_ENV) {
        Some(value) => switch(&value).ok_or(ConfigError::Invalid {
            key: SUGGESTIONS_ENV,
            value,
            expected: "0 or 1 (also false/true, off/on, no/yes)",
        })?,
        None => file.suggestions.unwrap_or(true),
    };
    let local_kind = name.clone();
    Ok(Resolved {
        provider: name,
        provider_inferred,
        wire_api,
        base_url,
        api_key,
        headers: provider.headers.into_iter().collect(),
        model,
        limits,
        requested_max_output,
        // Clamped: any config, a workspace's own too, could otherwise make one tool
        // call hold gigabytes (see TOOL_OUTPUT_HARD_MAX_BYTES for the bound's reason).
        tool_output_max_bytes: file
            .tool_output_max_bytes
            .unwrap_or(saki_tools::common::TOOL_OUTPUT_MAX_BYTES)
            .min(saki_tools::common::TOOL_OUTPUT_HARD_MAX_BYTES),
        tool_output_set: file.tool_output_max_bytes.is_some(),
        fast_model_set,
        fast_model,
        suggestions,
        compaction: file.compaction.clone(),
        undo: file.undo.clone(),
        sandbox: file
            .sandbox
            .clone()
            .map(SandboxConfig::table)
            .unwrap_or_default(),
        shell_environment: file.shell_environment.clone().unwrap_or_default(),
        mcp_servers: file.mcp_servers.clone(),
        web_fetch: file.web_fetch.clone().unwrap_or_default(),
        lsp: file.lsp.clone(),
        key_names: key_names(file),
        ignored: file.ignored.clone(),
        workspace_trusted: false,
        trust_refused: false,
        window_configured: file
            .models
            .get(&model_name)
            .is_some_and(|m| m.context_window.is_some()),
        local_model: file.local_model.clone(),
        local_context: file.local_context,
        server: None,
        prewarm: file.prewarm.unwrap_or(true),
        subagent_depth: file.subagent_depth.unwrap_or(1),
        temperature: file.models.get(&model_name).and_then(|m| m.temperature),
        vision: file.models.get(&model_name).and_then(|m| m.vision),
        max_background_shells: file.max_background_shells,
        notify: file.notify.unwrap_or_default(),
        otel: file.otel.clone().unwrap_or_default(),
        tool_call_recovery: match file
            .models
            .get(&model_name)
            .and_then(|m| m.tool_call_recovery)
            .or(provider.tool_call_recovery)
        {
            Some(Recovery::Off) => false,
            Some(Recovery::Auto) | None => wire_api == WireApi::Chat,
        },
        tool_calling_setting: file
            .models
            .get(&model_name)
            .and_then(|m| m.tool_calling)
            .or(provider.tool_calling)
            .unwrap_or(ToolCallingSetting::Auto),
        first_tool_call_required: match file
            .models
            .get(&model_name)
            .and_then(|m| m.first_tool_call)
            .or(provider.first_tool_call)
        {
            Some(FirstToolCall::Required) => true,
            Some(FirstToolCall::Auto) => false,
            None => false,
        },
        lean_tools: file
            .models
            .get(&model_name)
            .and_then(|m| m.lean_tools)
            .or(provider.lean_tools)
            .unwrap_or(matches!(local_kind.as_str(), "llamacpp" | "ollama")),
        lean_tools_set: file
            .models
            .get(&model_name)
            .and_then(|m| m.lean_tools)
            .or(provider.lean_tools)
            .is_some(),
        rewrite_edits: file
            .models
            .get(&model_name)
            .and_then(|m| m.rewrite_edits)
            .or(provider.rewrite_edits)
            .unwrap_or(true),
    })
}

/// The API key variables of the built-in and configured providers.
pub(crate) fn key_names(file: &FileConfig) -> Vec<String> {
    let mut names: Vec<String> = BUILTIN_PROVIDERS
        .iter()
        .filter_map(|name| builtin(name)?.env_key)
        .chain(file.providers.values().filter_map(|p| p.env_key.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn detect_from_keys(env: impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let found: Vec<&str> = [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ]
    .into_iter()
    .filter(|(_, key)| env(key).is_some())
    .map(|(name, _)| name)
    .collect();
    match found.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(ConfigError::NoProvider(no_provider_help())),
        several => Err(ConfigError::NoProvider(format!(
            "API keys for several providers are set ({}); choose one with --provider, SAKI_PROVIDER, or `provider = \"...\"` in config.toml",
            several.join(", ")
        ))),
    }
}
