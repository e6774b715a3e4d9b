//! Which language servers a session may start: `[lsp.NAME]` tables of the config files
//! over the built-in entries, whose programs are used when they are on `PATH`.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// `[lsp.NAME]` in config.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program and its arguments (`["pyright-langserver", "--stdio"]`).
    #[serde(default)]
    pub command: Vec<String>,
    /// File name endings it serves, without the dot (`["py", "pyi"]`).
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Files or directories that mark a project's root (`pyproject.toml`); the nearest
    /// directory holding one, up to the workspace root, is the server's root.
    #[serde(default)]
    pub root_markers: Vec<String>,
    /// Variables set for the server, over the environment shell commands get.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Sent as `initializationOptions`.
    #[serde(default)]
    pub initialization_options: Option<Value>,
    /// `false` leaves a built-in (or inherited) entry out.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `lsp = false`, or `[lsp.NAME]` tables.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum LspSetting {
    Switch(bool),
    Servers(BTreeMap<String, ServerConfig>),
}

/// One server saki may start.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub command: Vec<String>,
    pub extensions: Vec<String>,
    pub root_markers: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub initialization_options: Option<Value>,
}

impl ServerSpec {
    /// Whether it serves `path` (by its ending).
    pub fn serves(&self, path: &Path) -> bool {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        self.extensions.iter().any(|ext| {
            name.strip_suffix(ext.as_str())
                .is_some_and(|stem| stem.ends_with('.') && stem.len() > 1)
        })
    }
}

/// The built-in entries: name, candidate commands (the first on `PATH` wins), endings,
/// root markers.
type Builtin = (
    &'static str,
    &'static [&'static [&'static str]],
    &'static [&'static str],
    &'static [&'static str],
);

const BUILTIN: &[Builtin] = &[
    (
        "pyright",
        &[
            &["pyright-langserver", "--stdio"],
            &["basedpyright-langserver", "--stdio"],
        ],
        &["py", "pyi"],
        &[
            "pyrightconfig.json",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ],
    ),
    (
        "typescript",
        &[&["typescript-language-server", "--stdio"]],
        &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    ),
    (
        "rust-analyzer",
        &[&["rust-analyzer"]],
        &["rs"],
        &["Cargo.toml"],
    ),
    ("gopls", &[&["gopls"]], &["go"], &["go.work", "go.mod"]),
    (
        "clangd",
        &[&["clangd"]],
        &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
        &["compile_commands.json", "compile_flags.txt", ".clangd"],
    ),
];

/// rust-analyzer's options where the workspace is not trusted: build scripts, proc
/// macros and `cargo check` run the repository's code, which an untrusted repository
/// does not get to do unasked.
fn untrusted_rust_options() -> Value {
    serde_json::json!({
        "cargo": {"buildScripts": {"enable": false}},
        "procMacro": {"enable": false},
        "checkOnSave": false
    })
}

/// The servers of a session: the built-in ones whose program `on_path` finds, then the
/// configured tables over them (a table of a built-in's name changes the fields it
/// sets; `enabled = false` drops an entry). `lsp = false`: none.
pub fn specs(
    setting: Option<&LspSetting>,
    trusted_workspace: bool,
    on_path: &dyn Fn(&str) -> bool,
) -> Vec<ServerSpec> {
    let configured = match setting {
        Some(LspSetting::Switch(false)) => return Vec::new(),
        Some(LspSetting::Switch(true)) | None => BTreeMap::new(),
        Some(LspSetting::Servers(tables)) => tables.clone(),
    };
    let mut specs: BTreeMap<String, ServerSpec> = BTreeMap::new();
    for (name, candidates, extensions, markers) in BUILTIN {
        let Some(command) = candidates.iter().find(|c| on_path(c[0])) else {
            continue;
        };
        let initialization_options =
            (*name == "rust-analyzer" && !trusted_workspace).then(untrusted_rust_options);
        specs.insert(
            (*name).to_owned(),
            ServerSpec {
                name: (*name).to_owned(),
                command: command.iter().map(|s| (*s).to_owned()).collect(),
                extensions: extensions.iter().map(|s| (*s).to_owned()).collect(),
                root_markers: markers.iter().map(|s| (*s).to_owned()).collect(),
                env: BTreeMap::new(),
                initialization_options,
            },
        );
    }
    for (name, table) in configured {
        if table.enabled == Some(false) {
            specs.remove(&name);
            continue;
        }
        let base = specs.remove(&name);
        let pick = |mine: Vec<String>, theirs: Option<Vec<String>>| match (mine.is_empty(), theirs)
        {
            (true, Some(theirs)) => theirs,
            _ => mine,
        };
        let spec = ServerSpec {
            name: name.clone(),
            command: pick(table.command, base.as_ref().map(|b| b.command.clone())),
            extensions: pick(
                table.extensions,
                base.as_ref().map(|b| b.extensions.clone()),
            ),
            root_markers: pick(
                table.root_markers,
                base.as_ref().map(|b| b.root_markers.clone()),
            ),
            env: match &base {
                Some(b) => b.env.clone().into_iter().chain(table.env).collect(),
                None => table.env,
            },
            initialization_options: table
                .initialization_options
                .or(base.and_then(|b| b.initialization_options)),
        };
        if spec.command.is_empty() || spec.extensions.is_empty() {
            tracing::warn!(server = name, "lsp server without a command or extensions");
            continue;
        }
        specs.insert(name, spec);
    }
    specs.into_values().collect()
}

pub use saki_sandbox::shell_env::on_path;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Option<LspSetting> {
        toml_like(text).lsp
    }

    // The tests read JSON shaped like the TOML (no toml dependency here).
    fn toml_like(text: &str) -> FileShim {
        serde_json::from_str(text).unwrap()
    }

    #[derive(Deserialize)]
    struct FileShim {
        lsp: Option<LspSetting>,
    }

    #[test]
    fn builtins_need_their_program_and_false_turns_all_off() {
        let only_pyright = |p: &str| p == "basedpyright-langserver" || p == "clangd";
        let specs = specs(None, true, &only_pyright);
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["clangd", "pyright"]);
        assert_eq!(specs[1].command, ["basedpyright-langserver", "--stdio"]);
        assert!(super::specs(Some(&LspSetting::Switch(false)), true, &|_| true).is_empty());
    }

    #[test]
    fn tables_add_servers_change_builtins_and_turn_them_off() {
        let setting = parse(
            r#"{"lsp": {
                "pyright": {"env": {"A": "1"}},
                "clangd": {"enabled": false},
                "mine": {"command": ["my-ls", "--stdio"], "extensions": ["foo"]},
                "broken": {"extensions": ["bar"]}
            }}"#,
        );
        let specs = specs(setting.as_ref(), true, &|_| true);
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["gopls", "mine", "pyright", "rust-analyzer", "typescript"]
        );
        let pyright = specs.iter().find(|s| s.name == "pyright").unwrap();
        assert_eq!(pyright.command, ["pyright-langserver", "--stdio"]);
        assert_eq!(pyright.env.get("A").map(String::as_str), Some("1"));
        let mine = specs.iter().find(|s| s.name == "mine").unwrap();
        assert!(mine.serves(Path::new("/w/x.foo")));
        assert!(!mine.serves(Path::new("/w/xfoo")));
        assert!(!mine.serves(Path::new("/w/.foo")));
    }

    #[test]
    fn rust_analyzer_runs_no_repository_code_in_an_untrusted_workspace() {
        let untrusted = specs(None, false, &|p| p == "rust-analyzer");
        let options = untrusted[0].initialization_options.as_ref().unwrap();
        assert_eq!(options["procMacro"]["enable"], false);
        assert_eq!(options["checkOnSave"], false);
        let trusted = specs(None, true, &|p| p == "rust-analyzer");
        assert_eq!(trusted[0].initialization_options, None);
    }

    #[test]
    fn programs_are_found_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("ls-bin");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.path().display());
        assert!(on_path("ls-bin", Some(&path)));
        assert!(!on_path("other", Some(&path)));
        assert!(on_path(exe.to_str().unwrap(), None));
    }
}
