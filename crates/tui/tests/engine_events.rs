#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The UI fed by a real engine (against the mock provider): what the person sees of what
//! the engine reports.

use saki_engine::harness::{batch_ids, start, two_accepts, two_step_plan};
use saki_engine::ApprovalMode;
use saki_tui::protocol::Alert;
use saki_tui::transcript::EntryKind;
use saki_tui::{App, EngineEvent, Level, Status, Theme};
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accepts_in_a_row_show_each_group_under_its_own_prompt() {
    let server = two_step_plan();
    let mut h = start(&server, ApprovalMode::AutoEdit, true);
    let events = two_accepts(&mut h).await;
    assert_eq!(batch_ids(&events), ["batch_1", "batch_2", "batch_3"]);
    assert_eq!(
        std::fs::read_to_string(h.ws.path().join("todo.txt")).unwrap(),
        "- test\n"
    );

    // What the person sees: each group right under its own prompt.
    let mut app = App::new(
        Status::default(),
        Theme::plain(),
        h.ws.path().to_path_buf(),
        true,
    );
    let now = Instant::now();
    for event in events {
        app.apply(event, now);
    }
    let layout: Vec<String> = app
        .transcript
        .kinds()
        .filter_map(|k| match k {
            EntryKind::User(text) => Some(format!("user: {text}")),
            EntryKind::Tools { batch_id, rows } => Some(format!("{batch_id}: {} rows", rows.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        layout,
        [
            "user: hello",
            "batch_1: 1 rows",
            "user: add notes.txt",
            "batch_2: 1 rows",
            "user: add todo.txt",
            "batch_3: 1 rows",
        ]
    );
}

/// Setup alerts (config keys ignored in an untrusted workspace, a sandbox not in force)
/// reach the UI as the interactive front end sends them, `EngineEvent::from(alert)`: each
/// keeps its level, and shows under its own label.
#[test]
fn a_setup_alert_keeps_its_level_in_the_transcript() {
    let mut app = App::new(
        Status::default(),
        Theme::plain(),
        std::env::temp_dir(),
        true,
    );
    let sent = [
        (Level::Info, "a note"),
        (Level::Warn, "a warning"),
        (Level::Error, "an error"),
    ];
    for (level, message) in sent {
        let alert = Alert {
            level,
            message: message.into(),
        };
        app.apply(EngineEvent::from(alert), Instant::now());
    }
    let kept: Vec<(Level, &str)> = app
        .transcript
        .kinds()
        .filter_map(|k| match k {
            EntryKind::Alert { level, message } => Some((*level, message.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(kept, sent);
    let (lines, _) = app.transcript.window(60, 10, 0);
    let shown: Vec<String> = lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        shown,
        ["note: a note", "warning: a warning", "error: an error"]
    );
}
