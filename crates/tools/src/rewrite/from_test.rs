//! A fix checked by a test, written from the test when the model cannot patch the
//! code, and kept only if the test then passes.
//!
//! Asked "python3 test_lists.py fails. Fix it.", with `return xs[:n - 1]` in
//! `lists.py`, Qwen2.5-Coder-0.5B gives `lists.py` back as it is, with the test beside it
//! or not, and with the failure's traceback or not; so it did for `x * 2` in `square`
//! and `a - b` in `add`. Shown only the test and asked to write the module so that it
//! passes, it wrote `xs[:n]` and `x * x`: read as a specification, the test says what the
//! buggy line hides. Such a text may be wrong, or drop what the test does not cover, so
//! saki runs the test after writing it and puts the module back when the test still
//! fails:
//!
//! 1. At the end of a turn that changed nothing, whose request is checked by a test it
//!    names, the first module that test imports is asked for anew from the test alone,
//!    once a turn. A Python text must still define every top-level function and class
//!    the module defined; lines that import the module itself are left out.
//! 2. At the next turn end, the test's command runs (the one the prompt writes before the
//!    test, `python3 test_x.py`; else by the test's kind): a `shell` call saki makes,
//!    approved and sandboxed as any.
//! 3. At the one after, a run that did not end with exit code 0 (or did not run) puts the
//!    module back as it was.

use super::answer::{code_block, without_caption};
use super::checks::{imports_itself, tested_modules};
use super::py_imports::with_missing_imports;
use super::{fenced_file, shown_path, RewriteEdits, Settled};
use crate::intent::bare_word;
use crate::unlooked::ran::{quoted_path, script_command};
use saki_llm_worker::interceptor::{OwnCall, OWN_CALL_PREFIX};
use saki_llm_worker::{Item, ToolResultStatus};

/// A module written from its test in this turn, and how far its check has gone.
#[derive(Debug, Clone)]
pub(super) struct FromTest {
    path: String,
    old: String,
    new: String,
    command: String,
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Written; the test runs next.
    Written,
    /// The test ran; its result decides.
    Ran,
    /// Kept or put back.
    Done,
}

/// Words that run a test file written right after them.
const RUNNERS: &[&str] = &[
    "python", "python3", "node", "pytest", "ruby", "sh", "bash", "deno", "bun",
];

impl RewriteEdits {
    /// The call that takes the fix written from a test one step on, or that starts one
    /// (see the module's documentation). `changed`: whether the turn changed a file.
    pub(super) async fn fix_from_test_call(
        &self,
        prompt: &str,
        turn: &[Item],
        changed: bool,
    ) -> Option<OwnCall> {
        let phase = self.state().from_test.as_ref().map(|f| f.phase);
        match phase {
            Some(Phase::Written) => return self.test_run_call(turn),
            Some(Phase::Ran) => return self.kept_or_put_back(turn),
            Some(Phase::Done) => return None,
            None => {}
        }
        if changed || self.state().from_test_tried {
            return None;
        }
        for named in self.named_tests(prompt).await {
            let test = named.shown;
            let test_text = named.text;
            let command = test_command(prompt, &named.written, &test, &test_text)?;
            for module in tested_modules(&test_text, &test) {
                let Some((path, resolved, old)) = self.file(&module).await else {
                    continue;
                };
                let shown = shown_path(&self.workspace, &resolved, &path);
                self.state().from_test_tried = true;
                let request = format!(
                    "{}Write {shown} so that {test} passes.\nReply with the complete content \
                     of {shown}, all of it, in one code block.",
                    fenced_file(&test, &test_text)
                );
                let answer = self.answer(&request).await?;
                let new = written_from_test(&old, &answer, &shown)?;
                self.settle(resolved, Settled::Rewritten);
                self.state().from_test = Some(FromTest {
                    path: path.clone(),
                    old: old.clone(),
                    new: new.clone(),
                    command: command.clone(),
                    phase: Phase::Written,
                });
                return Some(OwnCall {
                    name: "edit".into(),
                    arguments:
                        serde_json::json!({"path": path, "old_string": old, "new_string": new})
                            .to_string(),
                    note: format!(
                        "[The turn had changed nothing, so saki asked for {shown} written \
                         anew from {test}, which checks this request, and wrote it. It runs \
                         `{command}` next and keeps the change only if that passes.]"
                    ),
                });
            }
        }
        None
    }

    /// After the module was written: the test's run, or nothing when the write failed.
    fn test_run_call(&self, turn: &[Item]) -> Option<OwnCall> {
        let mut state = self.state();
        let from_test = state.from_test.as_mut()?;
        if last_own_result(turn, "edit")
            .is_none_or(|(status, _)| status != ToolResultStatus::Success)
        {
            from_test.phase = Phase::Done;
            return None;
        }
        from_test.phase = Phase::Ran;
        Some(OwnCall {
            name: "shell".into(),
            arguments: serde_json::json!({ "command": from_test.command }).to_string(),
            note: format!(
                "[saki ran `{}`, the test this request is checked by. Tell the person in one \
                 sentence whether it passes.]",
                from_test.command
            ),
        })
    }

    /// After the test ran: nothing when it passed, else the edit that puts the module
    /// back.
    fn kept_or_put_back(&self, turn: &[Item]) -> Option<OwnCall> {
        let mut state = self.state();
        let from_test = state.from_test.as_mut()?;
        from_test.phase = Phase::Done;
        let passed = last_own_result(turn, "shell").is_some_and(|(status, content)| {
            status == ToolResultStatus::Success && content.trim_end().ends_with("[exit code: 0]")
        });
        if passed {
            return None;
        }
        Some(OwnCall {
            name: "edit".into(),
            arguments: serde_json::json!({
                "path": from_test.path,
                "old_string": from_test.new,
                "new_string": from_test.old,
            })
            .to_string(),
            note: format!(
                "[`{}` did not pass with the text saki wrote, so saki put {} back as it was. \
                 Tell the person in one sentence that the fix was not found.]",
                from_test.command, from_test.path
            ),
        })
    }
}

/// The status and content of the last result of a call of `name` saki made itself.
fn last_own_result<'a>(turn: &'a [Item], name: &str) -> Option<(ToolResultStatus, &'a str)> {
    turn.iter().rev().find_map(|item| match item {
        Item::ToolResult {
            name: n,
            status,
            content,
            ctx,
        } if n == name && ctx.call_id.starts_with(OWN_CALL_PREFIX) => {
            Some((*status, content.as_str()))
        }
        _ => None,
    })
}

/// The command that runs the test `test` (written in the prompt as `written`): the
/// runner the prompt writes right before it (`python3 test_x.py`), else pytest for a
/// Python file of `def test_…` functions, else the interpreter its extension names.
fn test_command(prompt: &str, written: &str, test: &str, text: &str) -> Option<String> {
    let words: Vec<&str> = prompt.split_whitespace().collect();
    let runner = words
        .windows(2)
        .find(|w| bare_word(w[1]) == written)
        .map(|w| bare_word(w[0]).to_ascii_lowercase())
        .filter(|r| RUNNERS.contains(&r.as_str()));
    let script = script_command(test)?;
    let path = quoted_path(test);
    if let Some(runner) = runner {
        return Some(format!("{runner} {path}"));
    }
    let python_functions = test.ends_with(".py")
        && text.lines().any(|l| l.starts_with("def test"))
        && !text.contains("__main__");
    match python_functions {
        true => Some(format!("python3 -m pytest -q {path}")),
        false => Some(script),
    }
}

/// The module's new text in `answer`, written from its test: its code block, without a
/// caption or lines that import the module itself; for Python, only when it still
/// defines every top-level function and class `old` did, with the standard imports it
/// uses.
fn written_from_test(old: &str, answer: &str, shown: &str) -> Option<String> {
    let block = without_caption(code_block(answer)?, old, shown);
    let mut new: String = block
        .split_inclusive('\n')
        .filter(|line| !imports_itself(line, shown))
        .collect();
    if !new.ends_with('\n') {
        new.push('\n');
    }
    let new = new.trim_start_matches('\n').to_owned();
    if new.trim().is_empty() || new.trim_end() == old.trim_end() {
        return None;
    }
    if !shown.ends_with(".py") {
        return Some(new);
    }
    let defined = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let rest = l
                    .strip_prefix("def ")
                    .or_else(|| l.strip_prefix("class "))?;
                let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
                Some(rest[..end].to_owned())
            })
            .collect()
    };
    let now = defined(&new);
    if !defined(old).iter().all(|name| now.contains(name)) {
        return None;
    }
    Some(with_missing_imports(old, &new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_runs_as_the_prompt_writes_it_else_by_its_kind() {
        let plain = "assert f() == 1\n";
        assert_eq!(
            test_command(
                "python3 test_a.py fails. Fix it.",
                "test_a.py",
                "test_a.py",
                plain
            )
            .as_deref(),
            Some("python3 test_a.py")
        );
        assert_eq!(
            test_command("`node test.js` fails", "test.js", "test.js", plain).as_deref(),
            Some("node test.js")
        );
        let functions = "def test_a():\n    assert 1\n";
        assert_eq!(
            test_command("test_a.py fails", "test_a.py", "tests/test_a.py", functions).as_deref(),
            Some("python3 -m pytest -q tests/test_a.py")
        );
        assert_eq!(
            test_command("test_a.py fails", "test_a.py", "test_a.py", plain).as_deref(),
            Some("python3 test_a.py")
        );
        assert_eq!(
            test_command("notes.txt fails", "notes.txt", "notes.txt", plain),
            None
        );
    }

    #[test]
    fn a_text_written_from_a_test_keeps_every_definition_and_no_self_import() {
        let old = "def first_n(xs, n):\n    return xs[:n - 1]\n";
        let answer =
            "```python\nfrom lists import first_n\n\ndef first_n(lst, n):\n    return lst[:n]\n```";
        assert_eq!(
            written_from_test(old, answer, "lists.py").as_deref(),
            Some("def first_n(lst, n):\n    return lst[:n]\n")
        );
        let two = "def a():\n    pass\n\n\ndef b():\n    pass\n";
        assert_eq!(
            written_from_test(two, "```\ndef a():\n    return 1\n```", "m.py"),
            None
        );
        assert_eq!(
            written_from_test(old, &format!("```\n{old}```"), "lists.py"),
            None
        );
        assert_eq!(written_from_test(old, "no code", "lists.py"), None);
    }
}
