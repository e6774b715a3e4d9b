//! Undoing is itself safe: a file the person changed since is named and left alone
//! (unless forced), a redo puts the turn back, the size bound drops the oldest
//! checkpoints, files over `undo.max_file_mb` are named, and a restore never writes
//! through a symlink that now stands where a directory was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/undo_env.rs"]
mod undo_env;

use saki_undo::{Journal, UndoError, UndoLimits};
use serde_json::json;
use undo_env::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_person_changed_since_is_not_overwritten_without_force() {
    let mut env = Env::new();
    env.write("a.txt", "original\n");
    env.write("b.txt", "b\n");
    env.shell("edit both", "echo agent > a.txt && echo agent > b.txt")
        .await;
    env.write("a.txt", "the person's edit\n");

    let Err(UndoError::Conflicts(conflicts)) = env.checkpoints.undo(1, false).await else {
        panic!("a conflict was expected");
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].path, "a.txt");
    assert!(conflicts[0].why.contains("changed since"), "{conflicts:?}");
    let message = UndoError::Conflicts(conflicts).to_string();
    assert!(
        message.contains("a.txt") && message.contains("--force"),
        "{message}"
    );
    assert_eq!(env.read("a.txt").unwrap(), "the person's edit\n");
    assert_eq!(env.read("b.txt").unwrap(), "agent\n", "nothing was undone");

    let outcome = env.checkpoints.undo(1, true).await.unwrap();
    assert_eq!(outcome.overridden.len(), 1);
    assert_eq!(env.read("a.txt").unwrap(), "original\n");
    assert_eq!(env.read("b.txt").unwrap(), "b\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redo_puts_the_turn_back_and_checks_for_conflicts_too() {
    let mut env = Env::new();
    env.write("a.txt", "before\n");
    env.turn(
        "rewrite",
        &[&[("write_file", json!({"path": "a.txt", "content": "after\n"}))]],
    )
    .await;
    env.shell("more", "echo new > c.txt").await;
    env.checkpoints.undo(2, false).await.unwrap();
    assert_eq!(env.read("a.txt").unwrap(), "before\n");
    assert!(env.read("c.txt").is_none());

    let redone = env.checkpoints.redo(false).await.unwrap();
    assert!(redone.redo);
    assert_eq!(redone.turns.len(), 2);
    assert_eq!(env.read("a.txt").unwrap(), "after\n");
    assert_eq!(env.read("c.txt").unwrap(), "new\n");
    assert!(matches!(
        env.checkpoints.redo(false).await,
        Err(UndoError::NothingToRedo)
    ));

    // Undo again, then the person edits: the redo names the file.
    env.checkpoints.undo(1, false).await.unwrap();
    env.write("c.txt", "mine\n");
    assert!(matches!(
        env.checkpoints.redo(false).await,
        Err(UndoError::Conflicts(c)) if c[0].path == "c.txt"
    ));
    // A new turn that changes files makes the undo final.
    env.checkpoints.undo(1, true).await.ok();
    env.shell("other", "echo z > z.txt").await;
    assert!(matches!(
        env.checkpoints.redo(false).await,
        Err(UndoError::NothingToRedo)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_size_bound_drops_the_oldest_checkpoints() {
    const KB: u64 = 1024;
    let mut env = Env::with_limits(UndoLimits {
        max_bytes: 100 * KB,
        max_file_bytes: 64 * KB,
    });
    let version = |n: u8| String::from(char::from(b'a' + n)).repeat(30 * 1024);
    env.write("big.txt", &version(0));
    let mut notes = Vec::new();
    for n in 1..=3u8 {
        let report = env
            .turn(
                &format!("version {n}"),
                &[&[(
                    "write_file",
                    json!({"path": "big.txt", "content": version(n)}),
                )]],
            )
            .await;
        notes.extend(report.notes);
    }
    let states: Vec<(u64, &str)> = env
        .checkpoints
        .summaries()
        .iter()
        .map(|s| (s.turn, s.state))
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert_eq!(states, [(1, "dropped"), (2, "applied"), (3, "applied")]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("dropped") && n.contains("undo.max_mb")),
        "{notes:?}"
    );
    let objects = env.data.path().join("undo/objects");
    let stored: u64 = walk_sizes(&objects);
    assert!(stored <= 100 * KB, "the store holds {stored} bytes");
    assert!(matches!(
        env.checkpoints.undo(3, false).await,
        Err(UndoError::NotEnough { available: 2, .. })
    ));
    env.checkpoints.undo(2, false).await.unwrap();
    assert_eq!(env.read("big.txt").unwrap(), version(1));
}

fn walk_sizes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        // An object removed between the listing and its size holds nothing.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        total += if meta.is_dir() {
            walk_sizes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_over_the_file_limit_are_named_and_left_alone() {
    let mut env = Env::with_limits(UndoLimits {
        max_bytes: 1 << 30,
        max_file_bytes: 1024,
    });
    env.write("huge.bin", &"x".repeat(4096));
    env.write("small.txt", "s\n");
    let report = env
        .shell("grow", "echo more >> huge.bin && echo t > small.txt")
        .await;
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("huge.bin") && n.contains("undo.max_file_mb")),
        "{report:?}"
    );
    let outcome = env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("small.txt").unwrap(), "s\n");
    assert!(
        outcome.left.iter().any(|(p, _)| p == "huge.bin"),
        "{outcome:?}"
    );
    let summary = &env.checkpoints.summaries()[0];
    assert!(summary.skipped.iter().any(|(p, _)| p == "huge.bin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_replaced_by_a_symlink_is_never_written_through() {
    let mut env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    env.write("sub/x.txt", "x\n");
    env.turn(
        "edit",
        &[&[("write_file", json!({"path": "sub/x.txt", "content": "y\n"}))]],
    )
    .await;
    std::fs::remove_dir_all(env.path("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("sub")).unwrap();

    let Err(UndoError::Conflicts(conflicts)) = env.checkpoints.undo(1, false).await else {
        panic!("expected a conflict");
    };
    assert!(conflicts[0].why.contains("symlink"), "{conflicts:?}");
    // Forced, nothing can be put back: an error, and the turn is not marked undone.
    let Err(UndoError::NothingRestored { redo: false, left }) = env.checkpoints.undo(1, true).await
    else {
        panic!("expected nothing restored");
    };
    assert!(left
        .iter()
        .any(|(p, why)| p == "sub/x.txt" && why.contains("symlink")));
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert_eq!(env.checkpoints.summaries()[0].state, "applied");
    assert!(matches!(
        env.checkpoints.redo(false).await,
        Err(UndoError::NothingToRedo)
    ));
    // Once the directory is back, the same undo goes through.
    std::fs::remove_file(env.path("sub")).unwrap();
    std::fs::create_dir(env.path("sub")).unwrap();
    env.write("sub/x.txt", "y\n");
    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("sub/x.txt").unwrap(), "x\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_outlives_the_process_and_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut env = Env::new();
    env.write("a.txt", "1\n");
    env.shell("change", "echo 2 > a.txt").await;
    let path = saki_undo::journal_path(&env.data.path().join("undo"), "session-1").unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(env.data.path().join("undo/objects"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    // What `saki undo` does: the journal read back, no live state.
    let mut journal = Journal::load(path);
    let objects = saki_undo::objects::Objects::new(env.data.path().join("undo/objects"));
    saki_undo::ops::undo(&env.root, &objects, &mut journal, 1, false).unwrap();
    assert_eq!(env.read("a.txt").unwrap(), "1\n");
}

/// An undo puts back a directory the turn replaced with a file, and the files in it,
/// around its one file transaction (directories first, then the files).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_makes_directories_before_its_files() {
    let mut env = Env::new();
    env.write("a.txt", "a before\n");
    std::fs::create_dir_all(env.path("sub")).unwrap();
    env.write("sub/b.txt", "b before\n");
    env.shell(
        "edit both",
        "echo agent > a.txt && rm -r sub && echo agent > sub",
    )
    .await;
    // The conflict check looks at paths as they are now (`sub` is a file), so the
    // person forces it.
    let outcome = env.checkpoints.undo(1, true).await.unwrap();
    assert!(outcome.left.is_empty(), "{outcome:?}");
    assert_eq!(env.read("a.txt").unwrap(), "a before\n");
    assert_eq!(env.read("sub/b.txt").unwrap(), "b before\n");
}
