//! The Landlock ruleset for a [`SandboxPolicy`].
//!
//! Landlock only grants: a rule allows some access beneath a directory, and nothing can
//! take a subdirectory back out. "Read everywhere except `~/.ssh`" is therefore built by
//! granting read beneath every sibling of `~/.ssh`, every sibling of `~`, and so on up to
//! `/`, while the directories on the way (`/`, `/home`, `~`) get only the right to be
//! listed, which Landlock applies beneath them too: a sandboxed `ls ~/.ssh` shows the
//! names, but no file in it can be opened. Symlinks met on the way are not followed:
//! what they point to is granted under its own path, or not at all.

use super::{SandboxPolicy, UnaskedReach};
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use std::path::{Path, PathBuf};

/// The Landlock ABI this ruleset was written and tested for: filesystem rights up to
/// device ioctls, TCP rules, and signal / abstract socket scoping.
const ABI_USED: ABI = ABI::V6;

/// Devices a sandboxed command may open for writing.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Deepest directory level looked through to carve a denied path out.
const MAX_DEPTH: usize = 24;

type Rights = BitFlags<AccessFs>;

/// Restricts the calling process; `Ok((enforced, detail))`.
pub(super) fn restrict_self(policy: &SandboxPolicy) -> Result<(bool, String), String> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(|e| e.to_string())?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_USED))
            .map_err(|e| e.to_string())?;
    }
    let ruleset = ruleset
        .scope(Scope::from_all(ABI_USED))
        .map_err(|e| e.to_string())?;
    let mut created = ruleset.create().map_err(|e| e.to_string())?;

    let deny: Vec<PathBuf> = policy
        .deny_read
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let rules = match &policy.unasked {
        Some(reach) => unasked_rules(policy, reach, &deny),
        None => approved_rules(policy, &deny)?,
    };
    for (path, rights) in rules {
        let rights = if path.is_dir() {
            rights
        } else {
            rights & AccessFs::from_file(ABI_USED)
        };
        // A path that vanished or cannot be opened is simply not granted.
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        created = created
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let status = created.restrict_self().map_err(|e| e.to_string())?;
    Ok(describe(&status.ruleset, &status.landlock, policy.network))
}

/// The grants of an approved command: read everywhere but the denied paths, write the
/// writable roots and a few devices.
fn approved_rules(
    policy: &SandboxPolicy,
    deny: &[PathBuf],
) -> Result<Vec<(PathBuf, Rights)>, String> {
    let all = AccessFs::from_all(ABI_USED);
    let mut rules = Vec::new();
    grant_except(
        Path::new("/"),
        AccessFs::from_read(ABI_USED),
        deny,
        &mut rules,
        0,
    );
    for root in &policy.writable {
        let Ok(root) = root.canonicalize() else {
            return Err(format!(
                "the writable directory {} is missing",
                root.display()
            ));
        };
        // A denied path only carves out of a root that holds it; a root inside a denied
        // directory is the person's own choice of workspace.
        let inside: Vec<PathBuf> = deny
            .iter()
            .filter(|d| d.starts_with(&root) && **d != root)
            .cloned()
            .collect();
        grant_except(&root, all, &inside, &mut rules, 0);
    }
    for device in WRITABLE_DEVICES {
        rules.push((PathBuf::from(device), all));
    }
    Ok(rules)
}

/// Harmless files of `/proc` an unasked command may read (the rest of `/proc`, other
/// processes' command lines and environments among it, it may not).
const PROC_FILES: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/version",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/stat",
    "/sys/devices/system/cpu",
];

/// Devices an unasked command may read.
const READABLE_DEVICES: &[&str] = &["/dev/urandom", "/dev/random"];

/// The grants of a command that runs unasked: read and execute the system and toolchain
/// directories, read (not execute) the workspace, write only its temp dir and
/// `/dev/null`.
fn unasked_rules(
    policy: &SandboxPolicy,
    reach: &UnaskedReach,
    deny: &[PathBuf],
) -> Vec<(PathBuf, Rights)> {
    let read_exec = AccessFs::from_read(ABI_USED);
    let read = read_exec & !AccessFs::Execute;
    let write = AccessFs::from_all(ABI_USED) & !AccessFs::Execute;
    let mut rules = Vec::new();
    for dir in &reach.exec {
        if let Ok(dir) = dir.canonicalize() {
            grant_except(&dir, read_exec, deny, &mut rules, 0);
        }
    }
    for dir in &reach.read {
        if let Ok(dir) = dir.canonicalize() {
            grant_except(&dir, read, deny, &mut rules, 0);
        }
    }
    for dir in &policy.writable {
        if let Ok(dir) = dir.canonicalize() {
            rules.push((dir, write));
        }
    }
    for device in WRITABLE_DEVICES {
        rules.push((
            PathBuf::from(device),
            AccessFs::ReadFile | AccessFs::WriteFile,
        ));
    }
    for path in READABLE_DEVICES.iter().chain(PROC_FILES) {
        rules.push((PathBuf::from(path), read));
    }
    rules
}

fn describe(ruleset: &RulesetStatus, landlock: &LandlockStatus, network: bool) -> (bool, String) {
    let abi = match landlock {
        LandlockStatus::Available { effective_abi, .. } => Some(*effective_abi),
        LandlockStatus::NotEnabled => {
            return (false, "Landlock is not enabled in this kernel".into())
        }
        LandlockStatus::NotImplemented => return (false, "the kernel has no Landlock".into()),
    };
    match (ruleset, abi) {
        (RulesetStatus::NotEnforced, _) | (_, None) => (
            false,
            "the kernel did not enforce the Landlock rules".into(),
        ),
        (RulesetStatus::FullyEnforced, Some(abi)) => (true, format!("landlock ABI {}", abi as i32)),
        (RulesetStatus::PartiallyEnforced, Some(abi)) => {
            let mut detail = format!("landlock ABI {}, partly", abi as i32);
            if !network && abi < ABI::V4 {
                detail.push_str("; network not restricted");
            }
            (true, detail)
        }
    }
}

/// Grants `rights` beneath `path`, except beneath the `deny` paths: a directory that
/// holds one is granted only listing, and its entries are granted one by one.
fn grant_except(
    path: &Path,
    rights: Rights,
    deny: &[PathBuf],
    out: &mut Vec<(PathBuf, Rights)>,
    depth: usize,
) {
    if deny.iter().any(|d| path.starts_with(d)) {
        return;
    }
    let holds_denied = deny.iter().any(|d| d.starts_with(path));
    if !holds_denied {
        out.push((path.to_path_buf(), rights));
        return;
    }
    if depth > MAX_DEPTH {
        return;
    }
    out.push((path.to_path_buf(), rights & AccessFs::ReadDir));
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if !is_link {
            grant_except(&entry.path(), rights, deny, out, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_path_is_carved_out_of_its_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        for d in [".ssh", ".config/saki", ".config/other", "code"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".netrc"), "x").unwrap();
        std::fs::write(home.join("notes.txt"), "x").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        let read = AccessFs::from_read(ABI_USED);
        let deny = [
            home.join(".ssh"),
            home.join(".config/saki"),
            home.join(".netrc"),
        ];
        let mut rules = Vec::new();
        grant_except(&home, read, &deny, &mut rules, 0);
        let granted = |p: &Path| rules.iter().find(|(r, _)| r == p).map(|(_, a)| *a);
        assert_eq!(granted(&home), Some(read & AccessFs::ReadDir));
        assert_eq!(
            granted(&home.join(".config")),
            Some(read & AccessFs::ReadDir)
        );
        assert_eq!(granted(&home.join("code")), Some(read));
        assert_eq!(granted(&home.join("notes.txt")), Some(read));
        assert_eq!(granted(&home.join(".config/other")), Some(read));
        for missing in [".ssh", ".config/saki", ".netrc", "keys"] {
            assert_eq!(granted(&home.join(missing)), None, "{missing}");
        }
    }
}
