//! The names MCP tools go by: `mcp__<server>__<tool>`, cut down to what every provider
//! accepts (`[A-Za-z0-9_-]`, at most 64 characters), with the way back kept.
//!
//! The same server and tool names give the same exposed name on every run (the tool
//! list is part of the cached prompt prefix, and a resumed session's history names
//! them): shortening and disambiguation use a fixed hash, never a random one.

use saki_tools::mcp_approval::MCP_PREFIX;
use std::collections::BTreeMap;

/// The longest name all four wire protocols accept.
pub const MAX_NAME_LEN: usize = 64;

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The exposed name of `tool` on `server`, before disambiguation.
pub fn exposed_name(server: &str, tool: &str) -> String {
    // The approval policy knows MCP tools by this prefix (`saki_tools::mcp_approval`).
    let full = format!("{MCP_PREFIX}{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME_LEN {
        full
    } else {
        with_hash(&full, server, tool)
    }
}

/// `name` cut so that `_` and an 8-digit hash of the original names fit in
/// [`MAX_NAME_LEN`]. (`name` is ASCII: it was sanitized.)
fn with_hash(name: &str, server: &str, tool: &str) -> String {
    let hash = format!("{:08x}", fnv1a(&format!("{server}\0{tool}")) as u32);
    let keep = MAX_NAME_LEN - hash.len() - 1;
    let head = &name[..name.len().min(keep)];
    format!("{head}_{hash}")
}

/// FNV-1a, 64 bits: stable across runs and platforms, unlike the std hashers.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Exposed names and the `(server, tool)` each stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    names: BTreeMap<String, (String, String)>,
}

impl NameMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives `tool` of `server` a name no other tool has. Two originals that sanitize to
    /// the same name (`a.b`, `a_b`) keep apart: the later one gets a hash suffix. Call
    /// in a stable order (servers by name, tools by name) for stable names.
    pub fn insert(&mut self, server: &str, tool: &str) -> String {
        let original = (server.to_owned(), tool.to_owned());
        let mut name = exposed_name(server, tool);
        if self.names.get(&name).is_some_and(|o| *o != original) {
            name = with_hash(&name, server, tool);
        }
        // A hash collision as well: count up until free (never in practice).
        let mut n = 0u32;
        while self.names.get(&name).is_some_and(|o| *o != original) {
            n += 1;
            name = with_hash(&name, server, &format!("{tool}\0{n}"));
        }
        self.names.insert(name.clone(), original);
        name
    }

    /// The `(server, tool)` behind an exposed name.
    pub fn original(&self, name: &str) -> Option<(&str, &str)> {
        self.names
            .get(name)
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
    }

    /// Forgets every name of `server` (it stopped or failed).
    pub fn remove_server(&mut self, server: &str) {
        self.names.retain(|_, (s, _)| s != server);
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use saki_tools::mcp_approval::is_mcp_tool;

    fn valid(name: &str) -> bool {
        name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_prefixed_and_cleaned() {
        assert_eq!(
            exposed_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(
            exposed_name("my server", "fs.read/file"),
            "mcp__my_server__fs_read_file"
        );
        assert_eq!(exposed_name("é", "ツール"), "mcp________");
        assert!(is_mcp_tool(&exposed_name("a", "b")) && !is_mcp_tool("read_file"));
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash_and_stay_distinct() {
        let tool_a = format!("{}a", "x".repeat(80));
        let tool_b = format!("{}b", "x".repeat(80));
        let a = exposed_name("server", &tool_a);
        let b = exposed_name("server", &tool_b);
        assert!(valid(&a) && valid(&b), "{a} {b}");
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert_ne!(a, b);
        assert_eq!(a, exposed_name("server", &tool_a), "the same on every call");
        assert!(a.starts_with("mcp__server__xxxx"));
    }

    #[test]
    fn names_that_clean_to_the_same_are_kept_apart_and_mapped_back() {
        let mut map = NameMap::new();
        let first = map.insert("s", "a.b");
        let second = map.insert("s", "a_b");
        let again = map.insert("s", "a.b");
        assert_eq!(first, "mcp__s__a_b");
        assert_eq!(again, first, "the same tool keeps its name");
        assert_ne!(first, second);
        assert!(valid(&second));
        assert_eq!(map.original(&first), Some(("s", "a.b")));
        assert_eq!(map.original(&second), Some(("s", "a_b")));
        assert_eq!(map.original("mcp__s__c"), None);
        map.remove_server("s");
        assert!(map.is_empty());
    }
}
