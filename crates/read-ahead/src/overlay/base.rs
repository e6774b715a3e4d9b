//! Where overlays live: a private per-user directory under the system temp dir, one
//! `saki-overlay-<pid>-<n>` per speculation; and removing those a dead process left.

use super::{io_error, OverlayError};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const PREFIX: &str = "saki-overlay-";
const KEPT_PREFIX: &str = "saki-kept-";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// `<temp dir>/saki-<uid>`: per user, so overlays of different people never meet in a
/// shared /tmp.
pub fn default_base() -> PathBuf {
    let user = std::fs::metadata("/proc/self")
        .map(|m| m.uid().to_string())
        .ok()
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "user".to_owned());
    std::env::temp_dir().join(format!("saki-{user}"))
}

/// Creates a fresh overlay directory under `base`, which is created (mode 0700) if
/// missing and must belong to this user: in a shared temp dir, a base someone else
/// prepared could be swapped for a symlink under our feet.
pub(super) fn create_overlay_dir(base: &Path) -> Result<PathBuf, OverlayError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)
        .map_err(io_error(base))?;
    let base_meta = std::fs::symlink_metadata(base).map_err(io_error(base))?;
    if !base_meta.is_dir() {
        return Err(OverlayError::ForeignBase(base.to_path_buf()));
    }
    let pid = std::process::id();
    let dir = loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let candidate = base.join(format!("{PREFIX}{pid}-{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&candidate) {
            Ok(()) => break candidate,
            // Left by an earlier process with the same pid.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(&candidate)(e)),
        }
    };
    let ours = std::fs::metadata(&dir).map_err(io_error(&dir))?.uid();
    if base_meta.uid() != ours {
        let _ = std::fs::remove_dir(&dir);
        return Err(OverlayError::ForeignBase(base.to_path_buf()));
    }
    if base_meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700))
            .map_err(io_error(base))?;
    }
    // Canonical, so overlay paths compare with canonical tool paths (/tmp may be a
    // symlink, as on macOS).
    dir.canonicalize().map_err(io_error(&dir))
}

/// The name a kept overlay is renamed to.
pub(super) fn kept_name(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(PREFIX))
        .unwrap_or("unknown");
    dir.with_file_name(format!("{KEPT_PREFIX}{name}"))
}

/// The scratch directory overlayfs needs beside an overlay (on its file system) when
/// speculated commands run in it: `saki-overlay-<pid>-<n>.work`.
pub(super) fn work_name(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".work");
    dir.with_file_name(name)
}

fn overlay_pid(name: &str) -> Option<u32> {
    let name = name.strip_suffix(".work").unwrap_or(name);
    let (pid, n) = name.strip_prefix(PREFIX)?.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Removes overlays under `base` left by processes that are gone
/// ([`saki_tools::state::pid_alive`]). This process's overlays, kept overlays and
/// anything else are left alone. Returns what was removed.
pub fn cleanup_stale(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut removed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(overlay_pid) else {
            continue;
        };
        if pid == me
            || !entry.file_type().is_ok_and(|t| t.is_dir())
            || saki_tools::state::pid_alive(pid)
        {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(e) => {
                tracing::warn!(dir = %path.display(), error = %e, "cannot remove stale overlay")
            }
        }
    }
    if !removed.is_empty() {
        tracing::debug!(count = removed.len(), "removed stale overlays");
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(overlay_pid("saki-overlay-123-4"), Some(123));
        assert_eq!(overlay_pid("saki-overlay-123-4.work"), Some(123));
        assert_eq!(overlay_pid("saki-overlay-123"), None);
        assert_eq!(overlay_pid("saki-overlay-x-1"), None);
        assert_eq!(overlay_pid("saki-kept-123-4"), None);
        assert_eq!(
            kept_name(Path::new("/b/saki-overlay-5-6")),
            Path::new("/b/saki-kept-5-6")
        );
    }

    #[test]
    fn default_base_is_per_user() {
        let base = default_base();
        assert!(base.starts_with(std::env::temp_dir()));
        let name = base.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("saki-") && name.len() > 5, "{name}");
    }

    #[test]
    fn base_is_private_and_dirs_are_fresh() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("a/base");
        let one = create_overlay_dir(&base).unwrap();
        let two = create_overlay_dir(&base).unwrap();
        assert_ne!(one, two);
        let mode = std::fs::metadata(&base).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let name = one.file_name().unwrap().to_str().unwrap();
        assert_eq!(overlay_pid(name), Some(std::process::id()));
    }

    #[test]
    fn loose_base_permissions_are_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("base");
        std::fs::create_dir(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        create_overlay_dir(&base).unwrap();
        assert_eq!(std::fs::metadata(&base).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_symlinked_base_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(
            create_overlay_dir(&link),
            Err(OverlayError::ForeignBase(_))
        ));
    }

    #[test]
    fn cleanup_removes_dead_pids_only() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let mine = create_overlay_dir(base).unwrap();
        // pid 1 is always alive; a pid above the kernel's maximum never is.
        let alive = base.join("saki-overlay-1-0");
        let dead = base.join("saki-overlay-4999999-0");
        let kept = base.join("saki-kept-4999999-1");
        let other = base.join("notes");
        for d in [&alive, &dead, &kept, &other] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(dead.join("file"), "x").unwrap();
        let stray_file = base.join("saki-overlay-4999998-0");
        std::fs::write(&stray_file, "not a dir").unwrap();
        let removed = cleanup_stale(base);
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists());
        for d in [&mine, &alive, &kept, &other, &stray_file] {
            assert!(d.exists(), "{}", d.display());
        }
        assert!(cleanup_stale(&base.join("missing")).is_empty());
    }
}
