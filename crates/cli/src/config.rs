//! Configuration: built-in providers, TOML files (global, then workspace), environment
//! and flags, resolved into one [`Resolved`] provider + model choice.
//!
//! Precedence, strongest first: flags, `SAKI_*` environment, `.saki/config.toml` in the
//! workspace, `$XDG_CONFIG_HOME/saki/config.toml`, built-in defaults.

use saki_llm_client::WireApi;
use saki_llm_worker::hook::{HookConfig, HookEvent};
use saki_sandbox::shell_env::ShellEnvConfig;
use saki_sandbox::SandboxMode;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[path = "config_builtin.rs"]
mod builtin;
#[path = "config_files.rs"]
mod files;
use builtin::builtin;
pub use builtin::{builtin_fast_model, builtin_model};
pub use files::{config_paths, global_config_dir, load_file, load_files, no_provider_help};
#[path = "config_resolve.rs"]
mod resolve;
pub(crate) use resolve::key_names;
pub use resolve::{asks_server, resolve, suggestions_on, Overrides, Resolved};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{0}")]
    NoProvider(String),
    #[error("unknown provider `{name}`. Known providers: {known}. Define your own under [providers.{name}] in config.toml.")]
    UnknownProvider { name: String, known: String },
    #[error("provider `{provider}` needs a base URL: pass --base-url, set SAKI_BASE_URL, or set base_url under [providers.{provider}]")]
    MissingBaseUrl { provider: String },
    #[error("provider `{provider}` has no model: pass --model, set SAKI_MODEL, or set model under [providers.{provider}]")]
    MissingModel { provider: String },
    #[error("invalid setting {key} = {value}: {expected}")]
    Invalid {
        key: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("provider `{provider}` needs an API key: set the environment variable {env_key}")]
    MissingKey { provider: String, env_key: String },
}

/// One `[providers.NAME]` table (also the shape of the built-ins).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub wire_api: Option<WireApi>,
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    pub env_key: Option<String>,
    /// Whether a missing key is an error (default: true when `env_key` is set by a built-in
    /// cloud provider, false for user-defined and local providers).
    pub requires_key: Option<bool>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Default model for this provider.
    pub model: Option<String>,
    /// Recover tool calls written as text: `auto` (default: on for Chat Completions
    /// servers) or `off`.
    pub tool_call_recovery: Option<Recovery>,
    /// `tool_calling = "auto" | "native" | "prompted"`: offer tools in the request's tool
    /// list, or in the system prompt with calls written as JSON text (default: auto,
    /// prompted for a small model on a local server; see `Resolved::tool_calling`).
    pub tool_calling: Option<ToolCallingSetting>,
    /// `first_tool_call = "required" | "auto"`: must the first response of a turn be a
    /// tool call (default: auto)?
    pub first_tool_call: Option<FirstToolCall>,
    /// Offer only the core tools, without `update_plan` and `web_fetch` (default: on for
    /// the local servers `llamacpp` and `ollama`, whose small models pick worse from a
    /// longer list and read every schema token slowly).
    pub lean_tools: Option<bool>,
    /// Where small local models run, make their `edit` and `write_file` of a small file
    /// from the file's whole new text, asked for apart (default: on; see
    /// `docs/small-models.md`).
    pub rewrite_edits: Option<bool>,
}

/// `first_tool_call = "required" | "auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FirstToolCall {
    Required,
    Auto,
}

/// `tool_calling = "auto" | "native" | "prompted" | "constrained"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallingSetting {
    Auto,
    Native,
    Prompted,
    /// Prompted, with each reply held by the server to a call or an answer (a JSON schema
    /// as `response_format`; llama.cpp and Ollama).
    Constrained,
}

/// `tool_call_recovery = "auto" | "off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    Auto,
    Off,
}

/// One `[models.NAME]` table.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    /// Wins over the provider's `tool_call_recovery`.
    pub tool_call_recovery: Option<Recovery>,
    /// Wins over the provider's `tool_calling`.
    pub tool_calling: Option<ToolCallingSetting>,
    /// Wins over the provider's `first_tool_call`.
    pub first_tool_call: Option<FirstToolCall>,
    /// Wins over the provider's `lean_tools`.
    pub lean_tools: Option<bool>,
    /// Wins over the provider's `rewrite_edits`.
    pub rewrite_edits: Option<bool>,
    /// Sampling temperature sent with every request (default: the provider's own).
    pub temperature: Option<f32>,
    /// The model reads images (default: what a local server reports, else the built-in
    /// list in `vision.rs`).
    pub vision: Option<bool>,
    /// USD per million tokens (`{ input, output, cache_read, cache_write }`), over the
    /// built-in prices (`pricing.rs`).
    pub pricing: Option<saki_llm_worker::pricing::Pricing>,
}

/// The `[compaction]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// Compact automatically: summaries when the context fills, and pruning after turns
    /// (default true).
    pub auto: Option<bool>,
    /// Clear old tool output at all, automatically or by hand (default true).
    pub prune: Option<bool>,
    /// Share of the usable window (context window minus reserved output) at which to act
    /// (default 0.85).
    pub threshold: Option<f64>,
    /// The model that writes summaries (default: `fast_model`, else the session's model).
    pub model: Option<String>,
    /// Token budget for files re-read after a summary (default 8000; 0 turns it off).
    pub auto_read_tokens: Option<usize>,
}

impl CompactionConfig {
    fn overlay(&mut self, other: CompactionConfig) {
        self.auto = other.auto.or(self.auto);
        self.prune = other.prune.or(self.prune);
        self.threshold = other.threshold.or(self.threshold);
        self.model = other.model.or(self.model.take());
        self.auto_read_tokens = other.auto_read_tokens.or(self.auto_read_tokens);
    }
}

/// The file format of `config.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Cap on every tool's output and an `@file` body attached to a prompt (default
    /// 16 KiB, at most 1 MiB).
    pub tool_output_max_bytes: Option<usize>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The model for background work: summaries, suggestions, speculation.
    pub fast_model: Option<String>,
    /// A GGUF file to serve with llama.cpp for the session (`--local`); trusted files only.
    pub local_model: Option<PathBuf>,
    /// Context size for that server (default 16384).
    pub local_context: Option<u32>,
    /// Predict the next prompt and run it speculatively in the interactive UI (default on).
    pub suggestions: Option<bool>,
    /// Fill a local server's prompt cache with the base prompt while the first prompt is
    /// typed (default on).
    pub prewarm: Option<bool>,
    /// Levels of subagents (`agent` tool) that may run: 1 (default) lets the session
    /// start subagents that start none; 0 turns the tool off.
    pub subagent_depth: Option<u32>,
    /// Background shell commands (`shell` with `background: true`) running at once
    /// (default 4; 0 turns them off).
    pub max_background_shells: Option<usize>,
    /// Desktop notifications when a turn ends or an approval waits while the terminal is
    /// not in focus: `auto` (default) or `off`.
    pub notify: Option<crate::interactive_extras::NotifySetting>,
    /// `[otel]`: OpenTelemetry traces; honoured from trusted files only.
    pub otel: Option<crate::telemetry::OtelConfig>,
    #[serde(default)]
    pub compaction: CompactionConfig,
    /// `[undo]`: the checkpoint store's bounds; honoured from trusted files only.
    #[serde(default)]
    pub undo: crate::undo_cmd::UndoConfig,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// `[[hooks.EVENT]]` tables; honoured from trusted files only.
    #[serde(default)]
    pub hooks: BTreeMap<HookEvent, Vec<HookConfig>>,
    /// `sandbox = "MODE"`, or a `[sandbox]` table; honoured from trusted files only.
    pub sandbox: Option<SandboxConfig>,
    /// `[shell_environment]`; honoured from trusted files only.
    pub shell_environment: Option<ShellEnvConfig>,
    /// `[mcp_servers.NAME]`; honoured from trusted files only (they start programs).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, saki_mcp::ServerConfig>,
    /// `[web_fetch]`; honoured from trusted files only (it decides what the model may
    /// fetch unasked, and whether it may reach this machine's network).
    pub web_fetch: Option<WebFetchConfig>,
    /// `lsp = false`, or `[lsp.NAME]` language servers; the tables are honoured from
    /// trusted files only (they start programs), `lsp = false` from any.
    pub lsp: Option<saki_lsp::LspSetting>,
    /// Workspaces whose own `.saki/config.toml` is trusted (`saki trust`); honoured from
    /// the global file only.
    #[serde(default)]
    pub trusted_directories: Vec<PathBuf>,
    /// Workspaces the person chose not to trust (the UI does not ask again); global only.
    #[serde(default)]
    pub untrusted_directories: Vec<PathBuf>,
    /// Keys of untrusted files that were ignored, as `file: key`.
    #[serde(skip)]
    pub ignored: Vec<String>,
}

/// `[web_fetch]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebFetchConfig {
    /// Domains fetched without asking in `auto-edit` (each covers its subdomains).
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// Let `web_fetch` reach loopback, private and link-local addresses (default false).
    pub allow_private_addresses: Option<bool>,
    /// Seconds a fetch may take (default 30).
    pub timeout_secs: Option<u64>,
}

impl WebFetchConfig {
    pub fn settings(&self) -> saki_tools::web_fetch::WebSettings {
        let defaults = saki_tools::web_fetch::WebSettings::default();
        saki_tools::web_fetch::WebSettings {
            allowed_domains: self.allowed_domains.clone(),
            allow_private_addresses: self.allow_private_addresses.unwrap_or(false),
            timeout: self.timeout_secs.map_or(defaults.timeout, |s| {
                std::time::Duration::from_secs(s.clamp(1, 600))
            }),
            max_body_bytes: defaults.max_body_bytes,
        }
    }
}

/// `sandbox = "workspace-write"`, or the table form.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SandboxConfig {
    Mode(SandboxMode),
    Table(SandboxTable),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxTable {
    pub mode: Option<SandboxMode>,
    /// Allow shell commands TCP connections (default false).
    pub network: Option<bool>,
    /// More paths shell commands may not read (`~/` is the home directory).
    #[serde(default)]
    pub deny_read: Vec<String>,
    /// UNIX sockets approved commands may connect to: `false` (default: none), `true`
    /// (any), or a list of socket paths. Commands that run unasked never get one.
    pub unix_sockets: Option<saki_sandbox::UnixSockets>,
}

impl SandboxConfig {
    fn table(self) -> SandboxTable {
        match self {
            SandboxConfig::Mode(mode) => SandboxTable {
                mode: Some(mode),
                ..Default::default()
            },
            SandboxConfig::Table(t) => t,
        }
    }
}

impl FileConfig {
    /// Layers `other` over `self`: its scalars win, its tables merge field by field.
    pub fn overlay(&mut self, other: FileConfig) {
        if other.provider.is_some() {
            self.provider = other.provider;
        }
        if other.tool_output_max_bytes.is_some() {
            self.tool_output_max_bytes = other.tool_output_max_bytes;
        }
        if other.model.is_some() {
            self.model = other.model;
        }
        if other.fast_model.is_some() {
            self.fast_model = other.fast_model;
        }
        if other.suggestions.is_some() {
            self.suggestions = other.suggestions;
        }
        if other.prewarm.is_some() {
            self.prewarm = other.prewarm;
        }
        if other.subagent_depth.is_some() {
            self.subagent_depth = other.subagent_depth;
        }
        if other.max_background_shells.is_some() {
            self.max_background_shells = other.max_background_shells;
        }
        if other.notify.is_some() {
            self.notify = other.notify;
        }
        if other.otel.is_some() {
            self.otel = other.otel;
        }
        if other.local_model.is_some() {
            self.local_model = other.local_model;
        }
        if other.local_context.is_some() {
            self.local_context = other.local_context;
        }
        self.compaction.overlay(other.compaction);
        self.undo.overlay(other.undo);
        for (name, p) in other.providers {
            let slot = self.providers.entry(name).or_default();
            overlay_provider(slot, p);
        }
        for (event, hooks) in other.hooks {
            self.hooks.entry(event).or_default().extend(hooks);
        }
        if let Some(sandbox) = other.sandbox {
            let mut merged = self
                .sandbox
                .take()
                .map(SandboxConfig::table)
                .unwrap_or_default();
            let sandbox = sandbox.table();
            merged.mode = sandbox.mode.or(merged.mode);
            merged.network = sandbox.network.or(merged.network);
            merged.unix_sockets = sandbox.unix_sockets.or(merged.unix_sockets);
            merged.deny_read.extend(sandbox.deny_read);
            self.sandbox = Some(SandboxConfig::Table(merged));
        }
        if other.shell_environment.is_some() {
            self.shell_environment = other.shell_environment;
        }
        // A workspace's table replaces the global one of the same name whole.
        self.mcp_servers.extend(other.mcp_servers);
        if other.web_fetch.is_some() {
            self.web_fetch = other.web_fetch;
        }
        self.lsp = overlay_lsp(self.lsp.take(), other.lsp);
        self.trusted_directories.extend(other.trusted_directories);
        self.untrusted_directories
            .extend(other.untrusted_directories);
        self.ignored.extend(other.ignored);
        for (name, m) in other.models {
            let slot = self.models.entry(name).or_default();
            slot.context_window = m.context_window.or(slot.context_window);
            slot.max_output_tokens = m.max_output_tokens.or(slot.max_output_tokens);
            slot.tool_call_recovery = m.tool_call_recovery.or(slot.tool_call_recovery);
            slot.tool_calling = m.tool_calling.or(slot.tool_calling);
            slot.first_tool_call = m.first_tool_call.or(slot.first_tool_call);
            slot.lean_tools = m.lean_tools.or(slot.lean_tools);
            slot.rewrite_edits = m.rewrite_edits.or(slot.rewrite_edits);
            slot.temperature = m.temperature.or(slot.temperature);
            slot.vision = m.vision.or(slot.vision);
            slot.pricing = m.pricing.or(slot.pricing);
        }
    }
}

/// `lsp = false` anywhere turns language servers off; tables merge by name (a later
/// file's table of a name replaces an earlier one whole).
fn overlay_lsp(
    mine: Option<saki_lsp::LspSetting>,
    other: Option<saki_lsp::LspSetting>,
) -> Option<saki_lsp::LspSetting> {
    use saki_lsp::LspSetting::{Servers, Switch};
    match (mine, other) {
        (Some(Switch(false)), _) | (_, Some(Switch(false))) => Some(Switch(false)),
        (Some(Servers(mut a)), Some(Servers(b))) => {
            a.extend(b);
            Some(Servers(a))
        }
        (Some(Servers(a)), _) => Some(Servers(a)),
        (_, other) => other,
    }
}

fn overlay_provider(slot: &mut ProviderConfig, p: ProviderConfig) {
    slot.wire_api = p.wire_api.or(slot.wire_api);
    slot.base_url = p.base_url.or(slot.base_url.take());
    slot.env_key = p.env_key.or(slot.env_key.take());
    slot.requires_key = p.requires_key.or(slot.requires_key);
    slot.model = p.model.or(slot.model.take());
    slot.headers.extend(p.headers);
    slot.tool_call_recovery = p.tool_call_recovery.or(slot.tool_call_recovery);
    slot.tool_calling = p.tool_calling.or(slot.tool_calling);
    slot.first_tool_call = p.first_tool_call.or(slot.first_tool_call);
    slot.lean_tools = p.lean_tools.or(slot.lean_tools);
    slot.rewrite_edits = p.rewrite_edits.or(slot.rewrite_edits);
}

pub const BUILTIN_PROVIDERS: [&str; 6] = [
    "openai",
    "anthropic",
    "gemini",
    "openai-compatible",
    "ollama",
    "llamacpp",
];

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
