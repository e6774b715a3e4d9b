#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The session store on real files: round trip, listing, torn lines, dangling calls.

use saki_llm_worker::{Item, ToolExecutionContext, ToolResultStatus};
use saki_pod::*;
use std::io::Write;

fn ctx(id: &str, index: usize) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: id.into(),
        batch_id: "batch_1".into(),
        call_index: index,
    }
}

fn call(id: &str, index: usize) -> Item {
    Item::ToolCall {
        name: "shell".into(),
        arguments: "{\"command\":\"sleep 9\"}".into(),
        signature: None,
        ctx: ctx(id, index),
    }
}

#[test]
fn items_round_trip_and_sessions_list_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    assert!(store.list().unwrap().is_empty());
    let mut w = store
        .create(
            "/ws",
            "llamacpp",
            "qwen",
            "  fix   the\nbuild  ",
            Some("sys"),
        )
        .unwrap();
    assert_eq!(w.meta().title, "fix the build");
    let items = vec![
        Item::user("fix the build"),
        Item::system("[File: a.rs]\nfn a() {}"),
        Item::Thinking {
            text: "hm".into(),
            signature: Some("sig".into()),
        },
        Item::AssistantText {
            text: "done — ✓ 日本".into(),
        },
        call("c1", 0),
        Item::ToolResult {
            name: "shell".into(),
            content: "ok".into(),
            status: ToolResultStatus::Success,
            ctx: ctx("c1", 0),
        },
    ];
    for item in &items {
        w.append(item).unwrap();
    }
    let id = w.meta().id.clone();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.items, items);
    assert!(loaded.warnings.is_empty());
    let other = store
        .create("/other", "openai", "gpt", "second", None)
        .unwrap()
        .meta()
        .clone();
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(store.latest_for("/ws").unwrap().meta.id, id);
    assert_eq!(store.latest_for("/other").unwrap().meta.id, other.id);
    assert!(matches!(
        store.latest_for("/nowhere"),
        Err(StoreError::NoneForWorkspace(_))
    ));
    assert!(matches!(store.load("nope"), Err(StoreError::NotFound(_))));
    // One writer at a time: while `w` is open, the session is busy.
    assert!(matches!(store.append_to(&loaded), Err(StoreError::Busy(_))));
    assert!(matches!(store.load("../x"), Err(StoreError::BadId(_))));
    drop(w);
    // Appending later continues the same file.
    let mut again = store.append_to(&loaded).unwrap();
    again.append(&Item::user("more")).unwrap();
    assert_eq!(store.load(&id).unwrap().items.len(), items.len() + 1);
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut w = store.create("/ws", "p", "m", "t", None).unwrap();
    w.append(&Item::user("kept")).unwrap();
    let id = w.meta().id.clone();
    drop(w);
    let path = dir.path().join(format!("{id}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(br#"{"type":"item","item":{"type":"assistant_text","text":"half"#)
        .unwrap();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.items, [Item::user("kept")]);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("cut off"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn dangling_tool_calls_get_cancelled_results() {
    let mut items = vec![Item::user("go"), call("c1", 0), call("c2", 1)];
    items.push(Item::ToolResult {
        name: "shell".into(),
        content: "ok".into(),
        status: ToolResultStatus::Success,
        ctx: ctx("c1", 0),
    });
    let added = close_dangling_calls(&mut items, None);
    assert_eq!(added.len(), 1);
    assert!(
        matches!(&items[4], Item::ToolResult { status: ToolResultStatus::Cancelled, ctx, content, .. } if ctx.call_id == "c2" && ctx.call_index == 1 && content.starts_with("may have completed"))
    );
    assert!(close_dangling_calls(&mut items, None).is_empty());
}

#[test]
fn a_recorded_compaction_is_replayed_on_load_and_the_raw_items_stay_on_disk() {
    use saki_llm_worker::{
        Compaction, CompactionReport, CompactionStatus, CompactionTrigger, HistoryEdit,
    };
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut w = store.create("/ws", "p", "m", "first", None).unwrap();
    let raw = [
        Item::user("first"),
        Item::AssistantText { text: "one".into() },
        Item::user("second"),
    ];
    for item in &raw {
        w.append(item).unwrap();
    }
    let report = CompactionReport {
        trigger: CompactionTrigger::Auto,
        status: CompactionStatus::Compressed,
        tokens_before: 100,
        tokens_after: 40,
        pruned: 0,
        summarized: 2,
        auto_read: Vec::new(),
        message: None,
    };
    let edit = HistoryEdit {
        pruned: Vec::new(),
        summarized: 2,
        prefix: vec![Item::system("[Summary of the earlier conversation]\nS")],
    };
    w.append_compaction(&Compaction {
        report: report.clone(),
        edit: Some(edit),
    })
    .unwrap();
    // A report without an edit changes nothing and is not written.
    w.append_compaction(&Compaction { report, edit: None })
        .unwrap();
    w.append(&Item::AssistantText { text: "two".into() })
        .unwrap();
    let id = w.meta().id.clone();
    drop(w);

    let loaded = store.load(&id).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.items,
        vec![
            Item::system("[Summary of the earlier conversation]\nS"),
            Item::user("second"),
            Item::AssistantText { text: "two".into() },
        ]
    );
    let text = std::fs::read_to_string(&loaded.path).unwrap();
    assert!(text.contains("\"one\"") && text.contains("\"type\":\"compaction\""));
    assert_eq!(text.lines().count(), 1 + 3 + 1 + 1);
}

#[test]
fn a_compaction_that_does_not_fit_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let w = store.create("/ws", "p", "m", "first", None).unwrap();
    let path = dir.path().join(format!("{}.jsonl", w.meta().id));
    let id = w.meta().id.clone();
    drop(w);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(
        f,
        "{}",
        serde_json::json!({"type":"item","item":{"type":"user","text":"hi"}})
    )
    .unwrap();
    writeln!(
        f,
        "{}",
        serde_json::json!({"type":"compaction","edit":{"summarized":5},
        "report":{"trigger":"auto","status":"compressed","tokens_before":1,"tokens_after":0}})
    )
    .unwrap();
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.items, vec![Item::user("hi")]);
    assert!(
        loaded.warnings[0].contains("compaction is ignored"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn sessions_are_private_and_old_ones_are_made_so_on_resume() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("share/saki");
    let sessions = data.join("sessions");
    // As an older saki left them: world-readable.
    std::fs::create_dir_all(&sessions).unwrap();
    for dir in [&data, &sessions] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let share_before = mode(&home.path().join("share"));
    let store = SessionStore::new(sessions.clone());
    let mut writer = store.create("/w", "p", "m", "t", None).unwrap();
    writer.append(&Item::user("secret prompt")).unwrap();
    let id = writer.meta().id.clone();
    let path = sessions.join(format!("{id}.jsonl"));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&sessions), 0o700);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(
        mode(&home.path().join("share")),
        share_before,
        "not saki's: left alone"
    );
    drop(writer);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o755)).unwrap();
    let loaded = store.load(&id).unwrap();
    store.append_to(&loaded).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&sessions), 0o700);
}

#[test]
fn orphan_tool_results_are_left_out_on_load_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut w = store.create("/ws", "p", "m", "t", None).unwrap();
    let result = |id: &str| Item::ToolResult {
        name: "shell".into(),
        content: "ok".into(),
        status: ToolResultStatus::Success,
        ctx: ctx(id, 0),
    };
    for item in [
        Item::user("go"),
        result("ghost"),
        call("c1", 0),
        result("c1"),
        result("c1-again-ghost"),
    ] {
        w.append(&item).unwrap();
    }
    let id = w.meta().id.clone();
    drop(w);
    let loaded = store.load(&id).unwrap();
    assert_eq!(
        loaded.items,
        [Item::user("go"), call("c1", 0), result("c1")]
    );
    assert_eq!(
        loaded.warnings,
        ["2 tool results without their call left out"]
    );
}

#[test]
fn undos_and_rewinds_are_recorded_and_a_rewind_cuts_the_loaded_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let mut w = store.create("/ws", "p", "m", "first", None).unwrap();
    for n in 1..=3 {
        w.append(&Item::user(format!("prompt {n}"))).unwrap();
        w.append(&Item::AssistantText {
            text: format!("answer {n}"),
        })
        .unwrap();
    }
    let id = w.meta().id.clone();
    assert_eq!(store.load(&id).unwrap().turns, 3);
    w.append_undo(&UndoNote {
        redo: false,
        turns: vec![3],
        files: vec!["a.rs".into()],
        forced: false,
    })
    .unwrap();
    // Back to just before prompt 2: two items kept, two prompts taken away.
    w.append_rewind(2, 2).unwrap();
    w.append(&Item::user("prompt 2 again")).unwrap();
    let loaded = store.load(&id).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.items,
        [
            Item::user("prompt 1"),
            Item::AssistantText {
                text: "answer 1".into()
            },
            Item::user("prompt 2 again"),
        ]
    );
    assert_eq!(loaded.turns, 2);
    let raw = std::fs::read_to_string(&loaded.path).unwrap();
    assert!(raw.contains(r#""type":"undo","redo":false,"turns":[3],"files":["a.rs"]"#));
    assert!(raw.contains(r#""type":"rewind","keep":2,"turn":2"#));
}
