#![allow(clippy::unwrap_used)]
//! A third `Fs` as an editor front end would write one: text files read and written
//! through the editor's buffers (here a map, standing in for `fs/read_text_file` and
//! `fs/write_text_file`), everything else on disk.

use super::*;
use crate::Workspace;
use saki_llm_worker::{Tool, ToolExecutionContext};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
struct Buffers {
    open: Mutex<HashMap<PathBuf, String>>,
}

impl Buffers {
    fn text(&self, path: &Path) -> Option<String> {
        self.open.lock().unwrap().get(path).cloned()
    }
}

#[async_trait::async_trait]
impl Fs for Buffers {
    async fn stat(&self, path: &Path) -> std::io::Result<Option<Stat>> {
        DiskFs.stat(path).await
    }
    async fn read(&self, path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
        match self.text(path) {
            Some(text) if text.len() as u64 > max => {
                Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge))
            }
            Some(text) => Ok(text.into_bytes()),
            None => DiskFs.read(path, max).await,
        }
    }
    async fn open(&self, path: &Path) -> std::io::Result<Opened> {
        match self.text(path) {
            Some(text) => Ok(Opened {
                len: text.len() as u64,
                reader: Box::new(std::io::Cursor::new(text.into_bytes())),
            }),
            None => DiskFs.open(path).await,
        }
    }
    async fn write(&self, path: &Path, content: &[u8]) -> std::io::Result<()> {
        let text = String::from_utf8(content.to_vec()).map_err(std::io::Error::other)?;
        self.open.lock().unwrap().insert(path.to_path_buf(), text);
        Ok(())
    }
    async fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        DiskFs.remove_file(path).await
    }
    async fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        DiskFs.list_dir(dir).await
    }
    async fn glob(&self, base: &Path, matcher: &GlobMatcher) -> Result<Vec<String>, ToolError> {
        DiskFs.glob(base, matcher).await
    }
    async fn grep(&self, base: &Path, query: &GrepQuery) -> Result<Found, ToolError> {
        DiskFs.grep(base, query).await
    }
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

async fn run(tools: &[Arc<dyn Tool>], name: &str, input: serde_json::Value) -> String {
    let tool = tools.iter().find(|t| t.name() == name).unwrap();
    match tool.execute(&input.to_string(), ctx()).await {
        Ok(out) => out.content,
        Err(e) => format!("error: {e}"),
    }
}

#[tokio::test]
async fn the_file_tools_read_and_write_through_the_workspaces_fs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "on disk\n").unwrap();
    let buffers = Arc::new(Buffers::default());
    buffers
        .open
        .lock()
        .unwrap()
        .insert(root.join("a.txt"), "in the editor\n".into());
    let mut workspace = Workspace::new(&root).unwrap();
    workspace.set_fs(buffers.clone());
    let tools = crate::builtin_tools(Arc::new(workspace));

    let read = run(&tools, "read_file", serde_json::json!({"path": "a.txt"})).await;
    assert!(read.contains("in the editor"), "{read}");
    let edit = serde_json::json!({"path": "a.txt", "old_string": "editor", "new_string": "buffer"});
    let edited = run(&tools, "edit", edit).await;
    assert!(edited.contains("1 replacement"), "{edited}");
    let write = serde_json::json!({"path": "b.txt", "content": "new\n"});
    assert!(run(&tools, "write_file", write)
        .await
        .starts_with("created"));

    // The buffers changed; the disk did not.
    assert_eq!(
        buffers.text(&root.join("a.txt")).unwrap(),
        "in the buffer\n"
    );
    assert_eq!(buffers.text(&root.join("b.txt")).unwrap(), "new\n");
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "on disk\n"
    );
    assert!(!root.join("b.txt").exists());
    // Listing and search stay on disk.
    assert_eq!(run(&tools, "ls", serde_json::json!({})).await, "a.txt");
    let grep = run(&tools, "grep", serde_json::json!({"pattern": "disk"})).await;
    assert!(grep.starts_with("a.txt:1:on disk"), "{grep}");
}

#[tokio::test]
async fn disk_fs_says_what_a_path_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("f"), "abc").unwrap();
    std::os::unix::fs::symlink(dir.join("f"), dir.join("l")).unwrap();
    let stat = |p: &str| {
        let p = dir.join(p);
        async move { DiskFs.stat(&p).await.unwrap() }
    };
    assert_eq!(
        stat("f").await,
        Some(Stat {
            kind: Kind::File,
            len: 3
        })
    );
    assert_eq!(stat("l").await.unwrap().kind, Kind::Symlink);
    assert_eq!(stat(".").await.unwrap().kind, Kind::Dir);
    assert_eq!(stat("missing").await, None);
    assert_eq!(stat("f/below").await, None);
    let err = DiskFs.read(&dir.join("f"), 2).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
}

#[tokio::test]
async fn a_grep_whose_caller_is_gone_stops_its_walk() {
    let stop = StopOnDrop::default();
    let flag = stop.0.clone();
    assert!(!flag.load(std::sync::atomic::Ordering::Relaxed));
    drop(stop);
    assert!(flag.load(std::sync::atomic::Ordering::Relaxed));
    // A search that runs to its end is not stopped by it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "needle\n").unwrap();
    let query = GrepQuery {
        pattern: "needle".into(),
        glob: None,
        case_insensitive: false,
        max: 10,
        shown_root: dir.path().to_path_buf(),
    };
    assert_eq!(DiskFs.grep(dir.path(), &query).await.unwrap().total, 1);
}
