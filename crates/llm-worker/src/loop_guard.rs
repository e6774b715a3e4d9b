//! The loop guard: a turn must never burn its request budget repeating itself.
//!
//! Small models repeat a call whose result they already have (read the same file again
//! and again), retry a failing call unchanged, or alternate between two calls. Within
//! one turn the guard
//!
//! - answers a call identical to an earlier one (same tool, same arguments, keys in any
//!   order) from the earlier result instead of running it again, as long as nothing that
//!   could change the outcome happened in between: only that same call, failures, or
//!   tools that only look (a test run after an edit does run again);
//! - after the third identical call, the same failing call twice, or a cycle of two or
//!   three calls made twice over (A-B-A-B, A-B-C-A-B-C), asks for the next request to be
//!   sent with tool choice "none", so the model has to answer in text.

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
    /// Whether it may have changed something: it succeeded and its tool does more than
    /// look.
    changes: bool,
    /// The result the call really produced (for a repeat: the earlier one's).
    content: String,
}

#[derive(Debug, Default)]
pub struct LoopGuard {
    records: Vec<Record>,
    /// Why the next request must not offer tool calls, once decided.
    stop: Option<String>,
    /// The offered tools in their listed order, when a tour of them is to stop the turn
    /// (see [`LoopGuard::stop_tours`]).
    tour_order: Vec<String>,
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
            .all(|r| r.key == key || !r.changes);
        if !unchanged {
            return None;
        }
        let earlier = &self.records[last];
        Some((repeat_result(&earlier.content), earlier.status))
    }

    /// Records a call's result (also a repeated one, which keeps the original result).
    /// `read_only`: the call's tool only looks (see [`crate::Tool::read_only`]).
    pub fn record(
        &mut self,
        key: String,
        status: ToolResultStatus,
        content: &str,
        read_only: bool,
    ) {
        let earlier = self.records.iter().rev().find(|r| r.key == key);
        let content = match earlier {
            Some(earlier) if content.starts_with(REPEAT_NOTE) => earlier.content.clone(),
            _ => content.to_owned(),
        };
        self.records.push(Record {
            key,
            changes: status == ToolResultStatus::Success && !read_only,
            status,
            content,
        });
        if self.stop.is_none() {
            self.stop = self.pattern();
        }
    }

    /// Also stops a tour: three calls in a row of tools listed one after another
    /// (`read_file`, `ls`, `glob`), in that order, sharing an argument. A small model
    /// told which tools exist tried each in turn on the workspace's root, down to an
    /// `edit` whose arguments were its field names.
    pub fn stop_tours(&mut self, order: Vec<String>) {
        self.tour_order = order;
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
        (2..=3)
            .find_map(|len| self.cycle(len))
            .or_else(|| self.tour())
    }

    /// The last three calls are a tour of the listed tools (see [`Self::stop_tours`]).
    fn tour(&self) -> Option<String> {
        const LEN: usize = 3;
        let n = self.records.len();
        if self.tour_order.is_empty() || n < LEN {
            return None;
        }
        let calls: Vec<(usize, Vec<String>)> = self.records[n - LEN..]
            .iter()
            .map(|r| {
                let (name, arguments) = r.key.split_once(' ')?;
                let place = self.tour_order.iter().position(|t| t == name)?;
                Some((place, string_values(arguments)))
            })
            .collect::<Option<_>>()?;
        let in_order = calls.windows(2).all(|w| w[1].0 == w[0].0 + 1);
        let shared = calls[0]
            .1
            .iter()
            .any(|v| calls[1..].iter().all(|(_, values)| values.contains(v)));
        (in_order && shared).then(|| {
            let names: Vec<&str> = calls
                .iter()
                .map(|(place, _)| self.tour_order[*place].as_str())
                .collect();
            format!(
                "`{}` were called one after another, in the order they are listed, with the \
                 same argument",
                names.join("`, `")
            )
        })
    }

    /// The last `len` calls repeat the `len` before them, and are not all one call.
    fn cycle(&self, len: usize) -> Option<String> {
        let n = self.records.len();
        if n < 2 * len {
            return None;
        }
        let (before, after) = (
            &self.records[n - 2 * len..n - len],
            &self.records[n - len..],
        );
        let repeats = before.iter().zip(after).all(|(a, b)| a.key == b.key);
        let varied = after.iter().any(|r| r.key != after[0].key);
        (repeats && varied).then(|| match len {
            2 => "the same two calls alternate (A-B-A-B)".to_owned(),
            _ => format!("the same {len} calls repeat in a cycle"),
        })
    }
}

/// The string values of a call's arguments, at the top level.
fn string_values(arguments: &str) -> Vec<String> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map
            .into_values()
            .filter_map(|v| match v {
                Value::String(s) if !s.is_empty() => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
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
    fn a_tour_of_the_listed_tools_on_one_argument_stops_the_turn() {
        let order: Vec<String> = ["read_file", "ls", "glob", "grep", "shell"]
            .map(String::from)
            .to_vec();
        let record = |g: &mut LoopGuard, name: &str, args: &str| {
            g.record(call_key(name, args), Success, "x", true);
        };
        let mut g = LoopGuard::new();
        g.stop_tours(order.clone());
        record(&mut g, "read_file", r#"{"path": "/ws"}"#);
        record(&mut g, "ls", r#"{"path": "/ws"}"#);
        assert_eq!(g.stop_reason(), None);
        record(&mut g, "glob", r#"{"pattern": "**/*.rs", "path": "/ws"}"#);
        assert_eq!(
            g.stop_reason(),
            Some(
                "`read_file`, `ls`, `glob` were called one after another, in the order they \
                 are listed, with the same argument"
            )
        );
        // Work: another order, or no argument in common, or not asked for.
        for calls in [
            [("ls", "src"), ("read_file", "src"), ("glob", "src")],
            [("read_file", "a.py"), ("ls", "src"), ("glob", "src")],
        ] {
            let mut g = LoopGuard::new();
            g.stop_tours(order.clone());
            for (name, path) in calls {
                record(&mut g, name, &format!(r#"{{"path": "{path}"}}"#));
            }
            assert_eq!(g.stop_reason(), None, "{calls:?}");
        }
        let mut g = LoopGuard::new();
        for name in ["read_file", "ls", "glob"] {
            record(&mut g, name, r#"{"path": "/ws"}"#);
        }
        assert_eq!(g.stop_reason(), None);
    }

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
        g.record(key.clone(), Success, "The word is MANGO.", true);
        let (again, status) = g.repeat_of(&key).unwrap();
        assert!(again.contains("identical") && again.contains("MANGO"));
        assert_eq!(status, Success);
        g.record(key.clone(), status, &again, true);
        let (third, _) = g.repeat_of(&key).unwrap();
        assert_eq!(third.matches("identical").count(), 1, "not nested: {third}");
        assert!(g.stop_reason().is_none());
        g.record(key.clone(), status, &third, true);
        assert!(g.stop_reason().unwrap().contains("three times"));
    }

    #[test]
    fn a_call_after_a_change_runs_again() {
        let mut g = LoopGuard::new();
        let test = call_key("shell", r#"{"command": "cargo test"}"#);
        g.record(test.clone(), Success, "1 failed", false);
        g.record(call_key("edit", r#"{"path": "a"}"#), Success, "ok", false);
        assert!(g.repeat_of(&test).is_none());
        // A failure in between changes nothing.
        g.record(test.clone(), Success, "ok", false);
        g.record(
            call_key("edit", r#"{"path": "b"}"#),
            Error,
            "not found",
            false,
        );
        assert!(g.repeat_of(&test).is_some());
    }

    #[test]
    fn calls_that_only_look_in_between_change_nothing() {
        let mut g = LoopGuard::new();
        let page = |n: u32| {
            call_key(
                "read_file",
                &format!(r#"{{"path": "a.py", "offset": {n}}}"#),
            )
        };
        for n in [2, 3, 4] {
            g.record(page(n), Success, "line", true);
        }
        assert!(
            g.repeat_of(&page(2)).is_some(),
            "pages 3 and 4 changed nothing"
        );
        g.record(
            call_key("write_file", r#"{"path": "a.py"}"#),
            Success,
            "ok",
            false,
        );
        assert!(
            g.repeat_of(&page(2)).is_none(),
            "a write in between may have"
        );
    }

    #[test]
    fn a_cycle_of_three_calls_made_twice_stops_tools() {
        let mut g = LoopGuard::new();
        let keys = [
            call_key("ls", "{}"),
            call_key("glob", "{}"),
            call_key("grep", "{}"),
        ];
        for key in keys.iter().chain(&keys[..2]) {
            g.record(key.clone(), Success, "x", false);
        }
        assert!(g.stop_reason().is_none());
        g.record(keys[2].clone(), Success, "x", false);
        assert!(
            g.stop_reason().unwrap().contains("3 calls repeat"),
            "{:?}",
            g.stop_reason()
        );
    }

    #[test]
    fn the_same_failure_twice_and_alternation_stop_tools() {
        let mut g = LoopGuard::new();
        let bad = call_key("edit", r#"{"path": "a", "old": "x"}"#);
        g.record(bad.clone(), Error, "not found", false);
        assert!(g.stop_reason().is_none());
        g.record(bad, Error, "not found", false);
        assert!(g.stop_reason().unwrap().contains("failing"));

        let mut g = LoopGuard::new();
        let (a, b) = (call_key("ls", "{}"), call_key("glob", "{}"));
        for key in [&a, &b, &a] {
            g.record(key.clone(), Success, "x", true);
        }
        assert!(g.stop_reason().is_none());
        g.record(b, Success, "x", true);
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
