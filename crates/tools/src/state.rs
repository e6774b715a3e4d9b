//! saki's data directory (`$XDG_DATA_HOME/saki`, default `~/.local/share/saki`), and the
//! records a process keeps there so that a later saki can repair what a `kill -9` left
//! half done (the temporary-file registry of [`crate::atomic`], the apply journals of
//! `saki-read-ahead`).
//!
//! A front end calls [`set_data_dir`] once at start. Until it does (libraries, unit
//! tests) no record is kept: writes stay atomic, but nothing can be repaired after a kill.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static DATA_DIR: OnceLock<PathBuf> = OnceLock::new();

/// `$XDG_DATA_HOME/saki`, else `$HOME/.local/share/saki`.
pub fn default_data_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("XDG_DATA_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|s| !s.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })
        .map(|d| d.join("saki"))
}

/// Sets where this process keeps its repair records. The first call wins; later ones
/// are ignored (one process, one data directory).
pub fn set_data_dir(dir: PathBuf) {
    if DATA_DIR.set(dir).is_err() {
        tracing::trace!("data directory already set");
    }
}

/// The data directory set by [`set_data_dir`], if any.
pub fn data_dir() -> Option<&'static Path> {
    DATA_DIR.get().map(PathBuf::as_path)
}

/// Whether a process with this pid runs (as anyone): `kill(pid, 0)` succeeds or is
/// refused for lack of permission. Pids that cannot name one process (0, negative) are
/// not running.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::ESRCH) => false,
        Err(_) => true,
    }
}

/// A test hook, compiled into debug builds only: with `SAKI_TEST_PAUSE_AT=<point>` in the
/// environment, the process stops at `point` for good, so a test can `kill -9` it in the
/// middle of a write. Release builds have no such hook.
pub fn pause_point(point: &str) {
    #[cfg(debug_assertions)]
    if std::env::var("SAKI_TEST_PAUSE_AT").is_ok_and(|p| p == point) {
        tracing::warn!(point, "paused for a test (SAKI_TEST_PAUSE_AT)");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    #[cfg(not(debug_assertions))]
    let _ = point;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            default_data_dir(&env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/saki"))
        );
        assert_eq!(
            default_data_dir(&env(&[("XDG_DATA_HOME", ""), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/share/saki"))
        );
        assert_eq!(default_data_dir(&env(&[])), None);
    }

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        assert!(pid_alive(1), "init runs (kill is refused, not missing)");
        assert!(!pid_alive(4_999_999), "above any kernel's pid_max");
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }
}
