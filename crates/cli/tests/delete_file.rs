#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `delete_file` tried as a hostile model would: outside paths, `..`, a symlink leading
//! out, files that make tools run code, in every approval mode, through the real binary.

mod common;

use common::{env_with, events, Env};
use saki_testkit::{MockServer, Turn};

/// Runs one `delete_file` call in `mode`; returns the tool result's status and output.
fn delete(e: &Env, mode: &str, path: &str) -> (String, String) {
    let server = MockServer::start().unwrap();
    let args = serde_json::json!({ "path": path }).to_string();
    server.push(Turn::new().with_tool_call("c1", "delete_file", &args));
    server.push(Turn::text("done"));
    let out = e
        .cmd()
        .args([
            "exec",
            "--json",
            "--base-url",
            &server.openai_url(),
            "--model",
            "m",
        ])
        .args(["--approval", mode, "delete it"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = events(&out.stdout)
        .into_iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .unwrap();
    (
        result["item"]["status"].as_str().unwrap().to_owned(),
        result["item"]["output"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn delete_file_never_leaves_the_workspace_and_asks_where_edits_ask() {
    let e = env_with(&[("tmp.log", "noise\n"), ("keep.txt", "keep\n")]);
    let outside = e.home.path().join("outside.txt");
    std::fs::write(&outside, "mine").unwrap();
    std::os::unix::fs::symlink(&outside, e.ws.join("link.txt")).unwrap();
    std::fs::create_dir_all(e.ws.join(".git")).unwrap();
    std::fs::write(e.ws.join(".git/config"), "[core]\n").unwrap();

    // Plan and default (no one to ask in exec): denied, nothing deleted.
    for mode in ["plan", "default"] {
        let (status, output) = delete(&e, mode, "tmp.log");
        assert_eq!(status, "denied", "{mode}: {output}");
        assert!(e.ws.join("tmp.log").exists(), "{mode}");
    }
    // Outside, however spelled, in the most permissive mode: an error, nothing deleted.
    for path in [
        outside.to_str().unwrap(),
        "../outside.txt",
        "link.txt",
        "./../outside.txt",
    ] {
        let (status, output) = delete(&e, "yolo", path);
        assert_eq!(status, "error", "{path}: {output}");
        assert!(outside.exists(), "{path}");
    }
    assert!(
        e.ws.join("link.txt").exists(),
        "a link is not followed nor removed"
    );
    // A file that makes tools run code needs the person even in auto-edit.
    let (status, output) = delete(&e, "auto-edit", ".git/config");
    assert_eq!(status, "denied", "{output}");
    assert!(e.ws.join(".git/config").exists());
    // An ordinary file in auto-edit: deleted, the rest untouched.
    let (status, output) = delete(&e, "auto-edit", "tmp.log");
    assert_eq!(
        (status.as_str(), output.as_str()),
        ("success", "deleted tmp.log (6 bytes)")
    );
    assert!(!e.ws.join("tmp.log").exists() && e.ws.join("keep.txt").exists());
}
