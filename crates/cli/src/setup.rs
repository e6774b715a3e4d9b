//! Config turned into what the engine's session builder takes: config resolution, the
//! client's and the shell's settings, the compaction policy, the engine's settings and
//! `/model`'s resolver; and the signals that end a run.

use crate::args::ProviderArgs;
use crate::config::{self, ConfigError, Overrides, Resolved};
use crate::exit::ExitCode;
use nix::sys::signal::Signal;
use saki_engine::{ModelResolver, Settings, ShellSpec};
use saki_llm_client::{CancellationToken, ClientConfig, ThinkingConfig};
use saki_llm_worker::hook::Hooks;
use saki_llm_worker::WorkerConfig;
use saki_pod::CompactionSettings;
use saki_sandbox::{SandboxMode, UnixSockets};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

/// The config files for `workspace`, read: the global ones alone, and all of them with
/// the workspace's own file (the last) honoured only when the global ones trust it.
pub struct ConfigFiles {
    pub global: config::FileConfig,
    pub files: config::FileConfig,
    pub workspace_trusted: bool,
}

pub fn config_files(workspace: &std::path::Path) -> Result<ConfigFiles, ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    let paths = config::config_paths(workspace, &env);
    let global_count = paths.len().saturating_sub(1);
    let global = config::load_files(&paths[..global_count], global_count)?;
    let workspace_trusted = crate::trust::is_trusted(&global.trusted_directories, workspace);
    // The global files are read once; the workspace's own (the last) goes on top.
    let mut files = global.clone();
    for path in &paths[global_count..] {
        if let Some(file) = config::load_file(path, global_count == 0, workspace_trusted)? {
            files.overlay(file);
        }
    }
    Ok(ConfigFiles {
        global,
        files,
        workspace_trusted,
    })
}

/// Resolves provider and model from flags, environment and config files, and loads the
/// hooks. `session` is the provider and model a resumed session used, taken when no flag
/// names them.
pub fn resolve(
    workspace: &std::path::Path,
    args: &ProviderArgs,
    session: Option<(&str, &str)>,
) -> Result<(Resolved, Hooks), ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    let ConfigFiles {
        global,
        files,
        workspace_trusted,
    } = config_files(workspace)?;
    let flags_name_one = args.provider.is_some() || args.model.is_some();
    let local_model = args.local.clone().or(files.local_model.clone());
    let (session_provider, session_model) = match session {
        Some((p, m)) if !flags_name_one => (Some(p.to_owned()), Some(m.to_owned())),
        _ => (None, None),
    };
    let mut overrides = Overrides {
        provider: args.provider.clone().or(session_provider),
        model: args.model.clone().or(session_model),
        base_url: args.base_url.clone(),
        fast_model: args.fast_model.clone(),
    };
    if local_model.is_some() {
        // The session's own server: its address is known once it runs (`prepare`).
        overrides.provider = Some("llamacpp".to_owned());
        overrides.model = Some(saki_engine::local_server::MODEL_ALIAS.to_owned());
    }
    let mut resolved = config::resolve(&files, &overrides, &env)?;
    let compaction_model = resolved.compaction.model.clone();
    let compaction_model = compaction_model
        .or(resolved.fast_model_set.clone())
        .unwrap_or_else(|| resolved.model.clone());
    crate::pricing::set_session(
        crate::pricing::table(
            &files,
            &resolved.model,
            &resolved.fast_model,
            &compaction_model,
        ),
        resolved.wire_api,
    );
    resolved.local_model = local_model;
    resolved.workspace_trusted = workspace_trusted;
    resolved.trust_refused = global.untrusted_directories.iter().any(|d| {
        d.canonicalize()
            .is_ok_and(|d| workspace.canonicalize().is_ok_and(|w| w == d))
    });
    let mut hooks = Hooks::new(workspace.to_path_buf());
    for (event, list) in files.hooks {
        for hook in list {
            hooks.add(event, hook);
        }
    }
    Ok((resolved, hooks))
}

/// Repairs what a killed saki left before anything is written: the engine's.
pub use saki_engine::recover_killed_writes as recover;

/// Where to ask the provider's server about itself, if anywhere
/// ([`config::asks_server`]).
pub fn server_to_ask(resolved: &Resolved) -> Option<saki_engine::ServerQuery> {
    let asks = config::asks_server(
        &resolved.provider,
        resolved.provider_inferred,
        resolved.wire_api,
        &resolved.base_url,
    );
    asks.then(|| saki_engine::ServerQuery {
        base_url: resolved.base_url.clone(),
        model: resolved.model.clone(),
        api_key: resolved.api_key.clone(),
    })
}

/// The smallest cap a small context window lowers one tool's output to, in bytes.
const FITTED_OUTPUT_MIN_BYTES: usize = 2048;

/// What the local server said about itself (`resolved.server`) applied to the settings:
/// its context window, unless config sets one, and a bound on each answer; then one
/// tool's output held to what the window can take.
pub fn apply_server_facts(resolved: &mut Resolved) {
    let window = resolved.server.and_then(|s| s.context_window);
    // A small model with tools samples greedily unless config sets a temperature: a
    // server's default sampling cost two of seven everyday tasks on a 0.5B model.
    let small = resolved.small_local_model();
    if small && resolved.temperature.is_none() {
        resolved.temperature = Some(0.0);
    }
    // A server that answered is a local one, however it was reached: its tools are the
    // lean set `--provider llamacpp` / `ollama` gets, unless config says otherwise.
    if resolved.server.is_some() && !resolved.lean_tools_set {
        resolved.lean_tools = true;
    }
    // A small local model can repeat itself until its context is full: bound each answer.
    if resolved.server.is_some() && resolved.requested_max_output.is_none() {
        let window = window.or(resolved.limits.context_window).unwrap_or(8192);
        resolved.requested_max_output = Some(u32::try_from((window / 4).min(4096)).unwrap_or(4096));
    }
    if !resolved.window_configured {
        if let Some(window) = window {
            tracing::debug!(window, "context window from the server");
            resolved.limits.context_window = Some(window);
            // A bound the server cannot hold would fail every request.
            resolved.limits.max_output_tokens = resolved
                .limits
                .max_output_tokens
                .map(|m| m.min(u32::try_from(window / 4).unwrap_or(u32::MAX)));
        }
    }
    fit_tool_output(resolved);
}

/// Unless config sets `tool_output_max_bytes`, one tool's output is at most about a
/// quarter of the context window (a token is some four bytes): a stock llama.cpp
/// server's 4096-token slot cannot hold the default 16 KiB page of a file beside the
/// system prompt, and the request would fail. Windows of 16k tokens and more keep the
/// default.
fn fit_tool_output(resolved: &mut Resolved) {
    if resolved.tool_output_set {
        return;
    }
    if let Some(window) = resolved.limits.context_window {
        let fitted = usize::try_from(window)
            .unwrap_or(usize::MAX)
            .max(FITTED_OUTPUT_MIN_BYTES);
        resolved.tool_output_max_bytes = resolved.tool_output_max_bytes.min(fitted);
    }
}

/// The `prompt_cache_key` for a session's requests: its id, for OpenAI (the Responses
/// API, or Chat Completions on api.openai.com), where one key per conversation keeps its
/// main and forked requests on one prompt cache. Other Chat Completions servers are not
/// sent a field they may refuse; Anthropic and Gemini have none.
pub fn prompt_cache_key(resolved: &Resolved, session_id: &str) -> Option<String> {
    let openai = match resolved.wire_api {
        saki_llm_client::WireApi::Responses => true,
        saki_llm_client::WireApi::Chat => resolved.base_url.contains("api.openai.com"),
        _ => false,
    };
    openai.then(|| session_id.to_owned())
}

pub fn client_config(resolved: &Resolved) -> ClientConfig {
    let mut config = ClientConfig::new(resolved.wire_api, resolved.base_url.clone());
    config.api_key = resolved.api_key.clone();
    config.extra_headers = resolved.headers.clone();
    config.tool_calling = resolved.tool_calling();
    config
}

/// The compaction settings `[compaction]` and the model's limits describe.
pub fn compaction_settings(resolved: &Resolved) -> CompactionSettings {
    let c = &resolved.compaction;
    let summary_model = c
        .model
        .clone()
        .or_else(|| resolved.fast_model_set.clone())
        .unwrap_or_else(|| resolved.model.clone());
    let mut settings = CompactionSettings::new(
        summary_model,
        resolved.limits.context_window.unwrap_or(0),
        resolved.reserved_output(),
    );
    settings.auto = c.auto.unwrap_or(true);
    settings.prune = c.prune.unwrap_or(true);
    settings.threshold = c.threshold.unwrap_or(settings.threshold);
    settings.auto_read_budget = c.auto_read_tokens.unwrap_or(settings.auto_read_budget);
    // The session's bound on an answer bounds a summary too; its temperature applies when
    // the same model writes it.
    settings.summary_max_output_tokens = resolved.requested_max_output;
    if settings.summary_model == resolved.model {
        settings.summary_temperature = resolved.temperature;
    }
    settings
}

/// The engine's settings for `resolved`, with the request knobs the flags set.
pub fn engine_settings(resolved: &Resolved, args: &ProviderArgs, max_turns: u32) -> Settings {
    let mut worker = WorkerConfig::new(resolved.model.clone());
    worker.max_output_tokens = args.max_output_tokens.or(resolved.requested_max_output);
    worker.thinking = args.thinking.then(ThinkingConfig::default);
    worker.max_turns = max_turns as usize;
    // Prompted calls arrive as text: recovering them is how they become calls.
    worker.tool_call_recovery = resolved.tool_call_recovery
        || resolved.tool_calling() != saki_llm_client::ToolCalling::Native;
    worker.first_tool_call_required = resolved.first_tool_call_required;
    worker.temperature = resolved.temperature;
    worker.vision = crate::vision::reads_images(resolved);
    worker.guard_unasked_changes = resolved.small_local_model();
    worker.rewrite_edits = resolved.rewrite_edits;
    Settings {
        provider: resolved.provider.clone(),
        worker,
        fast_model: resolved.fast_model.clone(),
        context_window: resolved.limits.context_window,
        tool_output_max_bytes: resolved.tool_output_max_bytes,
        compaction: compaction_settings(resolved),
        // Only servers known to keep a prompt cache (llama.cpp, Ollama), on this machine.
        prewarm: resolved.prewarm
            && resolved.server.is_some()
            && saki_engine::is_local(&resolved.base_url),
        prompt_cache_key_by_session: prompt_cache_key(resolved, "").is_some(),
    }
}

/// `/model`: config resolved again with the person's choices, on the same provider (a
/// model name never moves the session to another server).
pub(crate) struct ConfigResolver {
    pub(crate) workspace: PathBuf,
    pub(crate) args: ProviderArgs,
    pub(crate) provider: String,
    pub(crate) max_turns: u32,
    /// What the session's server said about itself (asked once, at start).
    pub(crate) server: Option<saki_llm_client::server_info::ServerInfo>,
}

impl ModelResolver for ConfigResolver {
    fn resolve(&self, model: Option<&str>, fast_model: Option<&str>) -> Result<Settings, String> {
        let mut args = self.args.clone();
        args.provider = Some(self.provider.clone());
        if let Some(model) = model {
            args.model = Some(model.to_owned());
        }
        if let Some(fast) = fast_model {
            args.fast_model = Some(fast.to_owned());
        }
        let (mut resolved, _) = resolve(&self.workspace, &args, None).map_err(|e| e.to_string())?;
        resolved.server = self.server;
        apply_server_facts(&mut resolved);
        Ok(engine_settings(&resolved, &args, self.max_turns))
    }
}

/// How shell commands run in this session: `[shell_environment]`, the sandbox (`--sandbox`
/// wins over config; default `workspace-write`) with saki's own config and data denied to
/// commands, and what tools read from the web.
pub fn shell_spec(resolved: &Resolved, flag: Option<SandboxMode>) -> ShellSpec {
    let env = |k: &str| std::env::var(k).ok();
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    // saki's own config (keys, trust) and data (sessions) are never for commands.
    let mut deny_read: Vec<PathBuf> = config::global_config_dir(&env)
        .into_iter()
        .chain(saki_tools::state::default_data_dir(&env))
        .collect();
    for path in &resolved.sandbox.deny_read {
        deny_read.push(expand_home(Path::new(path), home.as_deref()));
    }
    let unix_sockets = resolved
        .sandbox
        .unix_sockets
        .as_ref()
        .map(|sockets| match sockets {
            UnixSockets::Paths(paths) => UnixSockets::Paths(
                paths
                    .iter()
                    .map(|p| expand_home(p, home.as_deref()))
                    .collect(),
            ),
            all => all.clone(),
        });
    ShellSpec {
        environment: resolved.shell_environment.clone(),
        key_names: resolved.key_names.clone(),
        max_background: resolved.max_background_shells,
        mode: flag
            .or(resolved.sandbox.mode)
            .unwrap_or(SandboxMode::WorkspaceWrite),
        deny_read,
        network: resolved.sandbox.network.unwrap_or(false),
        unix_sockets,
        home,
        output_cap: resolved.tool_output_max_bytes,
        web: resolved.web_fetch.settings(),
    }
}

/// Config keys ignored because the workspace is not trusted, as warnings.
pub fn config_warnings(resolved: &Resolved) -> Vec<String> {
    resolved
        .ignored
        .iter()
        .map(|key| format!("ignored {key}: this workspace is not trusted (`saki trust` trusts it)"))
        .collect()
}

/// `~/x` under `home`; any other path as it is.
fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

/// The signal (SIGTERM or SIGHUP) that told saki to stop, 0 for none.
static TERMINATED_BY: AtomicI32 = AtomicI32::new(0);

/// The exit code for a SIGTERM or SIGHUP received while running, if one was.
pub fn terminated_by() -> Option<ExitCode> {
    match TERMINATED_BY.load(Ordering::Relaxed) {
        0 => None,
        sig if sig == Signal::SIGHUP as i32 => Some(ExitCode::Hangup),
        _ => Some(ExitCode::Terminated),
    }
}

/// Waits for SIGTERM or SIGHUP, remembers it for [`terminated_by`] and runs `then`.
pub fn on_termination(then: impl FnOnce() + Send + 'static) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM and SIGHUP");
        return;
    };
    tokio::spawn(async move {
        let sig = tokio::select! {
            _ = term.recv() => Signal::SIGTERM,
            _ = hup.recv() => Signal::SIGHUP,
        };
        TERMINATED_BY.store(sig as i32, Ordering::Relaxed);
        then();
    });
}

/// A token that Ctrl+C, SIGTERM and SIGHUP cancel: the turn stops, its tool calls are
/// killed (their sandbox helpers kill whatever they started) and the session log keeps
/// every committed item.
pub fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let on_term = cancel.clone();
    on_termination(move || on_term.cancel());
    cancel
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use saki_llm_client::server_info::{ServerInfo, ServerKind};

    fn llamacpp(window: u64) -> Option<ServerInfo> {
        Some(ServerInfo {
            kind: ServerKind::LlamaCpp,
            context_window: Some(window),
            vision: None,
            parameters: None,
            template_tools: None,
        })
    }

    #[test]
    fn a_small_window_holds_one_tool_output_to_a_quarter_of_it() {
        let resolved_with = |file: &config::FileConfig, window| {
            let overrides = Overrides {
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                model: Some("m".into()),
                ..Overrides::default()
            };
            let mut resolved = config::resolve(file, &overrides, &|_: &str| None).unwrap();
            resolved.server = llamacpp(window);
            apply_server_facts(&mut resolved);
            resolved.tool_output_max_bytes
        };
        let default = config::FileConfig::default();
        assert_eq!(
            resolved_with(&default, 4096),
            4096,
            "a stock llama-server slot"
        );
        assert_eq!(resolved_with(&default, 1024), FITTED_OUTPUT_MIN_BYTES);
        assert_eq!(
            resolved_with(&default, 131_072),
            saki_tools::common::TOOL_OUTPUT_MAX_BYTES
        );
        let set = config::FileConfig {
            tool_output_max_bytes: Some(10_000),
            ..config::FileConfig::default()
        };
        assert_eq!(resolved_with(&set, 4096), 10_000, "config decides");
    }

    /// `/model` on a llama.cpp server keeps what the server said: its images and its window.
    #[test]
    fn a_model_switch_keeps_the_servers_facts() {
        let dir = tempfile::tempdir().unwrap();
        let resolver = ConfigResolver {
            workspace: dir.path().to_path_buf(),
            args: ProviderArgs {
                provider: Some("llamacpp".into()),
                ..ProviderArgs::default()
            },
            provider: "llamacpp".into(),
            max_turns: 10,
            server: Some(ServerInfo {
                kind: ServerKind::LlamaCpp,
                context_window: Some(8192),
                vision: Some(true),
                parameters: None,
                template_tools: None,
            }),
        };
        let settings = resolver
            .resolve(Some("saki-test-model-not-in-any-config"), None)
            .unwrap();
        assert_eq!(settings.worker.model, "saki-test-model-not-in-any-config");
        assert!(
            settings.worker.vision,
            "the server's projector still reads images"
        );
        assert_eq!(settings.context_window, Some(8192));
        assert_eq!(settings.worker.max_output_tokens, Some(2048), "window / 4");
        assert_eq!(
            settings.compaction.summary_max_output_tokens,
            Some(2048),
            "a summary is an answer too"
        );
    }
}
