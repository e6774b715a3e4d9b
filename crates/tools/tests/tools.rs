#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Each built-in tool's edge cases, on real files and real processes (`edit`'s are in
//! edit.rs).

mod common;

use common::fixture;
use saki_llm_worker::ToolExecutionContext;
use saki_tools::{builtin_server, Workspace};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use serde_json::json;

#[tokio::test]
async fn read_file_pages_and_refuses_what_it_cannot_show() {
    let f = fixture();
    assert!(f
        .call("read_file", json!({"path": "src/main.rs"}))
        .await
        .unwrap()
        .contains("println!"));
    let part = f
        .call(
            "read_file",
            json!({"path": "src/main.rs", "offset": 2, "limit": 1}),
        )
        .await
        .unwrap();
    assert!(
        part.starts_with("    println!") && part.contains("showing lines 2-2 of 3; use offset=3"),
        "{part}"
    );
    let err = f
        .call("read_file", json!({"path": "nope.rs"}))
        .await
        .unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    std::fs::write(f.ws().join("blob.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    let err = f
        .call("read_file", json!({"path": "blob.bin"}))
        .await
        .unwrap_err();
    assert!(err.contains("binary"), "{err}");
    let big: String = (0..5000)
        .map(|i| format!("line {i} with some padding text\n"))
        .collect();
    std::fs::write(f.ws().join("big.txt"), &big).unwrap();
    let out = f
        .call("read_file", json!({"path": "big.txt"}))
        .await
        .unwrap();
    assert!(
        out.len() < 17 * 1024 && out.contains("[...truncated: showing lines 1-"),
        "{}",
        out.len()
    );
    let err = f.call("read_file", json!({"path": 7})).await.unwrap_err();
    assert!(err.contains("invalid arguments"), "{err}");
}

#[tokio::test]
async fn read_file_forgives_what_small_models_get_wrong() {
    let f = fixture();
    let out = f
        .call("read_file", json!({"path": "src/main.rs", "offset": 50}))
        .await
        .unwrap();
    assert!(
        out.starts_with(
            "[offset 50 is past the end of this 3-line file; showing it from line 1]\nfn main()"
        ),
        "{out}"
    );
    // Reading page by page: the last page says so, and the page after it is empty.
    let out = f
        .call(
            "read_file",
            json!({"path": "src/main.rs", "offset": 3, "limit": 1}),
        )
        .await
        .unwrap();
    assert_eq!(out, "}\n[end of file: line 3 is the last]");
    let out = f
        .call(
            "read_file",
            json!({"path": "src/main.rs", "offset": 4, "limit": 1}),
        )
        .await
        .unwrap();
    assert!(
        out.starts_with("[end of file: it has 3 lines, and offset 4 is just past"),
        "{out}"
    );
    // No overflow for a limit at the top of the range.
    let out = f
        .call(
            "read_file",
            json!({"path": "src/main.rs", "offset": 2, "limit": u64::MAX}),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        "    println!(\"hi\");\n}\n[end of file: line 3 is the last]"
    );
    // A directory given to read_file is listed; a file given to ls is described.
    let out = f.call("read_file", json!({"path": "src"})).await.unwrap();
    assert_eq!(
        out,
        "[src is a directory, not a file; its entries:]\nmain.rs"
    );
    let out = f.call("ls", json!({"path": "src/main.rs"})).await.unwrap();
    assert_eq!(out, "src/main.rs (a file: 3 lines, 34 bytes)");
    std::fs::write(f.ws().join("one.txt"), "no newline").unwrap();
    let out = f.call("ls", json!({"path": "one.txt"})).await.unwrap();
    assert_eq!(out, "one.txt (a file: 1 line, 10 bytes)");
    // `/src/main.rs` names nothing here; the workspace's src/main.rs is meant.
    let out = f
        .call("read_file", json!({"path": "/src/main.rs"}))
        .await
        .unwrap();
    assert!(out.contains("println!"), "{out}");
    let listing = f.call("ls", json!({"path": "/src"})).await.unwrap();
    assert!(listing.contains("main.rs"), "{listing}");
    // Something that exists on the machine is never taken for a workspace path, and a
    // missing one stays missing (and outside).
    std::fs::create_dir_all(f.ws().join("tmp")).unwrap();
    std::fs::write(f.ws().join("tmp/own.txt"), "inside").unwrap();
    let err = f.call("ls", json!({"path": "/tmp"})).await.unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    let err = f
        .call("read_file", json!({"path": "/no-such-dir-here/x"}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
}

#[tokio::test]
async fn a_file_to_read_may_be_written_with_its_line_or_without_its_dot_but_not_one_to_change() {
    let f = fixture();
    std::fs::write(f.ws().join(".envrc"), "export A=1\n").unwrap();
    let out = f
        .call("read_file", json!({"path": "src/main.rs:2:    println!"}))
        .await
        .unwrap();
    assert!(out.starts_with("fn main()"), "{out}");
    let out = f.call("read_file", json!({"path": "envrc"})).await.unwrap();
    assert!(out.starts_with("export A=1"), "{out}");
    // A change goes where its path says: approval, undo and the overlay judge that path.
    let err = f
        .call(
            "edit",
            json!({"path": "envrc", "old_string": "A=1", "new_string": "A=2"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join(".envrc")).unwrap(),
        "export A=1\n"
    );
}

#[tokio::test]
async fn special_files_are_refused_without_blocking() {
    let f = fixture();
    let fifo = f.ws().join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // A FIFO with no writer would block a plain open for reading forever.
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        f.call("read_file", json!({"path": "pipe"})),
    )
    .await
    .expect("read_file on a FIFO returned");
    let err = read.unwrap_err();
    assert!(err.contains("a FIFO, not a regular file"), "{err}");
    let edit = f
        .call(
            "edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        )
        .await
        .unwrap_err();
    assert!(edit.contains("a FIFO"), "{edit}");
}

#[tokio::test]
async fn paths_cannot_escape_the_workspace() {
    let f = fixture();
    for path in ["../secret.txt", "src/../../secret.txt"] {
        let err = f
            .call("read_file", json!({"path": path}))
            .await
            .unwrap_err();
        assert!(err.contains("outside the workspace"), "{path}: {err}");
    }
    let abs = f.dir.path().join("secret.txt");
    let err = f.call("read_file", json!({"path": abs})).await.unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    std::os::unix::fs::symlink(&abs, f.ws().join("link.txt")).unwrap();
    let err = f
        .call("read_file", json!({"path": "link.txt"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("outside the workspace"),
        "symlink escape: {err}"
    );
    std::os::unix::fs::symlink(f.dir.path(), f.ws().join("updir")).unwrap();
    let err = f
        .call(
            "write_file",
            json!({"path": "updir/new.txt", "content": "x"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.contains("outside the workspace"),
        "write through a symlinked dir: {err}"
    );
    assert!(!f.dir.path().join("new.txt").exists());
    let err = f
        .call("write_file", json!({"path": "../evil.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    let err = f
        .call("grep", json!({"pattern": "x", "path": ".."}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    let err = f.call("ls", json!({"path": "/"})).await.unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
}

#[tokio::test]
async fn write_file_is_atomic_creates_dirs_and_keeps_permissions() {
    let f = fixture();
    let out = f
        .call(
            "write_file",
            json!({"path": "deep/new/file.txt", "content": "hello"}),
        )
        .await
        .unwrap();
    assert!(out.starts_with("created deep/new/file.txt"), "{out}");
    let script = f.ws().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    f.call(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho hi\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(f.ws())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".saki-"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left behind");
}

#[tokio::test]
async fn ls_glob_and_grep_respect_gitignore() {
    let f = fixture();
    let ws = f.ws();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join("target/gen.rs"), "fn main() {}\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "pub fn main_helper() {}\n").unwrap();
    let ls = f.call("ls", json!({})).await.unwrap();
    assert!(ls.contains("src/") && ls.contains("target/"), "{ls}");
    let glob = f.call("glob", json!({"pattern": "**/*.rs"})).await.unwrap();
    assert_eq!(glob, "src/lib.rs\nsrc/main.rs\n[2 files]");
    let grep = f.call("grep", json!({"pattern": "fn main"})).await.unwrap();
    assert_eq!(
        grep,
        "src/lib.rs:1:pub fn main_helper() {}\nsrc/main.rs:1:fn main() {\n[2 matching lines in 2 files]"
    );
    let grep = f
        .call(
            "grep",
            json!({"pattern": "PRINTLN", "case_insensitive": true, "glob": "*.rs"}),
        )
        .await
        .unwrap();
    assert_eq!(
        grep,
        "src/main.rs:2:    println!(\"hi\");\n[1 matching line in 1 file]"
    );
    assert_eq!(
        f.call("grep", json!({"pattern": "zzz_nothing"}))
            .await
            .unwrap(),
        "no matches"
    );
    // Not a regular expression: searched for as plain text, and said so.
    let grep = f.call("grep", json!({"pattern": "main("})).await.unwrap();
    assert_eq!(
        grep,
        "[`main(` is not a regular expression; searched for it as plain text:]\n\
         src/main.rs:1:fn main() {\n[1 matching line in 1 file]"
    );
    // A pattern that fails as text too keeps its error.
    let err = f
        .call("grep", json!({"pattern": "a\nb"}))
        .await
        .unwrap_err();
    assert!(err.contains("bad regex"), "{err}");
    let many: String = (0..500).map(|i| format!("needle {i}\n")).collect();
    std::fs::write(ws.join("many.txt"), many).unwrap();
    let out = f.call("grep", json!({"pattern": "needle"})).await.unwrap();
    assert_eq!(out.lines().count(), 201);
    assert!(
        out.ends_with("[...300 more matches not shown; narrow the pattern or path]"),
        "{out}"
    );
}

#[tokio::test]
async fn shell_reports_exit_codes_and_caps_output_keeping_head_and_tail() {
    let f = fixture();
    let out = f
        .call(
            "shell",
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await
        .unwrap();
    assert!(
        out.contains("out") && out.contains("err") && out.ends_with("[exit code: 3]"),
        "{out}"
    );
    let out = f.call("shell", json!({"command": "pwd"})).await.unwrap();
    assert!(
        out.starts_with(&f.ws().display().to_string()),
        "runs in the workspace: {out}"
    );
    let out = f
        .call(
            "shell",
            json!({"command": "echo FIRST; seq 1 200000; echo LAST"}),
        )
        .await
        .unwrap();
    assert!(
        out.starts_with("FIRST")
            && out.contains("bytes of output omitted")
            && out.contains("LAST\n[exit code: 0]")
    );
    assert!(out.len() < 17 * 1024, "{}", out.len());
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[tokio::test]
async fn shell_timeout_and_cancel_kill_the_whole_process_group() {
    let f = fixture();
    let pidfile = f.ws().join("bg.pid");
    let cmd = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let out = f
        .call("shell", json!({"command": cmd, "timeout_secs": 1}))
        .await
        .unwrap();
    assert!(out.contains("timed out after 1s"), "{out}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..100 {
        if !alive(pid) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        !alive(pid),
        "the background child was killed with its group"
    );

    // Cancel: the Worker drops the future.
    std::fs::remove_file(&pidfile).unwrap();
    let call = f.call("shell", json!({"command": cmd}));
    let _ = tokio::time::timeout(std::time::Duration::from_millis(300), call).await;
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..100 {
        if !alive(pid) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "dropping the call killed the group");
}

#[tokio::test]
async fn delete_file_removes_regular_files_in_scope_only() {
    let f = fixture();
    let ws = f.ws();
    std::fs::write(ws.join("tmp.log"), "noise\n").unwrap();
    let out = f
        .call("delete_file", json!({"path": "tmp.log"}))
        .await
        .unwrap();
    assert_eq!(out, "deleted tmp.log (6 bytes)");
    assert!(!ws.join("tmp.log").exists());
    let err = f
        .call("delete_file", json!({"path": "tmp.log"}))
        .await
        .unwrap_err();
    assert!(err.contains("cannot delete tmp.log"), "{err}");
    let err = f
        .call("delete_file", json!({"path": "src"}))
        .await
        .unwrap_err();
    assert!(err.contains("not a regular file"), "{err}");
    assert!(ws.join("src/main.rs").exists());
    let err = f
        .call("delete_file", json!({"path": "../secret.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    assert!(f.dir.path().join("secret.txt").exists());
    std::os::unix::fs::symlink(ws.join("src/main.rs"), ws.join("link.rs")).unwrap();
    let err = f
        .call("delete_file", json!({"path": "link.rs"}))
        .await
        .unwrap_err();
    assert!(err.contains("symbolic link"), "{err}");
    assert!(ws.join("src/main.rs").exists() && ws.join("link.rs").exists());
}

#[tokio::test]
async fn read_file_says_how_many_lines_a_whole_file_has() {
    let f = fixture();
    let out = f
        .call("read_file", json!({"path": "src/main.rs"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "fn main() {\n    println!(\"hi\");\n}\n[3 lines in all]"
    );
    let part = f
        .call("read_file", json!({"path": "src/main.rs", "offset": 2}))
        .await
        .unwrap();
    assert!(!part.contains("in all"), "{part}");
}

#[tokio::test]
async fn a_glob_that_filters_out_every_match_widens_the_search_with_a_note() {
    let f = fixture();
    let out = f
        .call("grep", json!({"pattern": "println", "glob": "println"}))
        .await
        .unwrap();
    assert!(
        out.starts_with("[no match in files matching the glob `println`; matches in all files:]\nsrc/main.rs:2:"),
        "{out}"
    );
    let out = f
        .call("grep", json!({"pattern": "zzz", "glob": "*.rs"}))
        .await
        .unwrap();
    assert_eq!(out, "no matches");
}

#[test]
fn an_invented_tool_is_pointed_to_the_builtin_that_does_what_its_name_says() {
    let f = fixture();
    let error = |name: &str, args: &str| {
        f.server
            .check_arguments(name, args)
            .unwrap_err()
            .to_string()
    };
    let append = error(
        "append_line",
        r#"{"path": "TODO.md", "line": "- buy milk"}"#,
    );
    assert!(
        append.contains("`edit` does that (\"an empty old_string appends new_string"),
        "{append}"
    );
    let run = error("run_calc.py", r#"{"calc.py": "calc.py"}"#);
    assert!(
        run.contains("`shell` does that (\"Run a bash command")
            && run
                .contains("call it as {\"name\": \"shell\", \"arguments\": {\"command\": <string>"),
        "{run}"
    );
}

/// A lean set offers no `shell_output` or `shell_kill`: its `shell` cannot start what
/// nothing could read or stop, so `background` is not offered and a call asking for it
/// runs in the foreground.
#[tokio::test]
async fn a_lean_shell_has_no_background_and_runs_such_a_call_in_the_foreground() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        saki_tools::tool_server(Arc::new(Workspace::new(dir.path()).unwrap()), true).unwrap();
    assert!(server.get("shell_output").is_none() && server.get("shell_kill").is_none());
    let shell = server.get("shell").unwrap();
    assert!(shell.input_schema()["properties"]
        .get("background")
        .is_none());
    let ctx = ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    };
    let args = serde_json::json!({"command": "echo ran here", "background": true});
    let out = server
        .call_tool("shell", &args.to_string(), ctx)
        .await
        .unwrap()
        .content;
    assert!(
        out.contains("ran here") && !out.contains("background"),
        "{out}"
    );
    let full = builtin_server(Arc::new(Workspace::new(dir.path()).unwrap())).unwrap();
    assert!(full.get("shell").unwrap().input_schema()["properties"]
        .get("background")
        .is_some());
}

/// A small model passes `limit` by habit and answers from the fragment: the lean
/// `read_file` offers no `limit` and reads the whole file when a call passes one.
#[tokio::test]
async fn a_lean_read_file_has_no_limit_and_reads_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sales.csv"),
        "item,amount\npen,3\nbook,12\n",
    )
    .unwrap();
    let server =
        saki_tools::tool_server(Arc::new(Workspace::new(dir.path()).unwrap()), true).unwrap();
    let read = server.get("read_file").unwrap();
    let properties = read.input_schema()["properties"].clone();
    assert!(properties.get("limit").is_none() && properties.get("offset").is_some());
    assert!(!read.description().contains("limit"));
    let ctx = ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    };
    let out = server
        .call_tool(
            "read_file",
            r#"{"path": "sales.csv", "limit": 1}"#,
            ctx.clone(),
        )
        .await
        .unwrap()
        .content;
    assert!(
        out.contains("book,12") && out.contains("[3 lines in all]"),
        "{out}"
    );
    let full = builtin_server(Arc::new(Workspace::new(dir.path()).unwrap())).unwrap();
    let out = full
        .call_tool("read_file", r#"{"path": "sales.csv", "limit": 1}"#, ctx)
        .await
        .unwrap()
        .content;
    assert!(!out.contains("book,12"), "the full set keeps limit: {out}");
}
