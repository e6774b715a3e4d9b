#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `read_file` on images, through the built-in (capped) tool as the Worker runs it: the
//! image comes back beside a one-line result; what is not an image, too large, or
//! outside the workspace is a clear error.

use saki_llm_worker::{ToolExecutionContext, ToolOutput, ToolServer};
use saki_tools::{builtin_server, Workspace};
use serde_json::json;
use std::sync::Arc;

struct Fixture {
    dir: tempfile::TempDir,
    server: ToolServer,
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 7])
    });
    let mut out = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("shot.png"), png(64, 48)).unwrap();
    std::fs::write(ws.join("noext"), png(8, 8)).unwrap();
    std::fs::write(ws.join("fake.png"), "I am text, not a picture\n").unwrap();
    std::fs::write(dir.path().join("outside.png"), png(8, 8)).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.png"), ws.join("link.png")).unwrap();
    std::fs::File::create(ws.join("huge.png"))
        .unwrap()
        .set_len(200 * 1024 * 1024)
        .unwrap();
    let server = builtin_server(Arc::new(Workspace::new(&ws).unwrap())).unwrap();
    Fixture { dir, server }
}

impl Fixture {
    async fn read(&self, path: &str) -> Result<ToolOutput, String> {
        let ctx = ToolExecutionContext {
            call_id: "c".into(),
            batch_id: "b".into(),
            call_index: 0,
        };
        let _ = &self.dir;
        self.server
            .call_tool("read_file", &json!({ "path": path }).to_string(), ctx)
            .await
            .map_err(|e| e.to_string())
    }
}

#[tokio::test]
async fn an_image_comes_back_as_an_image_with_a_line_saying_what_it_is() {
    let f = fixture();
    let out = f.read("shot.png").await.unwrap();
    assert_eq!(out.content, "[Image: shot.png (PNG 64×48)]");
    assert_eq!(out.images.len(), 1);
    let image = &out.images[0];
    assert_eq!(image.path, "shot.png");
    assert_eq!(image.image.media_type, "image/png");
    assert!(image.image.data.is_some());
    // Found by its bytes under any name.
    let out = f.read("noext").await.unwrap();
    assert_eq!(out.images.len(), 1, "{}", out.content);
}

#[tokio::test]
async fn what_cannot_be_shown_is_a_clear_error() {
    let f = fixture();
    let fake = f.read("fake.png").await.unwrap_err();
    assert!(
        fake.contains("fake.png is not a PNG, JPEG, GIF or WebP image"),
        "{fake}"
    );
    let huge = f.read("huge.png").await.unwrap_err();
    assert!(huge.contains("images over 20 MiB are not read"), "{huge}");
    let link = f.read("link.png").await.unwrap_err();
    assert!(link.contains("outside"), "{link}");
}
