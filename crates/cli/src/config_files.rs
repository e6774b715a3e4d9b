//! Where config files are and how they are read: the global file, the workspace's, the
//! trusted parts of each.

use super::{ConfigError, FileConfig};
use std::path::{Path, PathBuf};

/// `$XDG_CONFIG_HOME/saki` (default `~/.config/saki`): global config and AGENTS.md.
pub fn global_config_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("XDG_CONFIG_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| dir.join("saki"))
}

/// Where config files live for a workspace.
pub fn config_paths(workspace: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    global_config_dir(env)
        .map(|dir| dir.join("config.toml"))
        .into_iter()
        .chain([workspace.join(".saki").join("config.toml")])
        .collect()
}

/// Loads and layers the config files, later ones winning. Only the first `trusted` files
/// (the global one, and the workspace's when the person trusted it) may set what runs
/// commands or moves keys (see [`crate::trust`]): a repository's own
/// `.saki/config.toml` must not be able to do that on the machine of whoever opens it.
/// What an untrusted file tried is listed in [`FileConfig::ignored`].
pub fn load_files(paths: &[PathBuf], trusted: usize) -> Result<FileConfig, ConfigError> {
    let mut merged = FileConfig::default();
    for (i, path) in paths.iter().enumerate() {
        if let Some(file) = load_file(path, i == 0, i < trusted)? {
            merged.overlay(file);
        }
    }
    Ok(merged)
}

/// One config file (`None` when it does not exist). `first`: only the first file may
/// trust directories; `trusted`: an untrusted file loses what only trusted ones may set.
pub fn load_file(
    path: &Path,
    first: bool,
    trusted: bool,
) -> Result<Option<FileConfig>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut file: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    for server in file.mcp_servers.values_mut() {
        server.trusted = trusted;
    }
    if !trusted {
        let ignored = crate::trust::strip_untrusted(&mut file);
        file.ignored = ignored
            .into_iter()
            .map(|key| format!("{}: {key}", path.display()))
            .collect();
    }
    let trusts = !file.trusted_directories.is_empty() || !file.untrusted_directories.is_empty();
    if !first && trusts {
        file.ignored.push(format!(
            "{}: trusted_directories (only the global config may trust directories)",
            path.display()
        ));
        file.trusted_directories.clear();
        file.untrusted_directories.clear();
    }
    Ok(Some(file))
}

pub fn no_provider_help() -> String {
    "no model provider is configured. Pick one:\n\
     \x20 - export an API key: ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY\n\
     \x20 - name a provider: --provider NAME (built-in: openai, anthropic, gemini, openai-compatible, ollama, llamacpp)\n\
     \x20   e.g. saki exec --provider ollama --model qwen2.5-coder \"explain this repo\"\n\
     \x20 - point at any OpenAI-compatible server: --base-url http://localhost:8080/v1\n\
     \x20 - or write ~/.config/saki/config.toml (or .saki/config.toml in the workspace):\n\
     \x20       provider = \"anthropic\"\n\
     \x20       model = \"claude-sonnet-4-5\"\n\
     See the README section \"Configure a provider\"."
        .to_owned()
}
