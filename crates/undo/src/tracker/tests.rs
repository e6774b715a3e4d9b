use super::*;

const KB: u64 = 1024;

fn limits(max_bytes: u64) -> Option<UndoLimits> {
    Some(UndoLimits {
        max_bytes,
        max_file_bytes: 1 << 20,
    })
}

/// 4 KiB that differ for each `n`.
fn version(n: u8) -> String {
    String::from(char::from(b'a' + n)).repeat(4 * KB as usize)
}

/// One turn in which a file tool rewrites `a.txt` with `content`.
fn turn(tracker: &mut Tracker, content: &str) -> TurnReport {
    tracker.begin("rewrite a.txt");
    tracker.before_tool("b1", "a.txt");
    std::fs::write(tracker.root().join("a.txt"), content).unwrap();
    tracker.after_tool("a.txt");
    tracker.end().unwrap()
}

fn dropped(report: &TurnReport) -> bool {
    report
        .notes
        .iter()
        .any(|n| n.contains("dropped the oldest checkpoints"))
}

#[test]
fn a_pass_that_cannot_get_under_the_bound_waits_for_the_store_to_grow() {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    std::fs::write(workspace.root().join("a.txt"), version(0)).unwrap();
    let mut tracker = Tracker::new(workspace, super::super::store_dir(data.path()), limits(KB));
    tracker.set_session(Some("s"), 0);

    // The checkpoint just sealed (v0 before, v1 after: 8 KiB) is over 1 KiB on its own.
    let report = turn(&mut tracker, &version(1));
    assert_eq!(tracker.gc_passes, 1);
    assert!(!dropped(&report), "{report:?}");
    assert_eq!(
        tracker.gc_stuck,
        Some(gc::Stuck {
            total: 8 * KB,
            max: KB
        })
    );

    // Back to v0: both contents are stored already, the store did not grow: no pass
    // (the last one could drop nothing that is not still there).
    let report = turn(&mut tracker, &version(0));
    assert_eq!(tracker.gc_passes, 1, "no pass without growth");
    assert!(!dropped(&report), "{report:?}");
    assert_eq!(tracker.store_size, Some(8 * KB));

    // A new content grows the store by half: a pass, which drops the two older
    // checkpoints and deletes v1, which only they held.
    let report = turn(&mut tracker, &version(2));
    assert_eq!(tracker.gc_passes, 2, "the store grew: a pass again");
    assert!(dropped(&report), "{report:?}");
    assert_eq!(tracker.store_size, Some(8 * KB));
    assert_eq!(gc::total(&tracker.objects), 8 * KB);

    // No growth again: no pass.
    turn(&mut tracker, &version(0));
    assert_eq!(tracker.gc_passes, 2);

    // A new bound: a pass even without growth, then none again under that bound.
    tracker.set_limits(limits(2 * KB));
    let report = turn(&mut tracker, &version(2));
    assert_eq!(tracker.gc_passes, 3, "the bound changed: a pass again");
    assert!(dropped(&report), "{report:?}");
    turn(&mut tracker, &version(0));
    assert_eq!(tracker.gc_passes, 3);
}

#[test]
fn a_stuck_store_is_looked_at_again_after_a_tenth_more_at_most_32_mib() {
    let mib = 1 << 20;
    let stuck = gc::Stuck {
        total: 100 * mib,
        max: 50 * mib,
    };
    assert!(!stuck.retry(100 * mib, 50 * mib));
    assert!(!stuck.retry(110 * mib - 1, 50 * mib));
    assert!(stuck.retry(110 * mib, 50 * mib));
    assert!(stuck.retry(100 * mib, 60 * mib), "a new bound");
    let large = gc::Stuck {
        total: 10_000 * mib,
        max: 512 * mib,
    };
    assert!(!large.retry(10_032 * mib - 1, 512 * mib));
    assert!(large.retry(10_032 * mib, 512 * mib));
}
