//! The standard-library imports a small model's Python text uses and leaves out.
//!
//! Asked to "Make server.py read PORT from the environment", Qwen2.5-Coder-0.5B writes
//! `PORT = os.getenv('PORT', 8000)` and no `import os`: the file then fails on its first
//! line. An editor's auto-import adds what is missing; so does this, for the standard
//! modules and names a person's script most often reaches for, and only where the new
//! text is the first to use one (a file that already used `os` without importing it is
//! the person's to fix, not a change of this request).

/// Standard modules used as `module.name`.
const MODULES: &[&str] = &[
    "argparse",
    "base64",
    "collections",
    "copy",
    "csv",
    "datetime",
    "functools",
    "glob",
    "hashlib",
    "itertools",
    "json",
    "logging",
    "math",
    "os",
    "pathlib",
    "platform",
    "random",
    "re",
    "shutil",
    "socket",
    "statistics",
    "string",
    "subprocess",
    "sys",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "uuid",
];

/// Names used bare, with the standard module they come from.
const NAMES: &[(&str, &str)] = &[
    ("Any", "typing"),
    ("Counter", "collections"),
    ("Dict", "typing"),
    ("List", "typing"),
    ("Optional", "typing"),
    ("Path", "pathlib"),
    ("Tuple", "typing"),
    ("dataclass", "dataclasses"),
    ("defaultdict", "collections"),
    ("deque", "collections"),
    ("namedtuple", "collections"),
];

/// `new` with an import line for each standard module or name it uses, binds nowhere,
/// and that `old` did not use: put before the file's first import, or after its opening
/// comments, docstring and `__future__` imports when it has none.
pub(super) fn with_missing_imports(old: &str, new: &str) -> String {
    let mut lines = Vec::new();
    for module in MODULES {
        if used_unbound(new, module, true) && !uses(old, module) {
            lines.push(format!("import {module}"));
        }
    }
    for (name, module) in NAMES {
        if used_unbound(new, name, false) && !uses(old, name) {
            lines.push(format!("from {module} import {name}"));
        }
    }
    if lines.is_empty() {
        return new.to_owned();
    }
    let at = import_place(new);
    let mut text = String::with_capacity(new.len() + 64);
    text.push_str(&new[..at]);
    for line in &lines {
        text.push_str(line);
        text.push('\n');
    }
    let rest = &new[at..];
    let before_imports = rest.starts_with("import ") || rest.starts_with("from ");
    if !before_imports && !rest.is_empty() && !rest.starts_with('\n') {
        // Apart from code that is not an import, as PEP 8 lays a file out.
        text.push('\n');
    }
    text.push_str(rest);
    text
}

/// The byte offsets at which the identifier `name` occurs in `text` (not as a part of
/// a longer name, and not as an attribute: `self.os` is not `os`).
fn occurrences<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(name).filter_map(move |(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let alone = !before.is_some_and(|c| ident(c) || c == '.') && !after.is_some_and(ident);
        alone.then_some(at)
    })
}

fn uses(text: &str, name: &str) -> bool {
    occurrences(text, name).next().is_some()
}

/// Whether `text` uses `name` and nothing in it can bind it: no use is on an import
/// line, after `def`, `class`, `as`, `for`, `global` or `nonlocal`, before `=` (not
/// `==`), or as a parameter; for a module, every use is `name.`; a bare name is used
/// where it is called, subscripted, a decorator or an annotation.
fn used_unbound(text: &str, name: &str, module: bool) -> bool {
    let mut any = false;
    for at in occurrences(text, name) {
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        let line = text[line_start..].lines().next().unwrap_or("").trim_start();
        if line.starts_with('#') {
            continue;
        }
        let before = text[line_start..at].trim();
        let after = text[at + name.len()..].trim_start_matches([' ', '\t']);
        let binds = line.starts_with("import ")
            || line.starts_with("from ")
            || ["def", "class", "as", "for", "global", "nonlocal"]
                .iter()
                .any(|word| before.ends_with(word))
            || (after.starts_with('=') && !after.starts_with("=="))
            || (before.ends_with(['(', ',']) && after.starts_with([':', ',', ')', '=']));
        let attribute = after
            .strip_prefix('.')
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_alphabetic() || c == '_'));
        if binds || (module && !attribute) {
            return false;
        }
        // A bare name in prose ("List of items" in a docstring) is not a use.
        any |= module
            || attribute
            || after.starts_with(['(', '['])
            || before.ends_with(['@', ':', '['])
            || before.ends_with("->");
    }
    any
}

/// Where new import lines go in `text`: at its first top-level import that is not from
/// `__future__`, or after its shebang, comments, docstring and `__future__` imports.
fn import_place(text: &str) -> usize {
    let mut at = 0;
    let mut in_docstring: Option<&str> = None;
    let mut header_end = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        let next = at + line.len();
        if let Some(quote) = in_docstring {
            if trimmed.contains(quote) {
                in_docstring = None;
                header_end = next;
            }
        } else if line.starts_with("import ") || line.starts_with("from ") {
            if !line.starts_with("from __future__") {
                return at;
            }
            header_end = next;
        } else if trimmed.is_empty() || trimmed.starts_with('#') {
            if header_end == at {
                header_end = next;
            }
        } else if let Some(quote) = ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| trimmed.starts_with(q))
        {
            if header_end != at {
                break;
            }
            let closed = trimmed.len() >= 6 && trimmed[3..].contains(quote);
            if closed {
                header_end = next;
            } else {
                in_docstring = Some(quote);
            }
        } else {
            break;
        }
        at = next;
    }
    header_end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_the_new_text_uses_first_is_imported() {
        let old = "PORT = 8000\n\nprint(PORT)\n";
        let new = "PORT = int(os.getenv('PORT', 8000))\n\nprint(PORT)\n";
        assert_eq!(
            with_missing_imports(old, new),
            "import os\n\nPORT = int(os.getenv('PORT', 8000))\n\nprint(PORT)\n"
        );
    }

    #[test]
    fn the_import_goes_with_the_files_imports_after_its_docstring() {
        let old = "\"\"\"Tool.\"\"\"\nimport sys\n\nprint(sys.argv)\n";
        let new = "\"\"\"Tool.\"\"\"\nimport sys\n\nprint(sys.argv, json.dumps(1))\n";
        assert_eq!(
            with_missing_imports(old, new),
            "\"\"\"Tool.\"\"\"\nimport json\nimport sys\n\nprint(sys.argv, json.dumps(1))\n"
        );
        let docstring = "#!/usr/bin/env python3\n\"\"\"A\nlong one.\n\"\"\"\nx = time.time()\n";
        assert_eq!(
            with_missing_imports("", docstring),
            "#!/usr/bin/env python3\n\"\"\"A\nlong one.\n\"\"\"\nimport time\n\nx = time.time()\n"
        );
        let annotated = "def f(a: Optional[int]) -> Path:\n    return Path(a)\n";
        assert_eq!(
            with_missing_imports("", annotated),
            format!("from typing import Optional\nfrom pathlib import Path\n\n{annotated}")
        );
        let future = "from __future__ import annotations\nx = Path('.')\n";
        assert_eq!(
            with_missing_imports("", future),
            "from __future__ import annotations\nfrom pathlib import Path\n\nx = Path('.')\n"
        );
    }

    #[test]
    fn a_bound_or_already_used_name_is_left_alone() {
        // Imported, in any way.
        for new in [
            "import os\nos.getenv('A')\n",
            "import os.path\nos.path.join('a')\n",
            "from datetime import datetime\ndatetime.now()\n",
            "import json as js\njs.dumps(1)\n",
        ] {
            assert_eq!(with_missing_imports("", new), new);
        }
        // Bound by the file itself.
        for new in [
            "def Path(p):\n    return p\n\nPath('a')\n",
            "class Counter:\n    pass\n\nCounter()\n",
            "def f(List):\n    return List\n",
            "def f(a, List=1):\n    return List\n",
            "for Path in []:\n    print(Path)\n",
            "re = 1\nprint(re)\n",
            "def f(os):\n    return os.sep\n",
        ] {
            assert_eq!(with_missing_imports("", new), new, "{new}");
        }
        // Not the name: an attribute, a longer name, a comment, a string's word.
        for new in [
            "self.os = 1\nprint(self.os.x)\n",
            "osx = 1\nprint(osx.real)\n",
            "# os.getenv is not used here\nx = 1\n",
            "def f(items):\n    \"\"\"List of items, by Path.\"\"\"\n    return items\n",
        ] {
            assert_eq!(with_missing_imports("", new), new, "{new}");
        }
        // Used before this text: the person's file, not this change.
        let old = "x = os.getenv('A')\n";
        let new = "x = os.getenv('B')\n";
        assert_eq!(with_missing_imports(old, new), new);
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_without_a_panic(
            old in "(os\\.x|import |Path|\"\"\"|#|\n|\\PC){0,24}",
            new in "(os\\.x|json\\.y|import |from |Path\\(|List\\[|def |\"\"\"|#|\n|\\PC){0,32}",
        ) {
            let _ = with_missing_imports(&old, &new);
        }
    }
}
