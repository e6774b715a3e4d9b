//! The OS sandbox for shell commands.
//!
//! saki itself never restricts its own process. Each shell command runs through a small
//! helper, `saki sandbox-exec --policy JSON -- bash -c CMD` ([`helper_main`]), which
//!
//! 1. becomes a child subreaper, so every process the command starts, also one that
//!    leaves its session with `setsid`, stays its descendant;
//! 2. restricts itself with Landlock (Linux): writes only inside the workspace roots, a
//!    private temp dir and a few devices; reads everywhere except credential locations;
//!    no TCP unless the policy allows network; no signals to processes outside;
//! 3. runs the command, and when it ends (or the helper is told to stop, or saki dies)
//!    kills every process that is left.
//!
//! The workspace forbids `unsafe`, and Landlock applies to the calling process and its
//! future children, so restricting in a re-executed helper is how saki applies a sandbox
//! to a child without touching its own process. Where the kernel has no Landlock the
//! helper still reaps and kills, and [`probe`] reports that no sandbox is in force.

mod helper;
#[cfg(target_os = "linux")]
mod landlock_rules;
pub mod shell_env;

pub use helper::{
    helper_main, kill_descendants, HelperError, HelperExit, HELPER_FAILED, HELPER_SUBCOMMAND,
};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `--sandbox MODE` / `sandbox = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes inside the workspace roots and the private temp dir; reads everywhere but
    /// credential locations.
    WorkspaceWrite,
    /// Writes only to the private temp dir.
    ReadOnly,
    /// No restriction (the helper still kills leftover processes).
    Off,
}

impl SandboxMode {
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly,
        SandboxMode::Off,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!("unknown sandbox mode `{s}` (expected workspace-write, read-only or off)")
            })
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the helper enforces for one command. Paths are absolute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Directories (and their contents) the command may write: the workspace roots (in
    /// `workspace-write`) and the private temp dir.
    pub writable: Vec<PathBuf>,
    /// Files and directories the command may not read (nor write), even inside a
    /// writable root.
    pub deny_read: Vec<PathBuf>,
    /// Allow TCP connections and listening.
    pub network: bool,
}

impl SandboxPolicy {
    /// The policy for a session: `roots` are the workspace roots, `tmp` the private temp
    /// dir, `home` the person's home directory (for the default credential locations),
    /// `extra_deny` saki's own config and data dirs and `sandbox.deny_read`.
    pub fn new(
        mode: SandboxMode,
        roots: &[PathBuf],
        tmp: &Path,
        home: Option<&Path>,
        extra_deny: &[PathBuf],
        network: bool,
    ) -> Self {
        let mut writable = vec![tmp.to_path_buf()];
        if mode == SandboxMode::WorkspaceWrite {
            writable.extend(roots.iter().cloned());
        }
        let mut deny_read: Vec<PathBuf> = home
            .map(|home| {
                CREDENTIAL_LOCATIONS
                    .iter()
                    .map(|rel| home.join(rel))
                    .collect()
            })
            .unwrap_or_default();
        deny_read.extend(extra_deny.iter().cloned());
        Self {
            mode,
            writable,
            deny_read,
            network,
        }
    }
}

/// Under the home directory: where keys, tokens and cloud credentials live.
pub const CREDENTIAL_LOCATIONS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".docker",
    ".kube",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".azure",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
];

/// Which sandbox is in force, as the front ends report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    pub mode: SandboxMode,
    /// Whether the kernel enforces the restrictions (always false for `off`).
    pub enforced: bool,
    pub network: bool,
    /// How, or why not: `landlock ABI 7`, `the kernel has no Landlock`, ...
    pub detail: String,
}

impl SandboxStatus {
    /// A short line for a status bar: `sandbox: workspace-write`, `sandbox: off`,
    /// `sandbox: none (the kernel has no Landlock)`.
    pub fn label(&self) -> String {
        match (self.mode, self.enforced) {
            (SandboxMode::Off, _) => "sandbox: off".to_owned(),
            (mode, true) if self.network => format!("sandbox: {mode}, network"),
            (mode, true) => format!("sandbox: {mode}"),
            (_, false) => format!("sandbox: none ({})", self.detail),
        }
    }
}

/// Asks the helper whether Landlock can be enforced here (it restricts a throwaway
/// process, never this one). `launcher` is the saki binary. `Err` when the helper itself
/// does not work: then commands must not be sent through it.
pub fn probe(launcher: &Path, policy: &SandboxPolicy) -> Result<SandboxStatus, String> {
    let json = serde_json::to_string(policy).map_err(|e| e.to_string())?;
    let output = std::process::Command::new(launcher)
        .args([HELPER_SUBCOMMAND, "--probe", "--policy", &json])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("the sandbox helper could not start: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    match serde_json::from_str::<SandboxStatus>(text.trim()) {
        Ok(status) if output.status.success() => Ok(status),
        _ => Err(format!(
            "the sandbox helper failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// Restricts the calling process to `policy` (the helper's step 2).
pub(crate) fn enforce(policy: &SandboxPolicy) -> Result<SandboxStatus, String> {
    let mut status = SandboxStatus {
        mode: policy.mode,
        enforced: false,
        network: policy.network,
        detail: String::new(),
    };
    if policy.mode == SandboxMode::Off {
        status.detail = "turned off".into();
        return Ok(status);
    }
    #[cfg(target_os = "linux")]
    {
        let (enforced, detail) = landlock_rules::restrict_self(policy)?;
        status.enforced = enforced;
        status.detail = detail;
    }
    #[cfg(not(target_os = "linux"))]
    {
        status.detail = "no sandbox on this operating system".into();
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_and_bad_names_are_named() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
        }
        assert!("strict"
            .parse::<SandboxMode>()
            .unwrap_err()
            .contains("`strict`"));
    }

    #[test]
    fn read_only_writes_only_the_temp_dir() {
        let roots = [PathBuf::from("/w")];
        let ro = SandboxPolicy::new(
            SandboxMode::ReadOnly,
            &roots,
            Path::new("/t"),
            Some(Path::new("/h")),
            &[PathBuf::from("/h/.config/saki")],
            false,
        );
        assert_eq!(ro.writable, [PathBuf::from("/t")]);
        assert!(ro.deny_read.contains(&PathBuf::from("/h/.ssh")));
        assert!(ro.deny_read.contains(&PathBuf::from("/h/.config/saki")));
        let ww = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            &roots,
            Path::new("/t"),
            None,
            &[],
            true,
        );
        assert_eq!(ww.writable, [PathBuf::from("/t"), PathBuf::from("/w")]);
        assert!(ww.deny_read.is_empty());
    }

    #[test]
    fn labels_never_claim_a_sandbox_that_is_not_there() {
        let mut s = SandboxStatus {
            mode: SandboxMode::WorkspaceWrite,
            enforced: false,
            network: false,
            detail: "the kernel has no Landlock".into(),
        };
        assert_eq!(s.label(), "sandbox: none (the kernel has no Landlock)");
        s.enforced = true;
        assert_eq!(s.label(), "sandbox: workspace-write");
    }
}
