//! `saki mcp add` and `remove`: one `[mcp_servers.NAME]` table in the global
//! `config.toml`, written with toml_edit so the rest of the file (comments, order,
//! formatting) stays as the person wrote it; and [`configured`], the servers config sets.

use crate::config::ConfigError;
use saki_mcp::ServerConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml_edit::{value, Array, DocumentMut, InlineTable, Item, Table};

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("an MCP server named `{name}` is configured already in {path}; `saki mcp remove {name}` first")]
    Exists { name: String, path: PathBuf },
    #[error("no MCP server named `{name}` in {path}")]
    Missing { name: String, path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn read(path: &Path) -> Result<DocumentMut, EditError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(EditError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    text.parse()
        .map_err(|e: toml_edit::TomlError| EditError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Writes the file atomically (parent directories created). `--env` may put a token in
/// it, so a new file is 0600; an existing one keeps its mode.
fn write(path: &Path, doc: &DocumentMut) -> Result<(), EditError> {
    saki_tools::atomic::write_atomic_mode(path, doc.to_string().as_bytes(), 0o600).map_err(
        |source| EditError::Write {
            path: path.to_path_buf(),
            source,
        },
    )
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Array {
    items.into_iter().map(String::as_str).collect()
}

fn inline(map: &std::collections::BTreeMap<String, String>) -> InlineTable {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The table for `server`: the keys `saki mcp add` sets.
fn table(server: &ServerConfig) -> Table {
    let mut t = Table::new();
    if let Some(command) = &server.command {
        t["command"] = value(command.as_str());
        if !server.args.is_empty() {
            t["args"] = value(strings(&server.args));
        }
    }
    if let Some(url) = &server.url {
        t["url"] = value(url.as_str());
    }
    if !server.env.is_empty() {
        t["env"] = value(inline(&server.env));
    }
    t
}

/// Adds `[mcp_servers.NAME]` for `server` to the file at `path` (created if missing).
pub fn add(path: &Path, name: &str, server: &ServerConfig) -> Result<(), EditError> {
    let mut doc = read(path)?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            // Only `[mcp_servers.NAME]` headers, no empty `[mcp_servers]`.
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| EditError::Parse {
            path: path.to_path_buf(),
            message: "mcp_servers is not a table".into(),
        })?;
    if servers.contains_key(name) {
        return Err(EditError::Exists {
            name: name.to_owned(),
            path: path.to_path_buf(),
        });
    }
    servers.insert(name, Item::Table(table(server)));
    write(path, &doc)
}

/// Removes `[mcp_servers.NAME]` from the file at `path`.
pub fn remove(path: &Path, name: &str) -> Result<(), EditError> {
    let mut doc = read(path)?;
    let missing = || EditError::Missing {
        name: name.to_owned(),
        path: path.to_path_buf(),
    };
    let servers = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(missing)?;
    servers.remove(name).ok_or_else(missing)?;
    if servers.is_empty() {
        doc.remove("mcp_servers");
    }
    write(path, &doc)
}

/// The `[mcp_servers]` of the config files for `workspace` without resolving a provider
/// (`saki mcp list` works before one is set up): the global file, and the workspace's
/// when the global one trusts it. Also what an untrusted workspace file tried to set.
pub fn configured(
    workspace: &Path,
) -> Result<(BTreeMap<String, ServerConfig>, Vec<String>), ConfigError> {
    let files = crate::setup::config_files(workspace)?.files;
    let ignored = files
        .ignored
        .into_iter()
        .filter(|key| key.contains("mcp_servers."))
        .collect();
    Ok((files.mcp_servers, ignored))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_remove_keep_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("saki/config.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let original =
            "# my settings\nmodel = \"m\" # the usual\n\n[models.m]\ncontext_window = 8192\n";
        std::fs::write(&path, original).unwrap();
        let mut server = ServerConfig::stdio("npx", vec!["-y".into(), "pkg".into()]);
        server.env.insert("TOKEN".into(), "x".into());
        add(&path, "docs", &server).unwrap();
        add(
            &path,
            "web",
            &ServerConfig::http("http://127.0.0.1:3001/mcp"),
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(original), "{text}");
        assert!(
            text.contains("[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]\nenv = { TOKEN = \"x\" }\n"),
            "{text}"
        );
        assert!(!text.contains("[mcp_servers]\n"), "{text}");
        let parsed: crate::config::FileConfig = toml::from_str(&text).unwrap();
        assert_eq!(parsed.mcp_servers["docs"], server);
        assert_eq!(
            parsed.mcp_servers["web"].url.as_deref(),
            Some("http://127.0.0.1:3001/mcp")
        );
        assert!(matches!(
            add(&path, "docs", &server),
            Err(EditError::Exists { .. })
        ));

        remove(&path, "docs").unwrap();
        remove(&path, "web").unwrap();
        assert!(matches!(
            remove(&path, "web"),
            Err(EditError::Missing { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    }

    #[test]
    fn add_creates_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/config.toml");
        add(&path, "x", &ServerConfig::stdio("srv", Vec::new())).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[mcp_servers.x]\ncommand = \"srv\"\n"
        );
    }

    /// `--env` may write a token: a new file is the person's alone; an existing file
    /// keeps the mode it had.
    #[test]
    fn a_new_file_is_private_and_an_existing_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("a/b/config.toml");
        let mut server = ServerConfig::stdio("srv", Vec::new());
        server.env.insert("TOKEN".into(), "secret".into());
        add(&new, "x", &server).unwrap();
        assert_eq!(mode(&new), 0o600);
        remove(&new, "x").unwrap();
        assert_eq!(mode(&new), 0o600);

        let existing = dir.path().join("config.toml");
        std::fs::write(&existing, "model = \"m\"\n").unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o640)).unwrap();
        add(&existing, "x", &server).unwrap();
        assert_eq!(mode(&existing), 0o640);
    }
}
