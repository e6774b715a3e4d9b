use super::*;
use saki_llm_worker::{Tool, ToolExecutionContext};
use saki_tools::Workspace;
use serde_json::json;
use serde_json::Value;
use std::fs;

struct Fixture {
    tmp: tempfile::TempDir,
    root: PathBuf,
    overlay: Arc<OverlayFs>,
}

/// ws/ src/app.rs ("fn main"), src/lib.rs ("pub fn lib"), README.md, .ignore ("*.log"),
/// empty/.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(root.join("empty")).unwrap();
    fs::write(root.join("src/app.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("src/lib.rs"), "pub fn lib() {}\n").unwrap();
    fs::write(root.join("README.md"), "# readme\nfn in docs\n").unwrap();
    fs::write(root.join(".ignore"), "*.log\n").unwrap();
    let root = root.canonicalize().unwrap();
    let ws = Arc::new(Workspace::new(&root).unwrap());
    let overlay = Arc::new(OverlayFs::new_in(ws, &tmp.path().join("base")).unwrap());
    Fixture { tmp, root, overlay }
}

impl Fixture {
    fn write(&self, path: &str, content: &str) {
        fs::write(self.overlay.resolve_write(path).unwrap(), content).unwrap();
    }
}

/// The real tool `name`, seeing the workspace through the overlay.
fn tool(overlay: &Arc<OverlayFs>, name: &str) -> Arc<dyn Tool> {
    let seen = overlay
        .workspace()
        .with_fs(Arc::new(OverlayView::new(overlay.clone())));
    saki_tools::builtin_tools(Arc::new(seen))
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap()
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

async fn run(tool: &Arc<dyn Tool>, input: Value) -> Result<String, ToolError> {
    tool.execute(&input.to_string(), ctx())
        .await
        .map(|o| o.content)
}

#[tokio::test]
async fn ls_merges_overlay_entries() {
    let f = fixture();
    let ls = tool(&f.overlay.clone(), "ls");
    let before = run(&ls, json!({})).await.unwrap();
    assert_eq!(before, ".ignore\nREADME.md\nempty/\nsrc/");
    f.write("src/app.rs", "fn main() { changed }\n");
    f.write("src/new.rs", "");
    f.write("docs/guide/intro.md", "# intro\n");
    f.write("empty/first.txt", "1");
    assert_eq!(
        run(&ls, json!({})).await.unwrap(),
        ".ignore\nREADME.md\ndocs/\nempty/\nsrc/"
    );
    assert_eq!(
        run(&ls, json!({"path": "src"})).await.unwrap(),
        "app.rs\nlib.rs\nnew.rs"
    );
    assert_eq!(run(&ls, json!({"path": "docs"})).await.unwrap(), "guide/");
    let abs = f.root.join("docs/guide").display().to_string();
    assert_eq!(run(&ls, json!({"path": abs})).await.unwrap(), "intro.md");
    assert_eq!(
        run(&ls, json!({"path": "empty"})).await.unwrap(),
        "first.txt"
    );
    assert!(run(&ls, json!({"path": "nope"}))
        .await
        .unwrap_err()
        .to_string()
        .contains("does not exist"));
    // A file is described, as the real tool does, from the view's copy.
    for (file, lines) in [("src/app.rs", "1 line"), ("docs/guide/intro.md", "1 line")] {
        let out = run(&ls, json!({"path": file})).await.unwrap();
        assert!(
            out.starts_with(&format!("{file} (a file: {lines}")),
            "{out}"
        );
    }
}

#[tokio::test]
async fn ls_of_an_empty_directory() {
    let f = fixture();
    let ls = tool(&f.overlay.clone(), "ls");
    assert_eq!(
        run(&ls, json!({"path": "empty"})).await.unwrap(),
        "[empty directory]"
    );
}

#[tokio::test]
async fn glob_adds_new_files_as_the_walker_would() {
    let f = fixture();
    let glob = tool(&f.overlay.clone(), "glob");
    f.write("src/app.rs", "changed");
    f.write("src/extra.rs", "");
    f.write("src/deep/mod.rs", "");
    f.write(".github/x.rs", "");
    f.write("src/.secret.rs", "");
    f.write(".venv/x.rs", "");
    f.write("src/.mypy_cache/x.rs", "");
    f.write("build.log", "");
    assert_eq!(
        run(&glob, json!({"pattern": "**/*.rs"})).await.unwrap(),
        ".github/x.rs\nsrc/.secret.rs\nsrc/app.rs\nsrc/deep/mod.rs\nsrc/extra.rs\nsrc/lib.rs\n[6 files]",
        "dotfiles as the walker sees them, not stores"
    );
    assert_eq!(
        run(&glob, json!({"pattern": "*.rs", "path": "src"}))
            .await
            .unwrap(),
        ".secret.rs\napp.rs\nextra.rs\nlib.rs\n[4 files]"
    );
    assert_eq!(
        run(&glob, json!({"pattern": "*.log"})).await.unwrap(),
        "no files match *.log",
        "ignored by .ignore"
    );
    assert_eq!(
        run(&glob, json!({"pattern": "*", "path": "src/deep"}))
            .await
            .unwrap(),
        "mod.rs\n[1 file]",
        "a directory only the overlay has"
    );
    assert!(run(&glob, json!({"pattern": "*", "path": "missing"}))
        .await
        .is_err());
    assert!(matches!(
        run(&glob, json!({"pattern": "a{"})).await,
        Err(ToolError::InvalidInput(_))
    ));
}

#[tokio::test]
async fn an_ignore_file_written_by_the_speculation_counts() {
    let f = fixture();
    let glob = tool(&f.overlay.clone(), "glob");
    f.write("out/gen.txt", "");
    f.write(".ignore", "*.log\nout/\n");
    assert_eq!(
        run(&glob, json!({"pattern": "**/*.txt"})).await.unwrap(),
        "no files match **/*.txt"
    );
    f.write("keep/a.txt", "");
    f.write("keep/.ignore", "!a.txt\n");
    assert_eq!(
        run(&glob, json!({"pattern": "**/*.txt"})).await.unwrap(),
        "keep/a.txt\n[1 file]"
    );
}

#[tokio::test]
async fn grep_searches_the_merged_view() {
    let f = fixture();
    let grep = tool(&f.overlay.clone(), "grep");
    assert_eq!(
        run(&grep, json!({"pattern": "fn main"})).await.unwrap(),
        "src/app.rs:1:fn main() {}\n[1 matching line in 1 file]"
    );
    f.write(
        "src/app.rs",
        "fn start() {}\n// no main here\nfn main2() {}\n",
    );
    f.write("src/new.rs", "fn main_new() {}\n");
    f.write("notes/todo.md", "fn main in notes\n");
    f.write("src/.hidden.rs", "fn main\n");
    f.write(".venv/lib.rs", "fn main\n");
    f.write("x.log", "fn main\n");
    let out = grep
        .execute(&json!({"pattern": "fn main"}).to_string(), ctx())
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "notes/todo.md:1:fn main in notes\nsrc/.hidden.rs:1:fn main\nsrc/app.rs:3:fn main2() {}\nsrc/new.rs:1:fn main_new() {}\n[4 matching lines in 4 files]"
    );
    assert_eq!(out.summary.as_deref(), Some("4 matches"));
    assert_eq!(
        run(&grep, json!({"pattern": "fn", "path": "src/app.rs"}))
            .await
            .unwrap(),
        "src/app.rs:1:fn start() {}\nsrc/app.rs:3:fn main2() {}\n[2 matching lines in 1 file]"
    );
    assert_eq!(
        run(&grep, json!({"pattern": "main", "path": "src/new.rs"}))
            .await
            .unwrap(),
        "src/new.rs:1:fn main_new() {}\n[1 matching line in 1 file]"
    );
    assert_eq!(
        run(&grep, json!({"pattern": "fn main", "glob": "*.md"}))
            .await
            .unwrap(),
        "notes/todo.md:1:fn main in notes\n[1 matching line in 1 file]"
    );
    assert_eq!(
        run(
            &grep,
            json!({"pattern": "FN MAIN", "path": "notes", "case_insensitive": true})
        )
        .await
        .unwrap(),
        "notes/todo.md:1:fn main in notes\n[1 matching line in 1 file]"
    );
    assert_eq!(
        run(&grep, json!({"pattern": "main", "path": "src/.hidden.rs"}))
            .await
            .unwrap(),
        "src/.hidden.rs:1:fn main\n[1 matching line in 1 file]",
        "a file named explicitly is searched even if hidden"
    );
    assert!(run(&grep, json!({"pattern": "x", "path": "missing"}))
        .await
        .is_err());
}

#[tokio::test]
async fn other_roots_use_the_real_tools() {
    let f = fixture();
    let other = f.tmp.path().join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("o.txt"), "needle\n").unwrap();
    let mut ws = Workspace::new(&f.root).unwrap();
    ws.add_root(&other).unwrap();
    let overlay = Arc::new(OverlayFs::new_in(Arc::new(ws), &f.tmp.path().join("base2")).unwrap());
    let path = other.canonicalize().unwrap().display().to_string();
    let ls = tool(&overlay.clone(), "ls");
    assert_eq!(run(&ls, json!({"path": path})).await.unwrap(), "o.txt");
    let glob = tool(&overlay.clone(), "glob");
    assert_eq!(
        run(&glob, json!({"pattern": "*.txt", "path": path}))
            .await
            .unwrap(),
        "o.txt\n[1 file]"
    );
    let grep = tool(&overlay, "grep");
    let out = run(&grep, json!({"pattern": "needle", "path": path}))
        .await
        .unwrap();
    assert!(
        out.ends_with("o.txt:1:needle\n[1 matching line in 1 file]"),
        "{out}"
    );
}

/// What a command deleted (an overlayfs whiteout in the upper layer, here made by hand
/// as the user-namespace kind: an empty file marked `user.overlay.whiteout`) is gone for
/// every file tool, and accept removes it, with a changed mode applied alongside.
#[tokio::test]
async fn a_deletion_by_a_command_is_gone_for_the_tools_and_applied_on_accept() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let whiteout = f.overlay.dir().join("src/lib.rs");
    fs::create_dir_all(whiteout.parent().unwrap()).unwrap();
    fs::write(&whiteout, "").unwrap();
    if xattr::set(&whiteout, "user.overlay.whiteout", b"y").is_err() {
        eprintln!("this file system takes no user xattrs: nothing to check");
        return;
    }
    // A mode change, as a command's `chmod` leaves it: a copy with other bits.
    let copy = f.overlay.dir().join("README.md");
    fs::copy(f.root.join("README.md"), &copy).unwrap();
    fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    let added = f.overlay.absorb_commands().unwrap();
    assert_eq!(
        added,
        [PathBuf::from("README.md"), PathBuf::from("src/lib.rs")]
    );

    let read = tool(&f.overlay, "read_file");
    let err = run(&read, json!({"path": "src/lib.rs"})).await.unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    let ls = tool(&f.overlay, "ls");
    assert_eq!(run(&ls, json!({"path": "src"})).await.unwrap(), "app.rs");
    let grep = tool(&f.overlay, "grep");
    let out = run(&grep, json!({"pattern": "fn"})).await.unwrap();
    assert!(!out.contains("lib.rs"), "{out}");
    let glob = tool(&f.overlay, "glob");
    assert_eq!(
        run(&glob, json!({"pattern": "**/*.rs"})).await.unwrap(),
        "src/app.rs\n[1 file]"
    );
    // Written again by a tool, it is the speculation's new file.
    let write = tool(&f.overlay, "write_file");
    let input = json!({"path": "src/lib.rs", "content": "pub fn again() {}\n"});
    assert!(run(&write, input).await.unwrap().starts_with("created"));
    assert!(run(&read, json!({"path": "src/lib.rs"}))
        .await
        .unwrap()
        .contains("again"));
    assert!(xattr::get(&whiteout, "user.overlay.whiteout")
        .unwrap()
        .is_none());

    let report = f.overlay.apply_with_journal(None);
    assert!(report.is_complete(), "{}", report.describe());
    assert_eq!(
        fs::read_to_string(f.root.join("src/lib.rs")).unwrap(),
        "pub fn again() {}\n"
    );
    let mode = fs::metadata(f.root.join("README.md"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn a_file_a_command_deleted_is_removed_on_accept() {
    let f = fixture();
    let whiteout = f.overlay.dir().join("src/lib.rs");
    fs::create_dir_all(whiteout.parent().unwrap()).unwrap();
    fs::write(&whiteout, "").unwrap();
    if xattr::set(&whiteout, "user.overlay.whiteout", b"y").is_err() {
        return;
    }
    f.overlay.absorb_commands().unwrap();
    assert_eq!(f.overlay.deleted_files(), [PathBuf::from("src/lib.rs")]);
    assert!(f.root.join("src/lib.rs").is_file(), "nothing before accept");
    let report = f.overlay.apply_with_journal(None);
    assert_eq!(report.applied(), [Path::new("src/lib.rs")]);
    assert!(!f.root.join("src/lib.rs").exists());
    assert!(f.root.join("src/app.rs").is_file());
}
