#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `@path` images and their place in the session log: attached as image items, refused
//! with an alert when they cannot be (not an image, outside the workspace, a model
//! without vision), stored by reference and read back on resume.

use saki_llm_worker::Item;
use saki_pod::*;
use saki_testkit::{TINY_PNG, TINY_PNG_BASE64};
use saki_tools::Workspace;
use std::sync::Arc;

struct Fx {
    dir: tempfile::TempDir,
    ws: Arc<Workspace>,
}

fn fx() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("shot.png"), TINY_PNG).unwrap();
    std::fs::write(ws.join("capture"), TINY_PNG).unwrap();
    std::fs::write(ws.join("fake.png"), "text pretending\n").unwrap();
    std::fs::write(dir.path().join("outside.png"), TINY_PNG).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.png"), ws.join("link.png")).unwrap();
    let ws = Arc::new(Workspace::new(&ws).unwrap());
    Fx { dir, ws }
}

#[tokio::test]
async fn an_image_reference_becomes_an_image_item_after_the_prompt() {
    let f = fx();
    let view = FsView::new(f.ws.clone()).with_vision("m", true);
    let (text, items, alerts) = view
        .prepare(&parse_prompt("compare @shot.png and @capture"), 16 * 1024)
        .await;
    assert!(alerts.is_empty(), "{alerts:?}");
    assert_eq!(text, "compare @shot.png and @capture");
    assert_eq!(items.len(), 2);
    for (item, name) in items.iter().zip(["shot.png", "capture"]) {
        let Item::Image {
            path,
            image,
            call_id,
        } = item
        else {
            panic!("{item:?}")
        };
        assert_eq!((path.as_str(), call_id), (name, &None));
        assert_eq!(image.media_type, "image/png");
        assert_eq!((image.width, image.height), (3, 2));
        assert_eq!(image.data.as_ref().unwrap().as_str(), TINY_PNG_BASE64);
    }
}

#[tokio::test]
async fn images_that_cannot_be_attached_are_alerts_with_the_placeholder() {
    let f = fx();
    let view = FsView::new(f.ws.clone()).with_vision("m", true);
    let (text, items, alerts) = view
        .prepare(&parse_prompt("@fake.png @link.png"), 16 * 1024)
        .await;
    assert!(items.is_empty(), "{items:?}");
    assert_eq!(
        text,
        "[unresolved file ref: fake.png] [unresolved file ref: link.png]"
    );
    assert!(
        alerts[0]
            .message
            .contains("fake.png is not a PNG, JPEG, GIF or WebP image"),
        "{alerts:?}"
    );
    assert!(
        alerts[1].message.contains("outside the workspace"),
        "{alerts:?}"
    );

    let blind = FsView::new(f.ws.clone()).with_vision("qwen3-coder", false);
    let (_, items, alerts) = blind.prepare(&parse_prompt("@shot.png"), 16 * 1024).await;
    assert!(items.is_empty());
    assert_eq!(alerts[0].level, AlertLevel::Warn);
    assert!(
        alerts[0]
            .message
            .contains("@shot.png was not attached: the model qwen3-coder does not accept images"),
        "{alerts:?}"
    );
    assert!(alerts[0].message.contains("vision = true"), "{alerts:?}");
}

#[tokio::test]
async fn the_log_holds_a_reference_and_a_resumed_session_has_the_bytes_again() {
    let f = fx();
    let view = FsView::new(f.ws.clone()).with_vision("m", true);
    let (text, images, _) = view
        .prepare(&parse_prompt("what is @shot.png"), 16 * 1024)
        .await;
    let sessions = f.dir.path().join("sessions");
    let store = SessionStore::new(&sessions);
    let mut writer = store.create("/ws", "p", "m", "t", None).unwrap();
    writer.append(&Item::user(text)).unwrap();
    writer.append_all(&images).unwrap();
    let id = writer.meta().id.clone();
    drop(writer);

    let log = std::fs::read_to_string(sessions.join(format!("{id}.jsonl"))).unwrap();
    assert!(!log.contains(TINY_PNG_BASE64), "base64 in the log:\n{log}");
    let digest = saki_tools::common::sha256_hex(TINY_PNG);
    assert!(log.contains(&digest), "{log}");
    assert_eq!(
        std::fs::read(sessions.join("images").join(&digest)).unwrap(),
        TINY_PNG
    );

    let loaded = store.load(&id).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.items[1..], images[..]);
    let Item::Image { image, .. } = &loaded.items[1] else {
        panic!("{:?}", loaded.items)
    };
    assert_eq!(image.data.as_ref().unwrap().as_str(), TINY_PNG_BASE64);

    // Gone from the store: the session still loads, the image without its bytes.
    std::fs::remove_file(sessions.join("images").join(&digest)).unwrap();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(matches!(&loaded.items[1], Item::Image { image, .. } if image.data.is_none()));
}
