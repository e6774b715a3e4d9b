//! All-or-none apply: a write failing midway restores what was written, and a journal a
//! killed process left is rolled back.

use super::apply::{apply_all_with, plan_one, Changes};
use super::tests::{fixture, overlay, Fixture};
use super::*;
use saki_tools::txn::{apply_one, commit_one, recover, Journal, Planned};
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// An overlay that modifies `run.sh` (0751) and `src/app.rs`, and creates
/// `docs/a/new.md` (new directories too).
fn three_writes(f: &Fixture) -> OverlayFs {
    let o = overlay(f);
    fs::write(o.resolve_write("docs/a/new.md").unwrap(), "# new").unwrap();
    fs::write(o.resolve_write("run.sh").unwrap(), "#!/bin/sh\necho new\n").unwrap();
    fs::write(o.resolve_write("src/app.rs").unwrap(), "new app").unwrap();
    o
}

fn journals(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

fn assert_originals(f: &Fixture) {
    assert!(
        !f.root.join("docs").exists(),
        "new file and its dirs removed"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("run.sh")).unwrap(),
        "#!/bin/sh\n"
    );
    let mode = fs::metadata(f.root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o751);
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[test]
fn a_write_failing_midway_restores_what_was_written() {
    let f = fixture();
    let o = three_writes(&f);
    let journal_dir = f.base.join("journal");
    let ws = o.workspace().clone();
    let fail_last = |p: &Planned, staged| {
        if p.key == Path::new("src/app.rs") {
            Err(ApplyError::Io("disk full".into()))
        } else {
            commit_one(p, staged)
        }
    };
    let report = apply_all_with(
        &ws,
        o.root(),
        o.dir(),
        &Changes::written(&o.lock()),
        Some(&journal_dir),
        &fail_last,
    );
    let results: Vec<_> = report.files.iter().map(|f| f.result.clone()).collect();
    assert_eq!(
        results,
        [
            Err(ApplyError::Restored),
            Err(ApplyError::Restored),
            Err(ApplyError::Io("disk full".into())),
        ]
    );
    assert!(report.wrote_nothing());
    assert_originals(&f);
    assert!(journals(&journal_dir).is_empty(), "journal removed");
    assert!(temp_files(&f.root).is_empty() && temp_files(&f.root.join("src")).is_empty());
}

/// saki's temporary files in `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    journals(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".saki-"))
        })
        .collect()
}

#[test]
fn every_file_is_staged_before_the_first_rename() {
    let f = fixture();
    let o = three_writes(&f);
    let journal_dir = f.base.join("journal");
    let ws = o.workspace().clone();
    let renamed = std::cell::Cell::new(0);
    let check_then_commit = |p: &Planned, staged| {
        if renamed.get() == 0 {
            // Before any rename: the journal is on disk, every file waits in a
            // temporary file beside its target, and every target is as it was.
            assert_eq!(journals(&journal_dir).len(), 1);
            for dir in ["docs/a", "", "src"] {
                assert_eq!(temp_files(&f.root.join(dir)).len(), 1, "{dir}");
            }
            assert_originals_but_new_dirs(&f);
        }
        renamed.set(renamed.get() + 1);
        commit_one(p, staged)
    };
    let report = apply_all_with(
        &ws,
        o.root(),
        o.dir(),
        &Changes::written(&o.lock()),
        Some(&journal_dir),
        &check_then_commit,
    );
    assert!(report.is_complete());
    assert_eq!(renamed.get(), 3);
    for dir in ["docs/a", "", "src"] {
        assert!(temp_files(&f.root.join(dir)).is_empty(), "{dir}");
    }
    assert!(journals(&journal_dir).is_empty());
}

/// The originals, where the new file's directories may already exist.
fn assert_originals_but_new_dirs(f: &Fixture) {
    assert!(!f.root.join("docs/a/new.md").exists());
    assert_eq!(
        fs::read_to_string(f.root.join("run.sh")).unwrap(),
        "#!/bin/sh\n"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[test]
fn a_complete_apply_leaves_no_journal() {
    let f = fixture();
    let o = three_writes(&f);
    let journal_dir = f.base.join("journal");
    assert!(o.apply_with_journal(Some(&journal_dir)).is_complete());
    assert!(journals(&journal_dir).is_empty());
    let mode = fs::metadata(&journal_dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(
        fs::read_to_string(f.root.join("docs/a/new.md")).unwrap(),
        "# new"
    );
}

/// What a process killed after writing the first `written` files leaves: the files,
/// and its journal under a pid that no longer runs.
fn killed_after(f: &Fixture, o: &OverlayFs, written: usize) -> PathBuf {
    let journal_dir = f.base.join("journal");
    let ws = o.workspace().clone();
    let planned: Vec<Planned> = o
        .lock()
        .iter()
        .map(|(key, original)| {
            plan_one(&ws, o.root(), key, original, &o.dir().join(key))
                .map_err(|(_, e)| e)
                .unwrap()
        })
        .collect();
    let journal = Journal::begin(Some(&journal_dir), o.root(), &planned).unwrap();
    for p in &planned[..written] {
        apply_one(p).unwrap();
    }
    drop(journal);
    let [path] = journals(&journal_dir).try_into().unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    fs::rename(&path, journal_dir.join("apply-4999999-0.journal")).unwrap();
    journal_dir
}

#[test]
fn a_killed_apply_is_rolled_back_at_start() {
    let f = fixture();
    let o = three_writes(&f);
    let journal_dir = killed_after(&f, &o, 2);
    assert_eq!(
        fs::read_to_string(f.root.join("run.sh")).unwrap(),
        "#!/bin/sh\necho new\n",
        "half applied"
    );
    let rolled = recover(&journal_dir);
    assert_eq!(rolled.len(), 1);
    let r = &rolled[0];
    assert_eq!(r.root, f.root);
    assert_eq!(r.restored, [PathBuf::from("run.sh")]);
    assert_eq!(r.removed, [PathBuf::from("docs/a/new.md")]);
    assert!(r.left.is_empty(), "{r:?}");
    assert!(r.changed_anything());
    let message = r.to_string();
    assert!(
        message.contains("restored: run.sh") && message.contains("docs/a/new.md"),
        "{message}"
    );
    assert_originals(&f);
    assert!(journals(&journal_dir).is_empty(), "journal removed");
    assert!(recover(&journal_dir).is_empty());
}

#[test]
fn a_rollback_leaves_files_changed_since_alone() {
    let f = fixture();
    let o = three_writes(&f);
    let journal_dir = killed_after(&f, &o, 3);
    // After the kill, the person edits one of the written files.
    fs::write(f.root.join("src/app.rs"), "the person's edit").unwrap();
    let rolled = recover(&journal_dir);
    let r = &rolled[0];
    assert_eq!(r.restored, [PathBuf::from("run.sh")]);
    assert_eq!(
        r.left,
        [(
            PathBuf::from("src/app.rs"),
            "it was changed since".to_owned()
        )]
    );
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "the person's edit"
    );
    assert!(r.to_string().contains("left as found: src/app.rs"));
}

#[test]
fn journals_of_running_processes_are_left_alone_and_bad_ones_set_aside() {
    let f = fixture();
    let dir = f.base.join("journal");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("apply-1-0.journal"), "pid 1 runs").unwrap();
    fs::write(dir.join("apply-4999999-1.journal"), "not a journal").unwrap();
    let rolled = recover(&dir);
    assert_eq!(rolled.len(), 1);
    let aside = rolled[0].unreadable.clone().unwrap();
    assert!(aside.exists());
    assert!(rolled[0].to_string().contains("cannot be read"));
    assert!(dir.join("apply-1-0.journal").exists());
    assert_eq!(recover(&dir).len(), 0, "set aside once");
}
