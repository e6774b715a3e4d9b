//! Undo without git: a tool edit, a shell create, delete, `mv` and `chmod` are each
//! restored, in a plain directory and in a git repository whose `.git` (index, refs,
//! objects) is byte for byte the same after the turns and their undo.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/undo_env.rs"]
mod undo_env;

use serde_json::json;
use undo_env::{digest_tree, Env};

/// The five kinds of change, each its own turn, each undone in turn (newest first).
async fn every_kind_of_change_is_restored(env: &mut Env) {
    env.write("edit.txt", "one\ntwo\n");
    env.write("gone.txt", "keep me\n");
    env.write("a.txt", "moved content\n");
    env.write("run.sh", "echo hi\n");

    let report = env
        .turn(
            "fix the typo",
            &[&[(
                "edit",
                json!({"path": "edit.txt", "old_string": "two", "new_string": "TWO"}),
            )]],
        )
        .await;
    assert_eq!(report.files, ["edit.txt"]);
    assert_eq!(env.read("edit.txt").unwrap(), "one\nTWO\n");

    let report = env.shell("make a file", "echo created > new.txt").await;
    assert_eq!(report.files, ["new.txt"], "{report:?}");
    let report = env.shell("delete it", "rm gone.txt").await;
    assert_eq!(report.files, ["gone.txt"]);
    let report = env.shell("rename", "mv a.txt b.txt").await;
    assert_eq!(report.files, ["a.txt", "b.txt"]);
    let report = env.shell("make it runnable", "chmod 755 run.sh").await;
    assert_eq!(report.files, ["run.sh"]);
    assert_eq!(env.mode("run.sh"), 0o755);

    let list = env.checkpoints.summaries();
    let turns: Vec<u64> = list.iter().map(|s| s.turn).collect();
    assert_eq!(turns, [1, 2, 3, 4, 5]);

    let undone = env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(undone.turns[0].0, 5);
    assert_eq!(env.mode("run.sh"), 0o644, "permission change restored");

    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("a.txt").unwrap(), "moved content\n", "mv restored");
    assert!(env.read("b.txt").is_none());

    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(
        env.read("gone.txt").unwrap(),
        "keep me\n",
        "delete restored"
    );

    env.checkpoints.undo(1, false).await.unwrap();
    assert!(env.read("new.txt").is_none(), "created file removed");

    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(
        env.read("edit.txt").unwrap(),
        "one\ntwo\n",
        "tool edit restored"
    );
    assert!(matches!(
        env.checkpoints.undo(1, false).await,
        Err(saki_undo::UndoError::NothingToUndo)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restores_every_kind_of_change_in_a_plain_directory() {
    let mut env = Env::new();
    assert!(!env.path(".git").exists());
    every_kind_of_change_is_restored(&mut env).await;
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restores_every_kind_of_change_in_a_git_repository_without_touching_git() {
    let mut env = Env::new();
    env.write("tracked.txt", "tracked\n");
    git(&env.root, &["init", "-q"]);
    git(&env.root, &["add", "tracked.txt"]);
    git(&env.root, &["commit", "-q", "-m", "first"]);
    let git_before = digest_tree(&env.path(".git"));
    assert!(git_before.iter().any(|(p, _, _)| p == "index"));
    assert!(git_before
        .iter()
        .any(|(p, _, _)| p.starts_with("refs/heads")));

    every_kind_of_change_is_restored(&mut env).await;

    assert_eq!(
        digest_tree(&env.path(".git")),
        git_before,
        "index, refs and objects untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_paths_a_command_names_are_restored() {
    let mut env = Env::new();
    env.write(".gitignore", "build/\n");
    env.write("build/out/app.bin", "binary\n");
    env.write("build/log.txt", "log\n");
    let report = env.shell("clean", "rm -rf build").await;
    assert!(
        report.files.contains(&"build/log.txt".to_owned()),
        "{report:?}"
    );
    assert!(!env.path("build").exists());
    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("build/out/app.bin").unwrap(), "binary\n");
    assert_eq!(env.read("build/log.txt").unwrap(), "log\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_turns_undo_together_and_a_speculation_is_covered() {
    let mut env = Env::new();
    env.write("x.txt", "0\n");
    env.shell("one", "echo 1 > x.txt").await;
    env.turn(
        "two",
        &[&[("write_file", json!({"path": "x.txt", "content": "2\n"}))]],
    )
    .await;
    // An accepted speculation: the engine names the files it applies.
    let cp = &env.checkpoints;
    cp.begin_turn("three");
    cp.before_paths(&["x.txt".to_owned()]);
    std::fs::write(env.path("x.txt"), "3\n").unwrap();
    cp.after_paths(&["x.txt".to_owned()]);
    let report = cp.end_turn().await.unwrap();
    assert_eq!(
        (report.turn, report.files.clone()),
        (3, vec!["x.txt".to_owned()])
    );

    let outcome = cp.undo(3, false).await.unwrap();
    assert_eq!(outcome.turns.len(), 3);
    assert_eq!(env.read("x.txt").unwrap(), "0\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directories_made_moved_and_removed_come_back_and_ignored_output_is_left_alone() {
    let mut env = Env::new();
    env.write(".gitignore", "out/\n");
    env.write("lib/a.rs", "a\n");
    env.write("lib/deep/b.rs", "b\n");
    env.shell("make", "mkdir -p gen/x && echo g > gen/x/g.rs")
        .await;
    let report = env.shell("move", "mv lib src").await;
    assert!(
        report.files.contains(&"src/deep/b.rs".to_owned()),
        "{report:?}"
    );
    assert!(
        report.files.contains(&"lib/deep/b.rs".to_owned()),
        "{report:?}"
    );
    // Build output nobody names is not the turn's to restore.
    let report = env
        .shell("remove", "rm -rf gen && mkdir -p o && touch o/x && true")
        .await;
    assert!(
        report.files.contains(&"gen/x/g.rs".to_owned()),
        "{report:?}"
    );
    env.shell("build", "sh -c 'mkdir -p out && echo bin > out/app'")
        .await;
    assert!(env
        .checkpoints
        .summaries()
        .iter()
        .all(|s| s.files.iter().all(|f| !f.starts_with("out"))));

    // The build changed nothing undo covers: no checkpoint; the last is the removal.
    assert_eq!(env.checkpoints.summaries().len(), 3);
    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("gen/x/g.rs").unwrap(), "g\n");
    assert!(!env.path("o").exists());
    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("lib/deep/b.rs").unwrap(), "b\n");
    assert!(
        !env.path("src").exists(),
        "the moved directory is gone again"
    );
    env.checkpoints.undo(1, false).await.unwrap();
    assert!(!env.path("gen").exists());
    assert_eq!(
        env.read("out/app").unwrap(),
        "bin\n",
        "ignored output untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_read_and_a_first_call_that_does_not_wait_for_it_agree() {
    for wait in [false, true] {
        let mut env = Env::new();
        for i in 0..300 {
            env.write(&format!("d{}/f{i}.txt", i % 7), &format!("{i}\n"));
        }
        let reading = env.checkpoints.warm().expect("the background read starts");
        if wait {
            reading.join().unwrap();
        }
        env.shell("edit", "echo x > d3/f3.txt && rm d4/f4.txt")
            .await;
        env.shell("again", "echo y > d3/f3.txt").await;
        env.checkpoints.undo(2, false).await.unwrap();
        assert_eq!(env.read("d3/f3.txt").unwrap(), "3\n", "wait: {wait}");
        assert_eq!(env.read("d4/f4.txt").unwrap(), "4\n", "wait: {wait}");
    }
}
