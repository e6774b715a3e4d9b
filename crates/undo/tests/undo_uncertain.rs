//! Who changed a file while a command ran cannot be told: a change the scan finds at a
//! path the command does not name is uncertain, and undo (and redo) leave it alone
//! unless forced, with the rest of the turn (all or nothing, as for any conflict).
//! Named paths, deletions, directories and file tools' writes stay certain, and a
//! journal written before uncertainty was recorded undoes as it always did.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/undo_env.rs"]
mod undo_env;

use saki_undo::{Journal, UndoError};
use serde_json::json;
use std::time::Duration;
use undo_env::Env;

/// A command that runs until told to stop: it says it started (`started`), waits for
/// `done`, then writes the file it names. `started` and `done` are named too.
const LONG_COMMAND: &str = "touch started && for i in $(seq 500); do [ -e done ] && break; \
                            sleep 0.02; done; echo new > out.txt";

/// The person's editor, saving `notes.txt` while the command runs.
fn person_saves_during_the_command(root: std::path::PathBuf) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for _ in 0..1000 {
            if root.join("started").exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::write(root.join("notes.txt"), "the person's save\n").unwrap();
        std::fs::write(root.join("done"), "").unwrap();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_during_a_command_that_does_not_name_it_is_restored_only_with_force() {
    let mut env = Env::new();
    env.write("notes.txt", "the person's draft\n");
    env.write("out.txt", "old\n");
    let person = person_saves_during_the_command(env.root.clone());
    let report = env.shell("run the long job", LONG_COMMAND).await;
    person.join().unwrap();
    assert!(
        report.files.contains(&"notes.txt".to_owned())
            && report.files.contains(&"out.txt".to_owned()),
        "{report:?}"
    );
    let summary = &env.checkpoints.summaries()[0];
    let uncertain: Vec<&str> = summary.uncertain.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(uncertain, ["notes.txt"], "{summary:?}");

    let Err(UndoError::Conflicts(conflicts)) = env.checkpoints.undo(1, false).await else {
        panic!("the uncertain file must stop the undo");
    };
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!(conflicts[0].path, "notes.txt");
    assert!(conflicts[0].uncertain);
    let why = &conflicts[0].why;
    assert!(
        why.contains("cannot tell whether the command or you changed it")
            && why.contains("`touch started && for i in")
            && why.contains('…'),
        "the command, shortened: {why}"
    );
    let message = UndoError::Conflicts(conflicts).to_string();
    assert!(
        message.contains("notes.txt")
            && message.contains("--force restores them anyway")
            && message.contains("cargo fmt"),
        "{message}"
    );
    assert_eq!(env.read("notes.txt").unwrap(), "the person's save\n");
    assert_eq!(env.read("out.txt").unwrap(), "new\n", "all or nothing");

    let outcome = env.checkpoints.undo(1, true).await.unwrap();
    assert_eq!(outcome.overridden.len(), 1);
    assert!(outcome
        .describe()
        .contains("overwritten (--force): notes.txt"));
    assert_eq!(env.read("notes.txt").unwrap(), "the person's draft\n");
    assert_eq!(env.read("out.txt").unwrap(), "old\n");
    assert!(!env.path("started").exists() && !env.path("done").exists());

    // Redo is symmetric: the uncertain file is put back only when forced.
    assert!(matches!(
        env.checkpoints.redo(false).await,
        Err(UndoError::Conflicts(c)) if c.len() == 1 && c[0].path == "notes.txt" && c[0].uncertain
    ));
    assert_eq!(env.read("out.txt").unwrap(), "old\n");
    env.checkpoints.redo(true).await.unwrap();
    assert_eq!(env.read("notes.txt").unwrap(), "the person's save\n");
    assert_eq!(env.read("out.txt").unwrap(), "new\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_formatter_that_names_nothing_needs_force_one_that_names_its_directory_does_not() {
    let mut env = Env::new();
    // A formatter in the manner of `cargo fmt`: it rewrites files it was not given.
    env.write(
        "fmt.sh",
        "for f in $(find . -name '*.rs'); do echo formatted > \"$f\"; done\n",
    );
    env.write("src/a.rs", "a\n");
    env.write("src/b.rs", "b\n");
    env.write("old.txt", "old\n");
    env.shell("format", "sh fmt.sh && sh -c 'rm old.txt && mkdir gen'")
        .await;
    assert_eq!(env.read("src/a.rs").unwrap(), "formatted\n");
    let Err(UndoError::Conflicts(conflicts)) = env.checkpoints.undo(1, false).await else {
        panic!("a formatter's changes need --force");
    };
    // The deletion and the new directory are certain: undoing them loses nothing.
    let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["src/a.rs", "src/b.rs"]);
    assert!(conflicts.iter().all(|c| c.why.contains("`sh fmt.sh && ")));
    assert!(env.path("gen").is_dir() && !env.path("old.txt").exists());
    env.checkpoints.undo(1, true).await.unwrap();
    assert_eq!(env.read("src/a.rs").unwrap(), "a\n");
    assert_eq!(env.read("old.txt").unwrap(), "old\n");
    assert!(!env.path("gen").exists());

    // Named (a directory counts for what is under it): undone without force.
    env.shell("format src", "sh fmt.sh src").await;
    assert!(env.checkpoints.summaries()[1].uncertain.is_empty());
    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("src/b.rs").unwrap(), "b\n");

    // Working in a directory is not naming what is under it.
    env.shell("format there", "cd src && sh ../fmt.sh").await;
    let summary = env.checkpoints.summaries().pop().unwrap();
    assert_eq!(summary.uncertain.len(), 2, "{summary:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_tools_write_beside_a_command_stays_certain() {
    let mut env = Env::new();
    env.write("w.txt", "before\n");
    env.turn(
        "write and wait",
        &[&[
            ("shell", json!({"command": "sleep 0.1 && touch t.txt"})),
            ("write_file", json!({"path": "w.txt", "content": "after\n"})),
        ]],
    )
    .await;
    assert!(env.checkpoints.summaries()[0].uncertain.is_empty());
    env.checkpoints.undo(1, false).await.unwrap();
    assert_eq!(env.read("w.txt").unwrap(), "before\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_written_before_uncertainty_was_recorded_undoes_as_before() {
    let mut env = Env::new();
    env.write("notes.txt", "draft\n");
    env.write("gen.sh", "echo generated > notes.txt\n");
    env.shell("generate", "sh gen.sh").await;
    let path = saki_undo::journal_path(&env.data.path().join("undo"), "session-1").unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""uncertain":"sh gen.sh""#), "{text}");
    // The same journal as an older saki wrote it: no such field.
    let old: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(files) = record["files"].as_array_mut() {
                for file in files {
                    file.as_object_mut().unwrap().remove("uncertain");
                }
            }
            record.to_string()
        })
        .collect();
    std::fs::write(&path, old.join("\n") + "\n").unwrap();

    let mut journal = Journal::load(path);
    assert!(journal.warnings.is_empty(), "{:?}", journal.warnings);
    let objects = saki_undo::objects::Objects::new(env.data.path().join("undo/objects"));
    let outcome = saki_undo::ops::undo(&env.root, &objects, &mut journal, 1, false).unwrap();
    assert!(outcome.overridden.is_empty());
    assert_eq!(env.read("notes.txt").unwrap(), "draft\n");
}
