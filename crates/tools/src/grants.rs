//! "Allow for this session" grants: remembered per tool, and for `shell` per command
//! prefix (`cargo test`, `git status`). A grant never covers a compound command: a shell
//! line with operators, substitutions or redirections is asked about every time, because
//! its prefix says nothing about what the rest of the line does.

use saki_llm_worker::ToolCallInfo;
use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// Characters that make a shell line more than one simple command (or let it write).
const COMPOUND: &[char] = &[
    ';', '&', '|', '$', '`', '<', '>', '(', ')', '{', '}', '\n', '\r', '\\', '*', '?', '~',
];

/// What a session grant for `call` would be: `shell:cargo test`, `tool:edit`,
/// `web:docs.rs`. `None` when
/// the call cannot be granted for the session (a compound or empty shell command).
pub fn grant_key(call: &ToolCallInfo) -> Option<String> {
    if call.name == "web_fetch" {
        // Per domain: allowing one site is not allowing the web.
        return crate::web_fetch::target_host(&call.input).map(|host| format!("web:{host}"));
    }
    if call.name != "shell" {
        return Some(format!("tool:{}", call.name));
    }
    let command = call.input.get("command")?.as_str()?;
    shell_prefix(command).map(|p| format!("shell:{p}"))
}

/// The prefix a shell grant remembers: the program, plus its subcommand when the second
/// word looks like one (`cargo test`, `git log`, `npm run`).
pub fn shell_prefix(command: &str) -> Option<String> {
    if command.contains(COMPOUND) || command.contains(['"', '\'']) {
        return None;
    }
    let mut words = command.split_whitespace();
    let program = words.next()?;
    // `FOO=1 cmd` runs cmd with a changed environment: not the same thing as `cmd`.
    if program.contains('=') {
        return None;
    }
    let sub = words.next().filter(|w| {
        w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    });
    Some(match sub {
        Some(sub) => format!("{program} {sub}"),
        None => program.to_owned(),
    })
}

/// How a grant reads to the person: `edit`, `cargo test …`.
pub fn grant_label(call: &ToolCallInfo) -> Option<String> {
    let key = grant_key(call)?;
    Some(
        match (key.strip_prefix("shell:"), key.strip_prefix("web:")) {
            (Some(prefix), _) => format!("{prefix} …"),
            (_, Some(host)) => format!("web_fetch {host}"),
            _ => call.name.clone(),
        },
    )
}

/// The grants of one interactive session.
#[derive(Debug, Default)]
pub struct SessionGrants {
    keys: Mutex<BTreeSet<String>>,
}

impl SessionGrants {
    /// Remembers `call`'s grant; false when it cannot be granted (see [`grant_key`]).
    pub fn grant(&self, call: &ToolCallInfo) -> bool {
        let Some(key) = grant_key(call) else {
            return false;
        };
        self.lock().insert(key);
        true
    }

    pub fn covers(&self, call: &ToolCallInfo) -> bool {
        grant_key(call).is_some_and(|key| self.lock().contains(&key))
    }

    /// Every grant, as `grant_key` spells it.
    pub fn list(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saki_llm_worker::ToolExecutionContext;
    use serde_json::json;

    fn call(name: &str, input: serde_json::Value) -> ToolCallInfo {
        ToolCallInfo {
            name: name.into(),
            arguments: input.to_string(),
            input,
            ctx: ToolExecutionContext {
                call_id: "c1".into(),
                batch_id: "b1".into(),
                call_index: 0,
            },
        }
    }

    fn shell(command: &str) -> ToolCallInfo {
        call("shell", json!({ "command": command }))
    }

    #[test]
    fn prefixes_keep_the_subcommand_only_when_it_looks_like_one() {
        assert_eq!(
            shell_prefix("cargo test --workspace").as_deref(),
            Some("cargo test")
        );
        assert_eq!(shell_prefix("git status").as_deref(), Some("git status"));
        assert_eq!(shell_prefix("ls -la src").as_deref(), Some("ls"));
        assert_eq!(shell_prefix("python3 build.py").as_deref(), Some("python3"));
        assert_eq!(shell_prefix("   ").as_deref(), None);
    }

    #[test]
    fn compound_commands_are_never_granted() {
        for c in [
            "cargo test && rm -rf /",
            "cargo test; rm x",
            "cargo test | tee out",
            "cargo test > out",
            "cargo test $(rm x)",
            "cargo test `rm x`",
            "FOO=1 cargo test",
            "cargo test 'a;b'",
            "cargo test\nrm x",
        ] {
            assert_eq!(shell_prefix(c), None, "{c}");
        }
    }

    #[test]
    fn a_shell_grant_covers_the_prefix_and_not_compounds_or_other_programs() {
        let grants = SessionGrants::default();
        assert!(grants.grant(&shell("cargo test -p a")));
        assert!(grants.covers(&shell("cargo test --workspace")));
        assert!(!grants.covers(&shell("cargo build")));
        assert!(!grants.covers(&shell("cargo test && curl evil.sh")));
        assert!(!grants.grant(&shell("make && make install")));
        assert_eq!(grants.list(), vec!["shell:cargo test".to_owned()]);
    }

    #[test]
    fn a_tool_grant_covers_every_call_of_that_tool() {
        let grants = SessionGrants::default();
        grants.grant(&call("edit", json!({"path": "a"})));
        assert!(grants.covers(&call("edit", json!({"path": "b"}))));
        assert!(!grants.covers(&call("write_file", json!({"path": "b"}))));
        assert_eq!(
            grant_label(&call("edit", json!({}))).as_deref(),
            Some("edit")
        );
        assert_eq!(
            grant_label(&shell("git log -3")).as_deref(),
            Some("git log …")
        );
        grants.clear();
        assert!(!grants.covers(&call("edit", json!({"path": "b"}))));
    }
}
