//! The environment shell commands run with (`[shell_environment]` in config).
//!
//! Commands start from saki's environment, filtered: `inherit = "all"` (the default)
//! keeps everything, `"core"` only the variables programs need to find things (`PATH`,
//! `HOME`, the user, the locale, temp dirs), `"none"` nothing. Then secrets are removed
//! whatever was inherited: names matching `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
//! `*PASSWD*`, `*CREDENTIAL*` (any case), the providers' configured `env_key`s and every
//! `SAKI_*` variable, and any variable whose value holds a credential, whatever its name
//! ([`secret_value`]: a URL with a password, a token of a well-known shape); then
//! `exclude` patterns; then `set` adds or overrides (the person's explicit choice wins,
//! also over the secret rules). saki then sets what makes commands safe and quiet to run
//! unattended (`TMPDIR` to the private temp dir, no git prompts).

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

mod values;
pub use values::{redact, secret_value, REDACTED};

/// Whether `program` is an executable file on `path` (a `PATH` value), or a path to a
/// file: what a command that names it would find.
pub fn on_path(program: &str, path: Option<&str>) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    path.unwrap_or_default()
        .split(':')
        .filter(|dir| !dir.is_empty())
        .any(|dir| is_executable(&std::path::Path::new(dir).join(program)))
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Variables kept by `inherit = "core"`, with every `LC_*` ([`is_core`]).
const CORE: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "USERNAME",
    "TMPDIR",
    "TEMP",
    "TMP",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
];

/// Patterns removed whatever `inherit` says (case-insensitive).
const SECRET_PATTERNS: &[&str] = &[
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "SAKI_*",
];

/// Whether `inherit = "core"` keeps `name` (before the secret rules): [`CORE`] and
/// every `LC_*`.
fn is_core(name: &str) -> bool {
    CORE.contains(&name) || name.starts_with("LC_")
}

/// Whether `name` matches one of [`SECRET_PATTERNS`]. Should the patterns not build
/// (they are fixed; they do), every name counts as a secret.
fn is_secret(name: &str) -> bool {
    static SECRETS: OnceLock<Option<GlobSet>> = OnceLock::new();
    SECRETS
        .get_or_init(|| {
            let mut set = GlobSetBuilder::new();
            for pattern in SECRET_PATTERNS {
                set.add(glob(pattern).ok()?);
            }
            set.build().ok()
        })
        .as_ref()
        .is_none_or(|set| set.is_match(name))
}

/// Whether a program saki starts with a clean environment (an MCP server over stdio)
/// inherits `name` from saki's: what `inherit = "core"` keeps once secrets are removed,
/// so `PATH`, `HOME`, the user, the locale and the temp dirs, never an API key.
pub fn inherited_by_programs(name: &str) -> bool {
    is_core(name) && !is_secret(name)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    Core,
    #[default]
    All,
    None,
}

/// The `[shell_environment]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellEnvConfig {
    #[serde(default)]
    pub inherit: Inherit,
    /// More names to remove (globs, case-insensitive).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Variables to set (win over everything else).
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid shell_environment.exclude pattern `{pattern}`: {message}")]
pub struct ShellEnvError {
    pub pattern: String,
    pub message: String,
}

fn glob(pattern: &str) -> Result<Glob, ShellEnvError> {
    GlobBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .map_err(|e| ShellEnvError {
            pattern: pattern.to_owned(),
            message: e.to_string(),
        })
}

impl ShellEnvConfig {
    /// The environment for commands, from `vars` (saki's own environment) and the names of
    /// the configured API key variables.
    pub fn build(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
        key_names: &[String],
    ) -> Result<Vec<(String, String)>, ShellEnvError> {
        let mut removed = GlobSetBuilder::new();
        for pattern in SECRET_PATTERNS
            .iter()
            .copied()
            .chain(self.exclude.iter().map(String::as_str))
        {
            removed.add(glob(pattern)?);
        }
        let removed: GlobSet = removed.build().map_err(|e| ShellEnvError {
            pattern: self.exclude.join(", "),
            message: e.to_string(),
        })?;
        let mut env: BTreeMap<String, String> = vars
            .into_iter()
            .filter(|(name, _)| match self.inherit {
                Inherit::All => true,
                Inherit::Core => is_core(name),
                Inherit::None => false,
            })
            .filter(|(name, value)| {
                !removed.is_match(name) && !key_names.contains(name) && !secret_value(value)
            })
            .collect();
        for (name, value) in &self.set {
            env.insert(name.clone(), value.clone());
        }
        Ok(env.into_iter().collect())
    }
}

/// What saki sets for every command after the policy: the private temp dir, and git that
/// never waits for a password or takes optional locks (so `git status` does not rewrite
/// the index, which would run the repository's `post-index-change` hook).
pub fn unattended(tmp: &str) -> [(&'static str, String); 6] {
    [
        ("TMPDIR", tmp.to_owned()),
        ("TMP", tmp.to_owned()),
        ("TEMP", tmp.to_owned()),
        ("GIT_TERMINAL_PROMPT", "0".to_owned()),
        ("GIT_OPTIONAL_LOCKS", "0".to_owned()),
        ("GIT_PAGER", "cat".to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("github_token", "ghp"),
            ("DB_PASSWORD", "pw"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("SAKI_MODEL", "m"),
            ("WORK_PROXY", "custom-key"),
            ("EDITOR", "vi"),
            ("LC_TIME", "C"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn secrets_never_reach_commands_by_default() {
        let env = ShellEnvConfig::default()
            .build(vars(), &["WORK_PROXY".into()])
            .unwrap();
        assert_eq!(names(&env), ["EDITOR", "HOME", "LC_TIME", "PATH"]);
    }

    #[test]
    fn programs_inherit_the_core_variables_and_no_secret() {
        for name in [
            "PATH", "HOME", "USER", "LANG", "LANGUAGE", "LC_ALL", "LC_TIME", "TMPDIR", "TEMP",
            "TMP", "TZ", "TERM",
        ] {
            assert!(inherited_by_programs(name), "{name}");
        }
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "github_token",
            "LC_API_KEY",
            "LC_SECRET",
            "SAKI_MODEL",
            "EDITOR",
            "path",
        ] {
            assert!(!inherited_by_programs(name), "{name}");
        }
    }

    #[test]
    fn a_value_that_holds_a_credential_is_removed_unless_set() {
        let vars = [
            ("DATABASE_URL", "postgres://user:password@host/db"),
            ("DEPLOY", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            ("LC_CUSTOM", "xoxb-123456789012-abcdefghijkl"),
            ("BUILD_ID", "AKIAIOSFODNN7EXAMPLE"),
            ("SITE_URL", "https://example.com/"),
            ("PATH", "/bin"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()));
        for inherit in [Inherit::All, Inherit::Core] {
            let config = ShellEnvConfig {
                inherit,
                ..Default::default()
            };
            let env = config.build(vars.clone(), &[]).unwrap();
            assert!(
                names(&env).iter().all(|n| ["PATH", "SITE_URL"].contains(n)),
                "{env:?}"
            );
        }
        // The person's trusted config may hand one over on purpose.
        let url = "postgres://user:password@localhost/test".to_owned();
        let config = ShellEnvConfig {
            set: [("DATABASE_URL".to_owned(), url.clone())].into(),
            ..Default::default()
        };
        let env = config.build(vars, &[]).unwrap();
        assert!(env.contains(&("DATABASE_URL".to_owned(), url)));
        assert!(!names(&env).contains(&"DEPLOY"));
    }

    #[test]
    fn core_none_exclude_and_set() {
        let core = ShellEnvConfig {
            inherit: Inherit::Core,
            ..Default::default()
        };
        assert_eq!(
            names(&core.build(vars(), &[]).unwrap()),
            ["HOME", "LC_TIME", "PATH"]
        );
        let custom = ShellEnvConfig {
            inherit: Inherit::None,
            exclude: vec!["ed*".into()],
            set: [("FOO_TOKEN".to_string(), "explicit".to_string())].into(),
        };
        assert_eq!(
            custom.build(vars(), &[]).unwrap(),
            [("FOO_TOKEN".to_string(), "explicit".to_string())]
        );
        let excluded = ShellEnvConfig {
            exclude: vec!["ed*".into()],
            ..Default::default()
        };
        assert!(!names(&excluded.build(vars(), &[]).unwrap()).contains(&"EDITOR"));
        let bad = ShellEnvConfig {
            exclude: vec!["[".into()],
            ..Default::default()
        };
        assert!(bad
            .build(vars(), &[])
            .unwrap_err()
            .to_string()
            .contains("`[`"));
    }
}
