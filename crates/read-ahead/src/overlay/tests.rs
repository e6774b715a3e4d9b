use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

pub(super) struct Fixture {
    pub(super) _tmp: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) base: PathBuf,
    pub(super) outside: PathBuf,
}

pub(super) fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    let base = tmp.path().join("base");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("src/app.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o751)).unwrap();
    fs::write(outside.join("secret"), "s").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
    std::os::unix::fs::symlink(root.join("src/app.rs"), root.join("app-link.rs")).unwrap();
    Fixture {
        root: root.canonicalize().unwrap(),
        base,
        outside,
        _tmp: tmp,
    }
}

pub(super) fn overlay(f: &Fixture) -> OverlayFs {
    let ws = Arc::new(Workspace::new(&f.root).unwrap());
    OverlayFs::new_in(ws, &f.base).unwrap()
}

#[test]
fn reads_go_to_the_real_file_until_written() {
    let f = fixture();
    let o = overlay(&f);
    assert_eq!(
        o.resolve_read("src/app.rs").unwrap(),
        f.root.join("src/app.rs")
    );
    let w = o.resolve_write("src/app.rs").unwrap();
    assert_eq!(w, o.dir().join("src/app.rs"));
    assert_eq!(fs::read_to_string(&w).unwrap(), "fn main() {}\n", "copied");
    fs::write(&w, "changed").unwrap();
    assert_eq!(o.resolve_read("src/app.rs").unwrap(), w);
    assert_eq!(o.resolve_read("./src/../src/app.rs").unwrap(), w);
    let abs = f.root.join("src/app.rs");
    assert_eq!(o.resolve_read(abs.to_str().unwrap()).unwrap(), w);
    assert_eq!(o.resolve_read("app-link.rs").unwrap(), w, "symlink to it");
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "fn main() {}\n",
        "real file untouched"
    );
    assert_eq!(o.written_files(), [PathBuf::from("src/app.rs")]);
}

#[test]
fn first_write_copies_once_and_keeps_permissions() {
    let f = fixture();
    let o = overlay(&f);
    let w = o.resolve_write("run.sh").unwrap();
    assert_eq!(
        fs::metadata(&w).unwrap().permissions().mode() & 0o777,
        0o751
    );
    fs::write(&w, "edited").unwrap();
    // A second redirect must not copy the original over the edit.
    assert_eq!(o.resolve_write("run.sh").unwrap(), w);
    assert_eq!(fs::read_to_string(&w).unwrap(), "edited");
}

#[test]
fn new_files_live_only_in_the_overlay() {
    let f = fixture();
    let o = overlay(&f);
    let w = o.resolve_write("new/dir/file.txt").unwrap();
    assert_eq!(w, o.dir().join("new/dir/file.txt"));
    assert!(!w.exists(), "nothing to copy");
    assert!(o.written_files().is_empty(), "not written yet");
    fs::write(&w, "hi").unwrap();
    assert_eq!(o.written_files(), [PathBuf::from("new/dir/file.txt")]);
    assert_eq!(o.resolve_read("new/dir/file.txt").unwrap(), w);
    assert!(!f.root.join("new").exists());
    assert_eq!(o.view_path(Path::new("new/dir/file.txt")), w);
    assert_eq!(
        o.view_path(Path::new("src/app.rs")),
        f.root.join("src/app.rs")
    );
}

#[test]
fn escapes_are_errors() {
    let f = fixture();
    let o = overlay(&f);
    let outside = f.outside.join("secret");
    for path in [
        "../outside/secret",
        outside.to_str().unwrap(),
        "escape/secret",
        "escape/new",
    ] {
        assert!(
            matches!(o.resolve_write(path), Err(OverlayError::Scope(_))),
            "{path}"
        );
        assert!(
            matches!(o.resolve_read(path), Err(OverlayError::Scope(_))),
            "{path}"
        );
    }
    assert!(matches!(
        o.resolve_write("."),
        Err(OverlayError::IsDirectory(_))
    ));
    assert!(matches!(
        o.resolve_write("src"),
        Err(OverlayError::IsDirectory(_))
    ));
    assert!(matches!(
        o.resolve_write("src/app.rs/x"),
        Err(OverlayError::NotADirectory(_))
    ));
    assert!(o.written_files().is_empty());
    assert_eq!(fs::read_dir(o.dir()).unwrap().count(), 0, "nothing copied");
}

#[test]
fn overlay_shape_conflicts_are_errors() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("made").unwrap(), "file").unwrap();
    assert!(matches!(
        o.resolve_write("made/below"),
        Err(OverlayError::NotADirectory(_))
    ));
    fs::write(o.resolve_write("d/inner").unwrap(), "x").unwrap();
    assert!(matches!(
        o.resolve_write("d"),
        Err(OverlayError::IsDirectory(_))
    ));
}

#[test]
fn secondary_roots_are_readable_not_writable() {
    let f = fixture();
    let mut ws = Workspace::new(&f.root).unwrap();
    ws.add_root(&f.outside).unwrap();
    let o = OverlayFs::new_in(Arc::new(ws), &f.base).unwrap();
    let secret = f.outside.join("secret");
    let secret_str = secret.to_str().unwrap();
    assert_eq!(
        o.resolve_read(secret_str).unwrap(),
        secret.canonicalize().unwrap()
    );
    assert!(matches!(
        o.resolve_write(secret_str),
        Err(OverlayError::OutsideRoot { .. })
    ));
}

#[test]
fn apply_writes_files_and_keeps_permissions() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "new app").unwrap();
    fs::write(o.resolve_write("run.sh").unwrap(), "#!/bin/sh\necho\n").unwrap();
    fs::write(o.resolve_write("docs/a/b.md").unwrap(), "# b").unwrap();
    o.resolve_write("never-written.txt").unwrap();
    let report = o.apply();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(
        report.applied(),
        [
            Path::new("docs/a/b.md"),
            Path::new("run.sh"),
            Path::new("src/app.rs")
        ]
    );
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "new app"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("docs/a/b.md")).unwrap(),
        "# b"
    );
    assert!(!f.root.join("never-written.txt").exists());
    let mode = fs::metadata(f.root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o751);
    let leftovers: Vec<_> = fs::read_dir(&f.root)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".saki-"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left");
    assert!(matches!(o.resolve_write("x"), Err(OverlayError::Applied)));
    assert_eq!(o.apply(), ApplyReport::default(), "applies once");
}

#[test]
fn apply_writes_nothing_when_any_file_conflicts() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "mine").unwrap();
    fs::write(o.resolve_write("run.sh").unwrap(), "mine").unwrap();
    fs::write(o.resolve_write("created.txt").unwrap(), "mine").unwrap();
    fs::write(o.resolve_write("a-ok.txt").unwrap(), "ok").unwrap();
    fs::write(o.resolve_write("z/new.txt").unwrap(), "ok").unwrap();
    // The person edits, deletes and creates files while the speculation runs, and puts
    // a file where a new file's directory would go.
    fs::write(f.root.join("src/app.rs"), "theirs").unwrap();
    fs::remove_file(f.root.join("run.sh")).unwrap();
    fs::write(f.root.join("created.txt"), "theirs").unwrap();
    fs::write(f.root.join("z"), "a file").unwrap();
    let report = o.apply();
    assert!(!report.is_complete());
    assert!(report.wrote_nothing());
    assert!(report.applied().is_empty(), "all or none");
    let results: Vec<_> = report
        .files
        .iter()
        .map(|f| (f.path.to_str().unwrap(), f.result.clone()))
        .collect();
    assert!(
        matches!(
            results.as_slice(),
            [
                ("a-ok.txt", Err(ApplyError::NotWritten)),
                ("created.txt", Err(ApplyError::Conflict(_))),
                ("run.sh", Err(ApplyError::Conflict(_))),
                ("src/app.rs", Err(ApplyError::Conflict(_))),
                ("z/new.txt", Err(ApplyError::Conflict(_))),
            ]
        ),
        "{results:#?}"
    );
    let described = report.describe();
    assert!(
        described.contains("src/app.rs: not applied: it was changed")
            && described.ends_with("no file was changed"),
        "{described}"
    );
    assert!(!f.root.join("a-ok.txt").exists());
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "theirs"
    );
    assert_eq!(
        fs::read_to_string(f.root.join("created.txt")).unwrap(),
        "theirs"
    );
    assert!(!f.root.join("run.sh").exists());
    // The overlay is intact, and applies once the conflicts are gone.
    assert_eq!(o.written_files().len(), 5);
    fs::write(f.root.join("src/app.rs"), "fn main() {}\n").unwrap();
    fs::remove_file(f.root.join("created.txt")).unwrap();
    fs::write(f.root.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::remove_file(f.root.join("z")).unwrap();
    let report = o.apply();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(fs::read_to_string(f.root.join("z/new.txt")).unwrap(), "ok");
}

#[test]
fn a_touched_but_unchanged_file_is_not_a_conflict() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "mine").unwrap();
    // Same content, new mtime.
    let real = f.root.join("src/app.rs");
    let touched =
        fs::metadata(&real).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
    fs::write(&real, "fn main() {}\n").unwrap();
    fs::File::options()
        .write(true)
        .open(&real)
        .unwrap()
        .set_modified(touched)
        .unwrap();
    assert!(o.apply().is_complete());
    assert_eq!(
        fs::read_to_string(f.root.join("src/app.rs")).unwrap(),
        "mine"
    );
}

#[test]
fn apply_refuses_a_path_that_now_leads_outside() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("gen/out.txt").unwrap(), "x").unwrap();
    std::os::unix::fs::symlink(&f.outside, f.root.join("gen")).unwrap();
    let report = o.apply();
    assert!(matches!(report.files[0].result, Err(ApplyError::Moved(_))));
    assert!(!f.outside.join("out.txt").exists());
}

#[test]
fn abort_and_drop_remove_the_overlay() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "x").unwrap();
    let dir = o.dir().to_path_buf();
    o.abort().unwrap();
    assert!(!dir.exists());

    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "x").unwrap();
    let dir = o.dir().to_path_buf();
    drop(o);
    assert!(!dir.exists());

    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "x").unwrap();
    assert!(o.apply().is_complete());
    let dir = o.dir().to_path_buf();
    drop(o);
    assert!(!dir.exists(), "removed after apply too");
    assert_eq!(fs::read_to_string(f.root.join("src/app.rs")).unwrap(), "x");
}

#[test]
fn keep_preserves_the_overlay_outside_cleanup() {
    let f = fixture();
    let o = overlay(&f);
    fs::write(o.resolve_write("src/app.rs").unwrap(), "x").unwrap();
    let kept = o.keep();
    assert!(kept
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("saki-kept-"));
    assert_eq!(fs::read_to_string(kept.join("src/app.rs")).unwrap(), "x");
    assert!(cleanup_stale(&f.base).is_empty());
    assert!(kept.exists());
}

#[test]
fn parallel_first_writes_copy_once() {
    let f = fixture();
    let o = Arc::new(overlay(&f));
    let paths: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| o.resolve_write("src/app.rs").unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(paths.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(o.written_files().len(), 1);
}

#[test]
fn an_overlay_inside_the_workspace_is_refused() {
    let f = fixture();
    let ws = Arc::new(Workspace::new(&f.root).unwrap());
    let base = f.root.join("tmp");
    assert!(matches!(
        OverlayFs::new_in(ws, &base),
        Err(OverlayError::InsideWorkspace(_))
    ));
    assert_eq!(fs::read_dir(&base).unwrap().count(), 0);
}
