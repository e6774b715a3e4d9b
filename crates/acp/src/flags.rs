//! What the client said it can do in `initialize`, as the sessions read it.

use agent_client_protocol::v1::schema::ClientCapabilities;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the client said it can do.
#[derive(Debug, Default)]
pub struct ClientFlags {
    /// It shows prompt suggestions (`session.promptSuggestions`).
    suggestions: AtomicBool,
    /// It fills in forms (`elicitation.form`): `ask_user` can reach the person.
    elicitation: AtomicBool,
    /// It reads and writes its buffers for the agent (`fs.readTextFile`,
    /// `fs.writeTextFile`).
    fs_read: AtomicBool,
    fs_write: AtomicBool,
}

impl ClientFlags {
    /// Reads what the SDK's schema keeps of the capabilities (a `_meta` flag).
    pub(crate) fn observe_capabilities(&self, caps: &ClientCapabilities) {
        let flagged = |meta: Option<&serde_json::Map<String, serde_json::Value>>| {
            meta.and_then(|m| m.get("promptSuggestions"))
                .is_some_and(|v| !v.is_null() && v != &serde_json::Value::Bool(false))
        };
        self.fs_read
            .store(caps.fs.read_text_file, Ordering::Relaxed);
        self.fs_write
            .store(caps.fs.write_text_file, Ordering::Relaxed);
        if caps.elicitation.as_ref().is_some_and(|e| e.form.is_some()) {
            self.elicitation.store(true, Ordering::Relaxed);
        }
        let session_meta = caps.session.as_ref().and_then(|s| s.meta.as_ref());
        if flagged(caps.meta.as_ref()) || flagged(session_meta) {
            self.suggestions.store(true, Ordering::Relaxed);
        }
    }

    /// Reads an incoming line: an `initialize` whose capabilities name
    /// `session.promptSuggestions` (a field newer than the SDK's schema).
    pub(crate) fn observe_line(&self, line: &str) {
        if !line.contains("\"initialize\"") {
            return;
        }
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            return;
        };
        if message.get("method").and_then(|m| m.as_str()) != Some("initialize") {
            return;
        }
        let caps = &message["params"]["clientCapabilities"]["session"]["promptSuggestions"];
        if !caps.is_null() && caps != &serde_json::Value::Bool(false) {
            self.suggestions.store(true, Ordering::Relaxed);
        }
    }

    pub fn suggestions(&self) -> bool {
        self.suggestions.load(Ordering::Relaxed)
    }

    pub fn elicitation(&self) -> bool {
        self.elicitation.load(Ordering::Relaxed)
    }

    /// Whether the client reads (`.0`) and writes (`.1`) text files for the agent.
    pub fn fs(&self) -> (bool, bool) {
        (
            self.fs_read.load(Ordering::Relaxed),
            self.fs_write.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_offered_only_to_a_client_that_shows_them() {
        let flags = ClientFlags::default();
        flags.observe_line(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{}}}"#,
        );
        assert!(!flags.suggestions());
        flags.observe_line(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"session":{"promptSuggestions":{}}}}}"#);
        assert!(flags.suggestions());
    }
}
