//! The loop guard: a turn must never burn its request budget repeating itself.
//!
//! Small models repeat a call whose result they already have (read the same file again
//! and again), retry a failing call unchanged, or alternate between two calls. Within
//! one turn the guard
//!
//! - answers a call identical to an earlier one (same tool, same arguments, keys in any
//!   order) from the earlier result instead of running it again, as long as nothing but
//!   that same call or failures happened in between (a test run after an edit does run
//!   again);
//! - after the third identical call, the same failing call twice, or an A-B-A-B pattern,
//!   asks for the next request to be sent with tool choice "none", so the model has to
//!   answer in text.

use crate::item::ToolResultStatus;
use serde_json::Value;

/// Lines and bytes of an earlier result repeated for an identical call.
const REPEAT_LINES: usize = 20;
const REPEAT_BYTES: usize = 1024;
/// How the result of a repeated call starts.
const REPEAT_NOTE: &str = "[this call is identical to an earlier one";

#[derive(Debug, Clone)]
struct Record {
    key: String,
    status: ToolResultStatus,
    /// The result the call really produced (for a repeat: the earlier one's).
    content: String,
}

#[derive(Debug, Default)]
pub struct LoopGuard {
    records: Vec<Record>,
    /// Why the next request must not offer tool calls, once decided.
    stop: Option<String>,
}

/// `name` with its arguments in canonical form (object keys sorted).
pub fn call_key(name: &str, arguments: &str) -> String {
    let canonical = serde_json::from_str::<Value>(arguments)
        .map(|v| canonical(&v).to_string())
        .unwrap_or_else(|_| arguments.trim().to_owned());
    format!("{name} {canonical}")
}

fn canonical(value: &Value) -> Value {
    match value {
        // serde_json's map is ordered by key unless preserve_order is on.
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), canonical(v)))
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_iter()
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

impl LoopGuard {
    pub fn new() -> Self {
        Self::default()
    }

    /// For a call about to run: the result to give instead, when it repeats an earlier
    /// identical call with nothing in between that could have changed the outcome.
    pub fn repeat_of(&self, key: &str) -> Option<(String, ToolResultStatus)> {
        let last = self.records.iter().rposition(|r| r.key == key)?;
        let unchanged = self.records[last + 1..]
            .iter()
            .all(|r| r.key == key || r.status != ToolResultStatus::Success);
        if !unchanged {
            return None;
        }
        let earlier = &self.records[last];
        Some((repeat_result(&earlier.content), earlier.status))
    }

    /// Records a call's result (also a repeated one, which keeps the original result).
    pub fn record(&mut self, key: String, status: ToolResultStatus, content: &str) {
        let earlier = self.records.iter().rev().find(|r| r.key == key);
        let content = match earlier {
            Some(earlier) if content.starts_with(REPEAT_NOTE) => earlier.content.clone(),
            _ => content.to_owned(),
        };
        self.records.push(Record {
            key,
            status,
            content,
        });
        if self.stop.is_none() {
            self.stop = self.pattern();
        }
    }

    /// Decides that the next request must be answered in text, unless already decided.
    pub fn stop_with(&mut self, reason: String) {
        self.stop.get_or_insert(reason);
    }

    /// Why the next request must be answered in text, if it must.
    pub fn stop_reason(&self) -> Option<&str> {
        self.stop.as_deref()
    }

    fn pattern(&self) -> Option<String> {
        let last = self.records.last()?;
        let same: Vec<&Record> = self.records.iter().filter(|r| r.key == last.key).collect();
        let name = last.key.split(' ').next().unwrap_or("");
        if same.len() >= 3 {
            return Some(format!(
                "`{name}` was called three times with the same arguments"
            ));
        }
        let failed = same
            .iter()
            .filter(|r| r.status != ToolResultStatus::Success)
            .count();
        if failed >= 2 {
            return Some(format!("the same failing `{name}` call was made twice"));
        }
        if let [.., a, b, c, d] = self.records.as_slice() {
            if a.key == c.key && b.key == d.key && a.key != b.key {
                return Some("the same two calls alternate (A-B-A-B)".to_owned());
            }
        }
        None
    }
}

/// Whether a result is the note given to a repeated call instead of running it.
pub fn is_repeat_note(content: &str) -> bool {
    content.starts_with(REPEAT_NOTE)
}

/// What a call identical to an earlier one gets instead of running: a note saying so and
/// the earlier result in short.
pub fn repeat_result(earlier: &str) -> String {
    format!(
        "{REPEAT_NOTE} in this turn and was not run again; use that result, or answer the \
         person. The earlier result:]\n{}",
        short(earlier)
    )
}

fn short(content: &str) -> String {
    let mut out: String = content
        .lines()
        .take(REPEAT_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    if out.len() > REPEAT_BYTES {
        let mut cut = REPEAT_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    if out.len() < content.trim_end().len() {
        out.push_str("\n[...]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ToolResultStatus::{Error, Success};

    #[test]
    fn keys_ignore_key_order_and_blanks() {
        assert_eq!(
            call_key("read_file", r#"{"path": "a", "limit": 5}"#),
            call_key("read_file", r#"{ "limit":5,"path":"a" }"#)
        );
        assert_ne!(
            call_key("read_file", r#"{"path": "a"}"#),
            call_key("ls", r#"{"path": "a"}"#)
        );
    }

    #[test]
    fn a_repeated_read_gets_the_earlier_result_and_the_third_stops_tools() {
        let mut g = LoopGuard::new();
        let key = call_key("read_file", r#"{"path": "NOTE.txt"}"#);
        assert!(g.repeat_of(&key).is_none());
        g.record(key.clone(), Success, "The word is MANGO.");
        let (again, status) = g.repeat_of(&key).unwrap();
        assert!(again.contains("identical") && again.contains("MANGO"));
        assert_eq!(status, Success);
        g.record(key.clone(), status, &again);
        let (third, _) = g.repeat_of(&key).unwrap();
        assert_eq!(third.matches("identical").count(), 1, "not nested: {third}");
        assert!(g.stop_reason().is_none());
        g.record(key.clone(), status, &third);
        assert!(g.stop_reason().unwrap().contains("three times"));
    }

    #[test]
    fn a_call_after_a_change_runs_again() {
        let mut g = LoopGuard::new();
        let test = call_key("shell", r#"{"command": "cargo test"}"#);
        g.record(test.clone(), Success, "1 failed");
        g.record(call_key("edit", r#"{"path": "a"}"#), Success, "ok");
        assert!(g.repeat_of(&test).is_none());
        // A failure in between changes nothing.
        g.record(test.clone(), Success, "ok");
        g.record(call_key("edit", r#"{"path": "b"}"#), Error, "not found");
        assert!(g.repeat_of(&test).is_some());
    }

    #[test]
    fn the_same_failure_twice_and_alternation_stop_tools() {
        let mut g = LoopGuard::new();
        let bad = call_key("edit", r#"{"path": "a", "old": "x"}"#);
        g.record(bad.clone(), Error, "not found");
        assert!(g.stop_reason().is_none());
        g.record(bad, Error, "not found");
        assert!(g.stop_reason().unwrap().contains("failing"));

        let mut g = LoopGuard::new();
        let (a, b) = (call_key("ls", "{}"), call_key("glob", "{}"));
        for key in [&a, &b, &a] {
            g.record(key.clone(), Success, "x");
        }
        assert!(g.stop_reason().is_none());
        g.record(b, Success, "x");
        assert!(g.stop_reason().unwrap().contains("A-B-A-B"));
    }

    #[test]
    fn long_results_are_repeated_in_short() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let s = short(&long);
        assert_eq!(s.lines().count(), REPEAT_LINES + 1);
        assert!(s.ends_with("[...]"));
    }
}
