//! `[mcp_servers.NAME]` tables, as `config.toml` writes them (the keys follow Codex's),
//! and what they mean once checked ([`ServerConfig::transport`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Seconds a server may take to start, answer `initialize` and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT_SEC: f64 = 10.0;
/// Seconds one tool call may take before it is cancelled.
pub const DEFAULT_TOOL_TIMEOUT_SEC: f64 = 60.0;

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// stdio transport: the program to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for the program, over the few it inherits from saki's environment
    /// (`inherit = "core"` of `[shell_environment]`, secrets removed:
    /// [`saki_sandbox::shell_env::inherited_by_programs`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where the program runs (default: the workspace root); relative to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP transport: the server's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The environment variable holding a bearer token sent as `Authorization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Only these tools are offered (by the server's names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered (applied after `enabled_tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// `ask` (default): calls follow the approval mode; `auto`: they run unasked in
    /// `default` and `auto-edit` too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalSetting>,
    /// Where the table came from is trusted (the global config, or a workspace the
    /// person trusted). Set by whoever loads the files, never by the file itself.
    #[serde(skip)]
    pub trusted: bool,
}

/// `approval = "ask" | "auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalSetting {
    #[default]
    Ask,
    Auto,
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        bearer_token_env_var: Option<String>,
        headers: BTreeMap<String, String>,
    },
}

/// Why a table cannot be used; the server is then reported as failed with this reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("set either `command` (stdio) or `url` (streamable HTTP)")]
    NoTransport,
    #[error("`command` and `url` are both set; a server has one transport")]
    BothTransports,
    #[error("`{0}` applies to stdio servers only (with `command`)")]
    StdioOnly(&'static str),
    #[error("`{0}` applies to HTTP servers only (with `url`)")]
    HttpOnly(&'static str),
    #[error("`{key}` must be a positive number of seconds, not {value}")]
    Timeout { key: &'static str, value: String },
    #[error("`url` must start with http:// or https://: {0}")]
    Url(String),
}

impl ServerConfig {
    /// A stdio server running `command` with `args` (what `saki mcp add` writes).
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            command: Some(command.into()),
            args,
            ..Self::default()
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    pub fn approval(&self) -> ApprovalSetting {
        self.approval.unwrap_or_default()
    }

    pub fn startup_timeout(&self) -> Result<Duration, ConfigError> {
        seconds(
            "startup_timeout_sec",
            self.startup_timeout_sec
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SEC),
        )
    }

    pub fn tool_timeout(&self) -> Result<Duration, ConfigError> {
        seconds(
            "tool_timeout_sec",
            self.tool_timeout_sec.unwrap_or(DEFAULT_TOOL_TIMEOUT_SEC),
        )
    }

    /// Whether the server's tool `name` is offered: in `enabled_tools` when that is
    /// set, and not in `disabled_tools`.
    pub fn offers(&self, name: &str) -> bool {
        let allowed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == name));
        allowed && !self.disabled_tools.iter().any(|t| t == name)
    }

    /// The transport the table describes, checked: one of `command` and `url`, and no
    /// key of the other transport.
    pub fn transport(&self) -> Result<Transport, ConfigError> {
        self.startup_timeout()?;
        self.tool_timeout()?;
        match (&self.command, &self.url) {
            (None, None) => Err(ConfigError::NoTransport),
            (Some(_), Some(_)) => Err(ConfigError::BothTransports),
            (Some(command), None) => {
                if self.bearer_token_env_var.is_some() {
                    return Err(ConfigError::HttpOnly("bearer_token_env_var"));
                }
                if !self.headers.is_empty() {
                    return Err(ConfigError::HttpOnly("headers"));
                }
                Ok(Transport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                })
            }
            (None, Some(url)) => {
                if !self.args.is_empty() {
                    return Err(ConfigError::StdioOnly("args"));
                }
                if !self.env.is_empty() {
                    return Err(ConfigError::StdioOnly("env"));
                }
                if self.cwd.is_some() {
                    return Err(ConfigError::StdioOnly("cwd"));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError::Url(url.clone()));
                }
                Ok(Transport::Http {
                    url: url.clone(),
                    bearer_token_env_var: self.bearer_token_env_var.clone(),
                    headers: self.headers.clone(),
                })
            }
        }
    }

    /// One line for people: the command line or the URL.
    pub fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => std::iter::once(command.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(url)) => url.clone(),
            (None, None) => String::new(),
        }
    }
}

fn seconds(key: &'static str, value: f64) -> Result<Duration, ConfigError> {
    if value.is_finite() && value > 0.0 {
        // Past a year the number means "never": keep it representable.
        Ok(Duration::from_secs_f64(value.min(31_536_000.0)))
    } else {
        Err(ConfigError::Timeout {
            key,
            value: value.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> BTreeMap<String, ServerConfig> {
        #[derive(Deserialize)]
        struct File {
            mcp_servers: BTreeMap<String, ServerConfig>,
        }
        toml::from_str::<File>(text).unwrap().mcp_servers
    }

    #[test]
    fn every_key_of_the_contract_parses() {
        let servers = parse(
            r#"
            [mcp_servers.local]
            command = "node"
            args = ["server.js", "stdio"]
            env = { "X" = "y" }
            cwd = "tools"
            startup_timeout_sec = 5
            tool_timeout_sec = 1.5
            enabled = true
            enabled_tools = ["a", "b"]
            disabled_tools = ["b"]
            approval = "auto"

            [mcp_servers.remote]
            url = "http://127.0.0.1:3001/mcp"
            bearer_token_env_var = "TOKEN_VAR"
            headers = { "X-Team" = "core" }
            enabled = false
            "#,
        );
        let local = &servers["local"];
        assert_eq!(local.approval(), ApprovalSetting::Auto);
        assert_eq!(local.tool_timeout().unwrap(), Duration::from_millis(1500));
        assert_eq!(local.startup_timeout().unwrap(), Duration::from_secs(5));
        assert!(local.offers("a") && !local.offers("b") && !local.offers("c"));
        assert!(matches!(
            local.transport().unwrap(),
            Transport::Stdio { .. }
        ));
        assert!(!local.trusted, "trust is never read from a file");
        let remote = &servers["remote"];
        assert!(!remote.is_enabled());
        assert_eq!(remote.approval(), ApprovalSetting::Ask);
        assert_eq!(remote.tool_timeout().unwrap(), Duration::from_secs(60));
        assert!(matches!(
            remote.transport().unwrap(),
            Transport::Http { .. }
        ));
        assert!(remote.offers("anything"));
    }

    #[test]
    fn a_table_with_no_or_mixed_transports_is_refused() {
        let servers = parse(
            r#"
            [mcp_servers.none]
            args = ["x"]
            [mcp_servers.both]
            command = "x"
            url = "http://h"
            [mcp_servers.args_on_http]
            url = "http://h"
            args = ["x"]
            [mcp_servers.headers_on_stdio]
            command = "x"
            headers = { "A" = "b" }
            [mcp_servers.zero]
            command = "x"
            tool_timeout_sec = 0
            [mcp_servers.scheme]
            url = "ftp://h"
            "#,
        );
        let error = |name: &str| servers[name].transport().unwrap_err();
        assert_eq!(error("none"), ConfigError::NoTransport);
        assert_eq!(error("both"), ConfigError::BothTransports);
        assert_eq!(error("args_on_http"), ConfigError::StdioOnly("args"));
        assert_eq!(error("headers_on_stdio"), ConfigError::HttpOnly("headers"));
        assert!(matches!(error("zero"), ConfigError::Timeout { .. }));
        assert!(matches!(error("scheme"), ConfigError::Url(_)));
    }

    #[test]
    fn unknown_keys_are_errors() {
        let parsed =
            toml::from_str::<BTreeMap<String, ServerConfig>>("[x]\ncommand = \"a\"\ntimeout = 3\n");
        assert!(parsed.is_err());
    }
}
