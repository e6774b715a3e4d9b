//! A speculated command's own view of the workspace: a private user, mount and network
//! namespace in which the workspace root is an overlayfs of itself (the lower layer)
//! and the speculation's overlay directory (the upper layer). Every write the command
//! makes lands in the upper layer; the real tree is never written; the network has only
//! a loopback device that is down. The namespaces end with the last process in them, and
//! the mount with them: a killed saki leaves no mount behind.
//!
//! Entered by the restricted half of the helper before Landlock, so Landlock's rules
//! are made on the overlay's paths.

use super::OverlayMount;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use std::path::Path;

/// Enters the namespaces and mounts the overlay over `m.root`; the current directory
/// becomes the overlay's root.
pub(crate) fn enter(m: &OverlayMount) -> Result<(), String> {
    for path in [&m.root, &m.upper, &m.work] {
        if !option_safe(path) {
            return Err(format!(
                "{} cannot be named in overlay mount options (a comma, colon or backslash)",
                path.display()
            ));
        }
    }
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("the kernel refused a private namespace: {e}"))?;
    // Ids map to themselves: files the command creates are the person's.
    let write =
        |file: &str, text: String| std::fs::write(file, text).map_err(|e| format!("{file}: {e}"));
    // Absent on kernels before 3.19, where gid_map needs no such step.
    let _ = std::fs::write("/proc/self/setgroups", "deny");
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    // Nothing mounted here reaches the person's namespace.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    let options = format!(
        "lowerdir={},upperdir={},workdir={}",
        m.root.display(),
        m.upper.display(),
        m.work.display()
    );
    mount(
        Some("overlay"),
        &m.root,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .map_err(|e| format!("the kernel refused the overlay mount: {e}"))?;
    // The old working directory is the lower layer's; the same path now leads into the
    // overlay.
    std::env::set_current_dir(&m.root).map_err(|e| format!("{}: {e}", m.root.display()))
}

/// Whether `path` can be written into overlayfs' comma-separated options as it is.
fn option_safe(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|p| !p.contains([',', ':', '\\']) && path.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_would_break_the_mount_options_are_refused() {
        assert!(option_safe(Path::new("/home/me/project")));
        assert!(!option_safe(Path::new("/home/me/a,upperdir=/etc")));
        assert!(!option_safe(Path::new("/x:y")));
        assert!(!option_safe(Path::new("relative")));
    }
}
