//! The test a fix is to pass, and code that imports itself: two ways a small model's fix
//! leaves things worse than it found them.
//!
//! Asked "test_pager.py fails. Fix pager.py so that it passes.", Qwen2.5-Coder-0.5B edits
//! the test: it copies `last_page` into it, so the test runs the copy and the bug stays.
//! A test the request names as its check is what the fix is judged by, so in such a turn
//! a change of a test file is refused unless the request asks to change a test.
//!
//! The model does at times write the right fix, into the test: asked "test_temp.py
//! fails; fix to_f in temp.py.", it added `def to_f(temp): return temp * 9/5 + 32` to
//! the test, which imports `to_f` from `temp`. A Python function the model writes into
//! a test, where the test imports that function from a module of the workspace that
//! defines it, is the module's new function: the refused call is replaced by an edit
//! of the module (see [`misplaced_fix`]).
//!
//! Shown a test that imports `pager`, the same model writes `from pager import
//! last_page` into `pager.py`: the module then fails to import at all. A new text that
//! imports the file it is written to is not used.

use super::{shown_path, RewriteEdits};
use saki_llm_worker::interceptor::{ToolAction, ToolCallInfo};

/// Words that say a request is checked by something passing or failing.
const CHECK_WORDS: &[&str] = &[
    "pass", "passes", "passing", "passed", "fail", "fails", "failing", "failed", "failure",
    "failures", "crash", "crashes", "crashing", "crashed",
];

/// Words between a change word and the test it changes ("update the tests").
const FILLER: &[&str] = &["the", "a", "an", "new", "its", "this", "that", "my", "one"];

/// Whether `prompt` is judged by a test passing (or a command no longer failing), and
/// does not ask for a test to change: then the tests are its check, not its work.
pub(super) fn tests_are_the_check(prompt: &str) -> bool {
    let words: Vec<String> = prompt
        .split_whitespace()
        .map(|w| crate::intent::bare_word(w).to_lowercase())
        .collect();
    let checked = words.iter().any(|w| CHECK_WORDS.contains(&w.as_str()));
    checked && !asks_to_change_a_test(&words)
}

/// Whether a change word is followed, past filler, by a test ("fix the test", "add a
/// test to", "update test_app.py") that is not then said to pass or fail ("make the
/// tests pass" asks for the code to change).
fn asks_to_change_a_test(words: &[String]) -> bool {
    words.iter().enumerate().any(|(at, word)| {
        if !crate::intent::change_word(word) {
            return false;
        }
        let mut next = words[at + 1..]
            .iter()
            .skip_while(|w| FILLER.contains(&w.as_str()));
        let names_a_test = next
            .next()
            .is_some_and(|w| w.starts_with("test") || w.starts_with("spec") || is_test_file(w));
        let then_checked = next
            .next()
            .is_some_and(|w| CHECK_WORDS.contains(&w.as_str()));
        names_a_test && !then_checked
    })
}

/// Whether `path` names a test by the usual conventions: `test_x.py`, `x_test.go`,
/// `x.test.ts`, `x.spec.js`, `conftest.py`, or a file under `tests/`, `test/`, `spec/`
/// or `__tests__/`.
pub(super) fn is_test_file(path: &str) -> bool {
    let lower = path.to_lowercase();
    let mut parts: Vec<&str> = lower.split(['/', '\\']).collect();
    let Some(name) = parts.pop().filter(|name| name.contains('.')) else {
        return false;
    };
    let in_tests = parts
        .iter()
        .any(|dir| matches!(*dir, "test" | "tests" | "spec" | "__tests__"));
    let stem = name.split('.').next().unwrap_or(name);
    in_tests
        || stem.starts_with("test_")
        || stem == "test"
        || stem == "conftest"
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Why a change of the test `shown` is refused in a turn whose request it checks.
pub(super) fn test_refusal(shown: &str) -> String {
    format!(
        "{shown} is the test this request is checked by, so it stays as it is. Change the \
         code it tests instead, then answer the person."
    )
}

/// A test the prompt names as its check: the path as written, as shown, and its text.
pub(super) struct NamedTest {
    pub(super) written: String,
    pub(super) shown: String,
    pub(super) text: String,
}

impl RewriteEdits {
    /// The tests `prompt` names that exist, when the request is checked by its tests.
    pub(super) async fn named_tests(&self, prompt: &str) -> Vec<NamedTest> {
        if !tests_are_the_check(prompt) {
            return Vec::new();
        }
        let mut tests = Vec::new();
        for word in super::named_files(prompt) {
            if !is_test_file(word) {
                continue;
            }
            if let Some((path, resolved, text)) = self.file(word).await {
                tests.push(NamedTest {
                    shown: shown_path(&self.workspace, &resolved, &path),
                    written: word.to_owned(),
                    text,
                });
            }
        }
        tests
    }

    /// What becomes of the model's change `call` of a test in a turn checked by its
    /// tests: a function the change writes for the module it tests goes to that module,
    /// or else it is refused. `None`: not such a call.
    pub(super) async fn test_change(&self, call: &ToolCallInfo) -> Option<ToolAction> {
        if !crate::intent::changes_files(&call.name) {
            return None;
        }
        let path = call.input.get("path")?.as_str()?;
        let prompt = self.state().prompt.clone()?;
        let relative = std::path::Path::new(path)
            .strip_prefix(self.workspace.root())
            .ok()
            .and_then(|p| p.to_str())
            .unwrap_or(path);
        if !(is_test_file(relative) && tests_are_the_check(&prompt)) {
            return None;
        }
        if let Some(action) = self.fix_for_module(call, path).await {
            return Some(action);
        }
        Some(ToolAction::Deny(test_refusal(relative)))
    }

    /// The change of a module that the model's change `call` of the test `path` makes
    /// in the wrong file (see [`misplaced_fix`]).
    async fn fix_for_module(&self, call: &ToolCallInfo, path: &str) -> Option<ToolAction> {
        let (_, test_resolved, old_test) = self.file(path).await?;
        let new_test = text_after(call, &old_test)?;
        let test_shown = shown_path(&self.workspace, &test_resolved, path);
        for (module, name, def) in misplaced_fix(&old_test, &new_test, &test_shown) {
            let Some((module, resolved, old)) = self.file(&module).await else {
                continue;
            };
            let Some(new) = with_function(&old, &name, &def) else {
                continue;
            };
            let shown = shown_path(&self.workspace, &resolved, &module);
            let note = format!(
                "[{test_shown} is the test this request is checked by and stays as it is; \
                 it imports {name} from {shown}, so saki wrote the {name} this call gave \
                 into {shown} instead]"
            );
            return Some(self.replaced(call, &module, resolved, (&old, &new), note));
        }
        None
    }
}

/// The text of the file `old` after the model's change `call` of it: a `write_file`'s
/// content, or an `edit`'s replacement (an empty `old_string` adds at the end).
fn text_after(call: &ToolCallInfo, old: &str) -> Option<String> {
    if call.name == "write_file" {
        return call.input.get("content")?.as_str().map(str::to_owned);
    }
    let from = call.input.get("old_string")?.as_str()?;
    let to = call.input.get("new_string")?.as_str()?;
    if from.is_empty() {
        return Some(format!("{old}{to}"));
    }
    old.contains(from).then(|| old.replacen(from, to, 1))
}

/// The Python functions a change of a test from `old` to `new` writes for the modules the
/// test imports them from: (the module's path as imported, relative to the workspace,
/// the function's name, its new definition), the module beside the test before the one
/// at the workspace's top. A definition the test had already is not one.
pub(super) fn misplaced_fix(
    old: &str,
    new: &str,
    test_shown: &str,
) -> Vec<(String, String, String)> {
    if !test_shown.ends_with(".py") {
        return Vec::new();
    }
    let dir = test_shown.rsplit_once('/').map_or("", |(dir, _)| dir);
    let imported = imported_names(old);
    let mut fixes = Vec::new();
    for (name, def) in top_level_functions(new) {
        if old.contains(def.as_str()) {
            continue;
        }
        let Some((_, module)) = imported.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let file = format!("{}.py", module.replace('.', "/"));
        // Beside the test first, then from the workspace's top.
        if !dir.is_empty() {
            fixes.push((format!("{dir}/{file}"), name.clone(), def.clone()));
        }
        fixes.push((file, name, def));
    }
    fixes
}

/// The names `text` imports with `from module import a, b` (`as` names skipped), with
/// their module.
fn imported_names(text: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for line in text.lines() {
        let Some((module, list)) = line
            .strip_prefix("from ")
            .and_then(|rest| rest.split_once(" import "))
        else {
            continue;
        };
        let module = module.trim();
        if module.starts_with('.') || module.is_empty() {
            continue;
        }
        for item in list
            .trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace())
            .split(',')
        {
            let mut words = item.split_whitespace();
            if let (Some(name), None) = (words.next(), words.next()) {
                names.push((name.to_owned(), module.to_owned()));
            }
        }
    }
    names
}

/// Each top-level `def` of `text`: its name and its lines, up to the next line at the
/// left margin, without the blank lines after it.
fn top_level_functions(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut functions = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(name) = line
            .strip_prefix("def ")
            .and_then(|rest| rest.split_once('('))
            .map(|(name, _)| name.trim())
        else {
            continue;
        };
        let end = lines[at + 1..]
            .iter()
            .position(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']))
            .map_or(lines.len(), |n| at + 1 + n);
        let body = lines[at..end]
            .iter()
            .rev()
            .skip_while(|l| l.trim().is_empty())
            .collect::<Vec<_>>();
        let def: Vec<&str> = body.into_iter().rev().copied().collect();
        functions.push((name.to_owned(), format!("{}\n", def.join("\n"))));
    }
    functions
}

/// `module` with its top-level function `name` replaced by `def`, when it defines it and
/// the definition differs.
fn with_function(module: &str, name: &str, def: &str) -> Option<String> {
    let (_, old_def) = top_level_functions(module)
        .into_iter()
        .find(|(n, _)| n == name)?;
    if old_def == def {
        return None;
    }
    let at = module.find(old_def.trim_end_matches('\n'))?;
    let end = at + old_def.trim_end_matches('\n').len();
    Some(format!(
        "{}{}{}",
        &module[..at],
        def.trim_end_matches('\n'),
        &module[end..]
    ))
}

/// The workspace paths a test's `text` may import its code from, the test being the
/// file `shown`: for Python, each module of `from X import` and `import X` (not a
/// relative one), beside the test and then from the workspace's top; for JavaScript and
/// TypeScript, each `require('./X')` or `from './X'`, beside the test, with the
/// extensions such a file has when the import leaves it out. Whether each exists is the
/// caller's to ask.
pub(super) fn tested_modules(text: &str, shown: &str) -> Vec<String> {
    let (dir, name) = shown.rsplit_once('/').unwrap_or(("", shown));
    let beside = |path: &str| match dir {
        "" => path.to_owned(),
        dir => format!("{dir}/{path}"),
    };
    let mut paths: Vec<String> = Vec::new();
    let extension = name.rsplit_once('.').map_or("", |(_, e)| e);
    for line in text.lines().map(str::trim) {
        if extension == "py" {
            let module = line
                .strip_prefix("from ")
                .and_then(|rest| rest.split_once(" import "))
                .map(|(module, _)| module.trim())
                .or_else(|| {
                    line.strip_prefix("import ")
                        .map(|rest| rest.split([',', ' ']).next().unwrap_or(""))
                });
            let Some(module) = module.filter(|m| !m.is_empty() && !m.starts_with('.')) else {
                continue;
            };
            let file = format!("{}.py", module.replace('.', "/"));
            paths.push(beside(&file));
            paths.push(file);
        } else if matches!(extension, "js" | "ts" | "mjs" | "cjs" | "jsx" | "tsx") {
            for quote in ['\'', '"'] {
                let opening = format!("{quote}./");
                let Some(at) = line.find(opening.as_str()) else {
                    continue;
                };
                if !(line.contains("require(") || line.starts_with("import ")) {
                    continue;
                }
                let rest = &line[at + opening.len()..];
                let Some((module, _)) = rest.split_once(quote) else {
                    continue;
                };
                if module.rsplit('/').next().is_some_and(|m| m.contains('.')) {
                    paths.push(beside(module));
                } else {
                    for ext in ["js", "ts", "mjs", "cjs", "jsx", "tsx"] {
                        paths.push(beside(&format!("{module}.{ext}")));
                    }
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    paths
}

/// Whether `text`, the text of the file `shown`, imports that file itself (Python's
/// `from pager import x` or `import pager` in `pager.py`; `require('./pager')` or
/// `from './pager'` in `pager.js`).
pub(super) fn imports_itself(text: &str, shown: &str) -> bool {
    let name = shown.rsplit('/').next().unwrap_or(shown);
    let Some((module, extension)) = name.rsplit_once('.') else {
        return false;
    };
    if module.is_empty() {
        return false;
    }
    let python = extension == "py";
    let script = matches!(extension, "js" | "ts" | "mjs" | "cjs" | "jsx" | "tsx");
    text.lines().map(str::trim).any(|line| {
        if python {
            let from = line
                .strip_prefix("from ")
                .and_then(|rest| rest.strip_prefix(module))
                .is_some_and(|rest| rest.starts_with(" import"));
            let import = line.strip_prefix("import ").is_some_and(|rest| {
                rest.split(',')
                    .any(|name| name.split_whitespace().next() == Some(module))
            });
            from || import
        } else if script {
            [format!("'./{module}'"), format!("\"./{module}\"")]
                .iter()
                .any(|quoted| {
                    (line.contains("require(") || line.starts_with("import "))
                        && line.contains(quoted.as_str())
                })
        } else {
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_named_as_the_check_is_not_the_work() {
        for prompt in [
            "test_pager.py fails. Fix pager.py so that it passes.",
            "python3 test_stack.py fails. Fix stack.py so that the test passes.",
            "Make the tests pass.",
            "npm test is failing since yesterday, fix the parser",
            "app.py crashes on start; fix it",
        ] {
            assert!(tests_are_the_check(prompt), "{prompt}");
        }
        for prompt in [
            "Fix the test in test_pager.py, it fails on Windows.",
            "Add a test for last_page to test_pager.py.",
            "Update test_app.py so it passes with the new API.",
            "Rename fetch to download in net.py",
            "Write tests for stack.py",
        ] {
            assert!(!tests_are_the_check(prompt), "{prompt}");
        }
    }

    #[test]
    fn test_files_are_known_by_their_names_and_folders() {
        for path in [
            "test_pager.py",
            "tests/helpers.py",
            "src/app_test.go",
            "web/button.test.tsx",
            "spec/models/user_spec.rb",
            "conftest.py",
            "pkg/__tests__/a.js",
        ] {
            assert!(is_test_file(path), "{path}");
        }
        for path in [
            "pager.py",
            "src/testing_utils.rs",
            "attest.py",
            "tests",
            "latest.json",
        ] {
            assert!(!is_test_file(path), "{path}");
        }
    }

    #[test]
    fn a_function_written_into_a_test_for_the_module_it_imports_belongs_there() {
        let test = "from temp import to_f\n\nassert to_f(0) == 32\n";
        let new = "from temp import to_f\n\ndef to_f(temp):\n    return temp * 9/5 + 32\n\n\
                   assert to_f(0) == 32\n";
        let fix = misplaced_fix(test, new, "tests/test_temp.py");
        assert_eq!(
            fix,
            ["tests/temp.py", "temp.py"].map(|path| (
                path.to_owned(),
                "to_f".to_owned(),
                "def to_f(temp):\n    return temp * 9/5 + 32\n".to_owned()
            ))
        );
        let module =
            "import math\n\n\ndef to_f(c):\n    return c * 9 / 5\n\n\ndef to_c(f):\n    pass\n";
        assert_eq!(
            with_function(module, "to_f", &fix[0].2).unwrap(),
            "import math\n\n\ndef to_f(temp):\n    return temp * 9/5 + 32\n\n\ndef to_c(f):\n    pass\n"
        );
        // The same definition, one the test does not import, or a helper of the test's own.
        assert_eq!(
            with_function(module, "to_c", "def to_c(f):\n    pass\n"),
            None
        );
        assert!(misplaced_fix(test, "def helper():\n    pass\n", "test_temp.py").is_empty());
        assert!(misplaced_fix(test, new, "temp.test.js").is_empty());
        let aliased = "from temp import to_f as f\n";
        assert!(misplaced_fix(
            aliased,
            &format!("{aliased}def to_f(c):\n    return 1\n"),
            "t_test.py"
        )
        .is_empty());
    }

    #[test]
    fn the_modules_a_test_imports_are_what_it_checks() {
        let python =
            "import os\nfrom lists import first_n\nfrom .x import y\nimport app.core, sys\n";
        assert_eq!(
            tested_modules(python, "tests/test_lists.py"),
            [
                "tests/os.py",
                "os.py",
                "tests/lists.py",
                "lists.py",
                "tests/app/core.py",
                "app/core.py"
            ]
        );
        let js = "const { add } = require('./sum');\nimport x from \"./lib/util.js\";\n";
        let found = tested_modules(js, "test.js");
        assert_eq!(found[0], "sum.js");
        assert!(found.contains(&"sum.ts".to_owned()));
        assert_eq!(found.last().unwrap(), "lib/util.js");
        assert!(tested_modules("from a import b\n", "notes.txt").is_empty());
    }

    #[test]
    fn a_file_that_imports_itself_is_known() {
        assert!(imports_itself(
            "from pager import last_page\n\ndef last_page(t, p):\n",
            "pager.py"
        ));
        assert!(imports_itself("import os, pager\n", "src/pager.py"));
        assert!(imports_itself("import pager\n", "src/pager.py"));
        assert!(imports_itself(
            "const p = require('./pager');\n",
            "pager.js"
        ));
        assert!(!imports_itself(
            "from pagers import x\nimport pager_utils\n",
            "pager.py"
        ));
        assert!(!imports_itself(
            "from pager import last_page\n",
            "test_pager.py"
        ));
        assert!(!imports_itself("import x\n", "Makefile"));
    }
}
