//! The scan's accelerator: inotify watches on the directories the last walk covered, so
//! a batch's changes are the paths the kernel reported, looked at one by one, instead
//! of a stat of every file. A reported directory stands for what lies under it, and a
//! new path is looked up with the walk's own ignore rules (`Shadow::refresh_paths`).
//! Whenever the events cannot be trusted to say everything — the queue overflowed, a
//! `.gitignore` changed, a watch could not be added, too many new paths — the answer is
//! "walk": the full stat walk decides, and the watches are laid again.

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// What changed since the last drain.
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    /// These paths (workspace-relative) may have changed; nothing else did.
    Paths(BTreeSet<String>),
    /// The events do not tell everything: walk the workspace.
    Walk,
}

pub struct Watcher {
    inotify: Inotify,
    dirs: HashMap<WatchDescriptor, String>,
}

fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_DONT_FOLLOW
        | AddWatchFlags::IN_ONLYDIR
}

/// Whether inotify sees every change under `root`: not on network and FUSE file
/// systems, where another machine (or a daemon) can change files without an event.
// `fs_type_t` is an `i64` here and narrower on other targets: the conversion is kept.
#[allow(clippy::useless_conversion)]
pub fn reliable_here(root: &Path) -> bool {
    use nix::sys::statfs::{statfs, FsType, FUSE_SUPER_MAGIC, NFS_SUPER_MAGIC, SMB_SUPER_MAGIC};
    // CIFS, SMB2 and 9P have no constant in nix.
    const OTHERS: [i64; 3] = [0xFF53_4D42, 0xFE53_4D42, 0x0102_1997];
    match statfs(root) {
        Ok(fs) => {
            let kind: FsType = fs.filesystem_type();
            let remote = [FUSE_SUPER_MAGIC, NFS_SUPER_MAGIC, SMB_SUPER_MAGIC].contains(&kind)
                || OTHERS
                    .iter()
                    .any(|m| i64::try_from(kind.0).is_ok_and(|k| k == *m));
            !remote
        }
        Err(_) => false,
    }
}

impl Watcher {
    /// `None` where inotify is not available (or this user's instances are used up):
    /// every refresh then walks.
    pub fn new() -> Option<Watcher> {
        match Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC) {
            Ok(inotify) => Some(Watcher {
                inotify,
                dirs: HashMap::new(),
            }),
            Err(e) => {
                tracing::debug!(error = %e, "no inotify: every shell call walks the workspace");
                None
            }
        }
    }

    /// Watches exactly `dirs` (relative, `""` the root) after a walk. `false` when one
    /// could not be watched (the limit of watches, say): the caller walks every time.
    pub fn watch(&mut self, root: &Path, dirs: &[&str]) -> bool {
        let mut fresh = HashMap::with_capacity(dirs.len());
        for dir in dirs {
            let path = if dir.is_empty() {
                root.to_path_buf()
            } else {
                root.join(dir)
            };
            match self.inotify.add_watch(&path, mask()) {
                Ok(wd) => {
                    fresh.insert(wd, (*dir).to_owned());
                }
                Err(e) => {
                    tracing::debug!(dir = %path.display(), error = %e, "cannot watch a directory; walking instead");
                    return false;
                }
            }
        }
        // Directories no longer walked (ignored now) stop reporting.
        for wd in self.dirs.keys() {
            if !fresh.contains_key(wd) {
                let _ = self.inotify.rm_watch(*wd);
            }
        }
        // Events that came in while the walk ran are kept: what they name is looked at
        // again (a path the walk already read costs one stat).
        self.dirs = fresh;
        true
    }

    /// Watches directories that appeared (created, or moved in) since the last walk; a
    /// directory moved within the workspace keeps its watch, under its new path.
    pub fn add(&mut self, root: &Path, dirs: &[String]) -> bool {
        for dir in dirs {
            match self.inotify.add_watch(&root.join(dir), mask()) {
                Ok(wd) => {
                    self.dirs.insert(wd, dir.clone());
                }
                Err(e) => {
                    tracing::debug!(dir, error = %e, "cannot watch a new directory; walking instead");
                    return false;
                }
            }
        }
        true
    }

    /// The paths reported since the last drain.
    pub fn drain(&mut self) -> Drained {
        let mut paths = BTreeSet::new();
        let mut walk = false;
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) => events,
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "reading inotify events failed; walking");
                    return Drained::Walk;
                }
            };
            if events.is_empty() {
                break;
            }
            for event in events {
                let m = event.mask;
                if m.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    walk = true;
                    continue;
                }
                if m.contains(AddWatchFlags::IN_IGNORED) {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                let Some(dir) = self.dirs.get(&event.wd) else {
                    continue;
                };
                // A watched directory moved: its parent reports both of its paths.
                if m.intersects(AddWatchFlags::IN_MOVE_SELF) {
                    continue;
                }
                // No name: the directory itself (its parent reports its path). A name
                // that is not UTF-8 is never recorded.
                let Some(name) = event.name.as_ref().and_then(|n| n.to_str()) else {
                    continue;
                };
                // Other ignore rules: only the walk can tell what they cover now.
                if name == ".gitignore" {
                    walk = true;
                }
                let path = if dir.is_empty() {
                    name.to_owned()
                } else {
                    format!("{dir}/{name}")
                };
                if super::state::valid_rel(&path) {
                    paths.insert(path);
                }
            }
        }
        if walk {
            Drained::Walk
        } else {
            Drained::Paths(paths)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn edits_are_reported_and_new_directories_ask_for_a_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        let Some(mut watcher) = Watcher::new() else {
            return;
        };
        assert!(watcher.watch(root, &["", "src"]));
        assert_eq!(watcher.drain(), Drained::Paths(BTreeSet::new()));
        std::fs::write(root.join("src/a.rs"), "b").unwrap();
        std::fs::rename(root.join("src/a.rs"), root.join("b.rs")).unwrap();
        let expected: BTreeSet<String> = ["b.rs", "src/a.rs"].map(String::from).into();
        assert_eq!(watcher.drain(), Drained::Paths(expected));
        std::fs::create_dir(root.join("new")).unwrap();
        let expected: BTreeSet<String> = ["new"].map(String::from).into();
        assert_eq!(watcher.drain(), Drained::Paths(expected));
        std::fs::write(root.join(".gitignore"), "x").unwrap();
        assert_eq!(watcher.drain(), Drained::Walk);
    }
}
