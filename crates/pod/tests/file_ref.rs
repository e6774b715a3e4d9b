#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `@path` parsing and resolution: the spec's completion list, and escapes refused.

use saki_llm_worker::{Interceptor, Item, PromptAction};
use saki_pod::*;
use saki_tools::Workspace;
use std::sync::Arc;

fn text(s: &str) -> Segment {
    Segment::Text(s.into())
}
fn file(s: &str) -> Segment {
    Segment::FileRef { path: s.into() }
}

#[test]
fn prompts_split_into_text_and_file_refs() {
    assert_eq!(
        parse_prompt("explain @src/main.rs please"),
        [text("explain "), file("src/main.rs"), text(" please")]
    );
    assert_eq!(parse_prompt("@a.txt"), [file("a.txt")]);
    assert_eq!(
        parse_prompt("see @\"my notes.md\" now"),
        [text("see "), file("my notes.md"), text(" now")]
    );
    assert_eq!(
        parse_prompt("mail me@example.com"),
        [text("mail me@example.com")]
    );
    assert_eq!(
        parse_prompt("literal \\@not-a-ref"),
        [text("literal @not-a-ref")]
    );
    assert_eq!(
        parse_prompt("compare @a.rs, @b.rs."),
        [
            text("compare "),
            file("a.rs"),
            text(", "),
            file("b.rs"),
            text(".")
        ]
    );
    assert_eq!(parse_prompt("a lone @ sign"), [text("a lone @ sign")]);
    assert_eq!(
        parse_prompt("unclosed @\"quote"),
        [text("unclosed @\"quote")]
    );
}

struct Fx {
    dir: tempfile::TempDir,
    view: FsView,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.join("bin.dat"), [0u8, 1, 2, 255]).unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), ws.join("sub/up")).unwrap();
    let view = FsView::new(Arc::new(Workspace::new(&ws).unwrap()));
    Fx { dir, view }
}

#[tokio::test]
async fn a_resolved_ref_becomes_a_system_item_after_the_user_text() {
    let f = fx();
    let (user, items, alerts) = f
        .view
        .prepare(&parse_prompt("what is in @a.txt?"), 16 * 1024)
        .await;
    assert_eq!(user, "what is in @a.txt?");
    assert_eq!(items, [Item::system("[File: a.txt]\nalpha\n")]);
    assert!(alerts.is_empty());
}

#[tokio::test]
async fn big_files_are_cut_at_a_char_boundary_with_a_visible_notice() {
    let f = fx();
    let ws = f.dir.path().join("ws");
    let body = "日本語".repeat(3000); // 27,000 bytes of 3-byte chars
    std::fs::write(ws.join("big.txt"), &body).unwrap();
    let item = f.view.resolve_file_ref("big.txt", 16 * 1024).await.unwrap();
    let Item::System { text } = item else {
        panic!()
    };
    assert!(
        text.ends_with("[...truncated, 27000 bytes total — use read_file for the rest]"),
        "{}",
        &text[text.len() - 80..]
    );
    assert!(text.len() < 16 * 1024 + 200);
}

#[tokio::test]
async fn failures_raise_a_warn_alert_and_leave_a_placeholder_only() {
    let f = fx();
    let (user, items, alerts) = f
        .view
        .prepare(
            &parse_prompt("@missing.txt @bin.dat @../outside.txt @a.txt"),
            16 * 1024,
        )
        .await;
    assert_eq!(
        user,
        "[unresolved file ref: missing.txt] [unresolved file ref: bin.dat] [unresolved file ref: ../outside.txt] @a.txt"
    );
    assert_eq!(items.len(), 1, "only the good ref is attached");
    assert_eq!(alerts.len(), 3);
    assert!(alerts.iter().all(|a| a.level == AlertLevel::Warn));
    assert!(alerts[0].message.contains("does not exist"));
    assert!(alerts[1].message.contains("binary"));
    assert!(alerts[2].message.contains("outside the workspace"));
    assert_eq!(
        f.view.resolve_file_ref("missing.txt", 10).await,
        Err(ResolveError::NotFound("missing.txt".into()))
    );
    assert_eq!(
        f.view.resolve_file_ref("bin.dat", 10).await,
        Err(ResolveError::Binary("bin.dat".into()))
    );
}

#[tokio::test]
async fn escapes_are_all_refused() {
    let f = fx();
    let outside = f.dir.path().join("outside.txt").display().to_string();
    for path in [
        "../outside.txt",
        "sub/../../outside.txt",
        "./../outside.txt",
        outside.as_str(),
        "/etc/passwd",
        "link.txt",
        "sub/up/outside.txt",
        "sub/up/ws/../outside.txt",
        "sub/./up/outside.txt",
    ] {
        assert_eq!(
            f.view.resolve_file_ref(path, 1024).await,
            Err(ResolveError::OutOfScope(path.to_owned())),
            "{path} must be refused"
        );
    }
    // Symlinks that stay inside are fine.
    assert!(f
        .view
        .resolve_file_ref("sub/up/ws/a.txt", 1024)
        .await
        .is_ok());
}

#[tokio::test]
async fn the_interceptor_hands_over_the_stash_once() {
    let pod = PodInterceptor::default();
    pod.stash(vec![Item::system("[File: a]\nx")]);
    let user = Item::user("u");
    assert_eq!(
        pod.on_prompt_submit(&user).await,
        PromptAction::ContinueWith(vec![Item::system("[File: a]\nx")])
    );
    assert_eq!(pod.on_prompt_submit(&user).await, PromptAction::Continue);
}

/// The disk, except for one file whose text a front end holds (an editor's unsaved
/// buffer).
#[derive(Debug)]
struct Buffered {
    path: std::path::PathBuf,
    text: &'static [u8],
}

#[async_trait::async_trait]
impl saki_tools::fs::Fs for Buffered {
    async fn stat(&self, path: &std::path::Path) -> std::io::Result<Option<saki_tools::fs::Stat>> {
        saki_tools::fs::DiskFs.stat(path).await
    }
    async fn read(&self, path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
        if path == self.path {
            return Ok(self.text.to_vec());
        }
        saki_tools::fs::DiskFs.read(path, max).await
    }
    async fn open(&self, path: &std::path::Path) -> std::io::Result<saki_tools::fs::Opened> {
        if path == self.path {
            return Ok(saki_tools::fs::Opened {
                reader: Box::new(std::io::Cursor::new(self.text)),
                len: self.text.len() as u64,
            });
        }
        saki_tools::fs::DiskFs.open(path).await
    }
    async fn write(&self, path: &std::path::Path, content: &[u8]) -> std::io::Result<()> {
        saki_tools::fs::DiskFs.write(path, content).await
    }
    async fn remove_file(&self, path: &std::path::Path) -> std::io::Result<()> {
        saki_tools::fs::DiskFs.remove_file(path).await
    }
    async fn list_dir(&self, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
        saki_tools::fs::DiskFs.list_dir(dir).await
    }
    async fn glob(
        &self,
        base: &std::path::Path,
        matcher: &saki_tools::fs::GlobMatcher,
    ) -> Result<Vec<String>, saki_llm_worker::ToolError> {
        saki_tools::fs::DiskFs.glob(base, matcher).await
    }
    async fn grep(
        &self,
        base: &std::path::Path,
        query: &saki_tools::fs::GrepQuery,
    ) -> Result<saki_tools::fs::Found, saki_llm_worker::ToolError> {
        saki_tools::fs::DiskFs.grep(base, query).await
    }
}

/// `@path` and compaction's re-reads read through the workspace's file system: in an
/// editor, the buffer it holds, not the file on disk.
#[tokio::test]
async fn a_reference_reads_what_the_workspaces_file_system_holds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "on disk\n").unwrap();
    let mut workspace = Workspace::new(dir.path()).unwrap();
    let real = workspace.root().join("a.txt");
    workspace.set_fs(Arc::new(Buffered {
        path: real,
        text: b"unsaved edit\n",
    }));
    let view = FsView::new(Arc::new(workspace));
    let (_, items, alerts) = view
        .prepare(&parse_prompt("look at @a.txt"), 16 * 1024)
        .await;
    assert!(alerts.is_empty(), "{alerts:?}");
    assert_eq!(items, [Item::system("[File: a.txt]\nunsaved edit\n")]);
    assert_eq!(
        view.read_text("a.txt", 1024).await.unwrap(),
        "unsaved edit\n"
    );
}

/// A one-pixel PNG.
const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xc9, 0xfe, 0x92, 0xef, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// An `@path` image is read through the workspace's file system too (a speculation's
/// overlay, an editor's buffer), by its name or, under another name, by its bytes.
#[tokio::test]
async fn an_image_reference_reads_what_the_workspaces_file_system_holds() {
    for name in ["pic.png", "pic.dat"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), "not an image on disk\n").unwrap();
        let mut workspace = Workspace::new(dir.path()).unwrap();
        let real = workspace.root().join(name);
        workspace.set_fs(Arc::new(Buffered {
            path: real,
            text: PIXEL_PNG,
        }));
        let view = FsView::new(Arc::new(workspace)).with_vision("m", true);
        let (_, items, alerts) = view
            .prepare(&parse_prompt(&format!("see @{name}")), 16 * 1024)
            .await;
        assert!(alerts.is_empty(), "{name}: {alerts:?}");
        assert!(
            matches!(&items[..], [Item::Image { path, .. }] if path == name),
            "{name}: {items:?}"
        );
    }
}
