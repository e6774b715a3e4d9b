#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Random sequences of gated tool calls during a speculation never change the real
//! tree; `apply` then makes the real tree equal to the overlay view (checked against a
//! model of it), and `abort` leaves no trace.

use proptest::prelude::*;
use saki_llm_worker::ToolExecutionContext;
use saki_read_ahead::{GatedCall, OverlayFs, SpeculationTools};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const WORDS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "omega"];
const EXISTING: [&str; 5] = ["a.txt", "b.txt", "src/c.rs", "src/d.rs", "docs/e.md"];
const NEW: [&str; 4] = ["new.txt", "src/f.rs", "new/g.txt", "new/deep/h.md"];
const OUTSIDE: &str = "../escape.txt";
const DIRS: [&str; 5] = [".", "src", "docs", "new", "new/deep"];

type Tree = BTreeMap<String, String>;

#[derive(Debug, Clone)]
enum Op {
    Read(&'static str),
    Write(&'static str, String),
    Edit(&'static str, &'static str, &'static str),
    Ls(&'static str),
    Glob(usize),
    Grep(&'static str, &'static str),
    Shell(&'static str),
}

fn path() -> impl Strategy<Value = &'static str> {
    let all: Vec<&'static str> = EXISTING
        .iter()
        .chain(&NEW)
        .copied()
        .chain([OUTSIDE])
        .collect();
    proptest::sample::select(all)
}

fn content() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(WORDS.to_vec()), 0..5)
        .prop_map(|lines| lines.iter().map(|l| format!("{l}\n")).collect())
}

fn word() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(WORDS.to_vec())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => path().prop_map(Op::Read),
        3 => (path(), content()).prop_map(|(p, c)| Op::Write(p, c)),
        3 => (path(), word(), word()).prop_map(|(p, a, b)| Op::Edit(p, a, b)),
        1 => proptest::sample::select(DIRS.to_vec()).prop_map(Op::Ls),
        1 => (0..GLOBS.len()).prop_map(Op::Glob),
        2 => (word(), proptest::sample::select(DIRS.to_vec())).prop_map(|(w, d)| Op::Grep(w, d)),
        1 => proptest::sample::select(vec!["cat a.txt", "ls src", "touch a.txt", "rm b.txt"])
            .prop_map(Op::Shell),
    ]
}

/// Glob patterns with the model's answer.
type GlobCase = (&'static str, fn(&str) -> bool);
const GLOBS: [GlobCase; 3] = [
    ("**/*.txt", |p| p.ends_with(".txt")),
    ("*", |p| !p.contains('/')),
    ("new/**", |p| p.starts_with("new/")),
];

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn as_bytes(tree: &Tree) -> BTreeMap<String, Vec<u8>> {
    tree.iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect()
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

/// Lines `path:n:line` of the model containing `word`, as grep prints them.
fn model_grep(tree: &Tree, word: &str, dir: &str) -> String {
    let mut out = Vec::new();
    for (path, text) in tree {
        if dir != "." && !path.starts_with(&format!("{dir}/")) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            if line.contains(word) {
                out.push(format!("{path}:{}:{line}", i + 1));
            }
        }
    }
    if out.is_empty() {
        "no matches".into()
    } else {
        out.join("\n")
    }
}

fn model_ls(tree: &Tree, dir: &str) -> Option<String> {
    let prefix = if dir == "." {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut names: Vec<String> = tree
        .keys()
        .filter_map(|p| p.strip_prefix(&prefix))
        .map(|rest| match rest.split_once('/') {
            Some((d, _)) => format!("{d}/"),
            None => rest.to_owned(),
        })
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then(|| names.join("\n"))
}

async fn run_case(initial: Tree, ops: Vec<Op>, mode: ApprovalMode, apply: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    for (path, text) in &initial {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let before = snapshot(&root);
    let ws = Arc::new(Workspace::new(&root).unwrap());
    let base = tmp.path().join("base");
    let overlay = Arc::new(OverlayFs::new_in(ws, &base).unwrap());
    let overlay_dir = overlay.dir().to_path_buf();
    let tools = SpeculationTools::new(mode, overlay.clone());
    let writes = matches!(mode, ApprovalMode::AutoEdit | ApprovalMode::Yolo);
    let mut model = initial.clone();

    for op in ops {
        let (name, input): (&str, Value) = match &op {
            Op::Read(p) => ("read_file", json!({"path": p})),
            Op::Write(p, c) => ("write_file", json!({"path": p, "content": c})),
            Op::Edit(p, a, b) => ("edit", json!({"path": p, "old_string": a, "new_string": b})),
            Op::Ls(d) => ("ls", json!({"path": d})),
            Op::Glob(i) => ("glob", json!({"pattern": GLOBS[*i].0})),
            Op::Grep(w, d) => ("grep", json!({"pattern": w, "path": d})),
            Op::Shell(c) => ("shell", json!({"command": c})),
        };
        let result = match tools.call(name, &input.to_string(), ctx()).await {
            GatedCall::Ran(r) => r.map(|o| o.content),
            GatedCall::Boundary(reason) => {
                let expected = matches!(op, Op::Shell("touch a.txt" | "rm b.txt"))
                    || (!writes && matches!(op, Op::Write(..) | Op::Edit(..)))
                    || format!("{op:?}").contains(OUTSIDE);
                assert!(expected, "unexpected boundary for {op:?}: {reason}");
                continue;
            }
        };
        match op {
            Op::Read(p) => match model.get(p) {
                Some(text) => assert_eq!(without_count(&result.unwrap()), *text, "read {p}"),
                None => assert!(result.is_err(), "read of missing {p}"),
            },
            Op::Write(p, c) => {
                result.unwrap();
                model.insert(p.to_owned(), c);
            }
            Op::Edit(p, a, b) => {
                let count = model.get(p).map_or(0, |t| t.matches(a).count());
                if count == 1 && a != b {
                    result.unwrap();
                    let text = model[p].replacen(a, b, 1);
                    model.insert(p.to_owned(), text);
                } else {
                    assert!(result.is_err(), "edit {p} {a}->{b}: {result:?}");
                }
            }
            Op::Ls(d) => match model_ls(&model, d) {
                Some(expected) => assert_eq!(result.unwrap(), expected, "ls {d}"),
                None => assert!(result.is_err(), "ls of missing {d}"),
            },
            Op::Glob(i) => {
                let (pattern, matches) = GLOBS[i];
                let found: Vec<&str> = model
                    .keys()
                    .map(String::as_str)
                    .filter(|p| matches(p))
                    .collect();
                let expected = match found.len() {
                    0 => format!("no files match {pattern}"),
                    1 => format!("{}\n[1 file]", found[0]),
                    n => format!("{}\n[{n} files]", found.join("\n")),
                };
                assert_eq!(result.unwrap(), expected, "glob {pattern}");
            }
            Op::Grep(w, d) => {
                if model_ls(&model, d).is_none() {
                    assert!(result.is_err(), "grep in missing {d}");
                } else {
                    assert_eq!(
                        without_count(&result.unwrap()),
                        model_grep(&model, w, d),
                        "grep {w} in {d}"
                    );
                }
            }
            Op::Shell(_) => {
                result.unwrap();
            }
        }
        assert_eq!(
            snapshot(&root),
            before,
            "real tree changed during speculation"
        );
    }
    assert!(!tmp.path().join("escape.txt").exists());
    drop(tools);
    let overlay = Arc::into_inner(overlay).unwrap();
    if apply {
        let report = overlay.apply();
        assert!(report.is_complete(), "{report:?}");
        drop(overlay);
        assert_eq!(
            snapshot(&root),
            as_bytes(&model),
            "applied tree != overlay view"
        );
    } else {
        overlay.abort().unwrap();
        assert_eq!(snapshot(&root), before);
    }
    assert!(!overlay_dir.exists(), "overlay directory left behind");
    assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
}

fn initial_tree() -> impl Strategy<Value = Tree> {
    proptest::collection::vec(content(), EXISTING.len()).prop_map(|contents| {
        EXISTING
            .iter()
            .zip(contents)
            .map(|(p, c)| (p.to_string(), c))
            .collect()
    })
}

fn mode() -> impl Strategy<Value = ApprovalMode> {
    prop_oneof![
        3 => Just(ApprovalMode::AutoEdit),
        3 => Just(ApprovalMode::Yolo),
        1 => Just(ApprovalMode::Default),
        1 => Just(ApprovalMode::Plan),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn speculation_never_touches_the_real_tree(
        initial in initial_tree(),
        ops in proptest::collection::vec(op(), 1..25),
        mode in mode(),
        apply in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(run_case(initial, ops, mode, apply));
    }
}

/// A tool's output without the count it ends with: read_file's "[N lines in all]" after
/// a whole file, grep's "[N matching lines in M files]".
fn without_count(output: &str) -> &str {
    let Some(i) = output.rfind('[') else {
        return output;
    };
    if output.ends_with(" lines in all]") {
        &output[..i]
    } else if output.ends_with(']') && output[i..].contains(" matching line") {
        output[..i].trim_end_matches('\n')
    } else {
        output
    }
}
