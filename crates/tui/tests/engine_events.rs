#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The UI fed by a real engine (against the mock provider): what the person sees of what
//! the engine reports.

use saki_engine::harness::{batch_ids, start, two_accepts, two_step_plan};
use saki_tools::ApprovalMode;
use saki_tui::transcript::EntryKind;
use saki_tui::{App, Status, Theme};
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
