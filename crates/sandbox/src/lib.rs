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
#[cfg(target_os = "linux")]
mod namespace;
#[cfg(target_os = "linux")]
mod seccomp;
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
    /// Allow TCP and UDP connections and listening.
    pub network: bool,
    /// Which pathname UNIX sockets the command may connect to (`sandbox.unix_sockets`).
    #[serde(default)]
    pub unix_sockets: UnixSockets,
    /// Set for a command that runs without asking anyone: it reads only what this names
    /// and executes only from [`UnaskedReach::exec`], whatever the rest of the policy says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unasked: Option<UnaskedReach>,
    /// Set for a speculated command: it runs in private namespaces where the workspace
    /// root is an overlay whose writes land in the speculation's directory, with no
    /// network ([`SandboxPolicy::for_speculation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<OverlayMount>,
}

/// The overlay a speculated command sees the workspace through: `root` over itself as
/// the lower layer, `upper` where its writes land, `work` overlayfs' scratch directory
/// (on `upper`'s file system, empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayMount {
    pub root: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// `sandbox.unix_sockets`: `false` (the default: no UNIX socket at all), `true` (any), or
/// the socket paths a command may connect to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UnixSockets {
    All(bool),
    Paths(Vec<PathBuf>),
}

impl Default for UnixSockets {
    fn default() -> Self {
        UnixSockets::All(false)
    }
}

/// What a command that runs unasked may reach besides its private temp dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnaskedReach {
    /// Read, not execute: the workspace roots.
    pub read: Vec<PathBuf>,
    /// Read and execute: the system directories and the toolchains on `PATH`.
    pub exec: Vec<PathBuf>,
}

/// Directories programs need to run: their binaries, libraries and configuration.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Read-only for an unasked command: configuration, not programs.
pub const SYSTEM_CONFIG_DIRS: &[&str] = &["/etc"];

/// System files that hold secrets (readable when saki runs as root): denied to every
/// sandboxed command.
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
];

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
        deny_read.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
        deny_read.extend(extra_deny.iter().cloned());
        Self {
            mode,
            writable,
            deny_read,
            network,
            unix_sockets: UnixSockets::default(),
            unasked: None,
            overlay: None,
        }
    }

    /// The policy of a command a speculation runs ahead of the person (one not proven
    /// read-only, in `auto-edit` or `yolo`): the unasked policy's reads, no network and
    /// no socket at all, and the workspace `root` an overlay in a private namespace whose
    /// writes land in `mount.upper`. Unlike an unasked command it may run what the
    /// workspace holds (a test binary it built): nothing it runs can write outside the
    /// overlay and its temp dir, reach the network, or read the home directory.
    /// `None` when the session's sandbox is off.
    pub fn for_speculation(
        &self,
        roots: &[PathBuf],
        tmp: &Path,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        home: Option<&Path>,
        mount: OverlayMount,
    ) -> Option<Self> {
        let mut policy = self.for_unasked(roots, tmp, env, home)?;
        policy.writable.push(mount.root.clone());
        if let Some(reach) = policy.unasked.as_mut() {
            reach.exec.push(mount.root.clone());
        }
        policy.overlay = Some(mount);
        Some(policy)
    }

    /// The policy for a command that runs without asking (proven read-only and in scope
    /// by the classifier, in `plan`, `default` or `auto-edit`): it reads the workspace
    /// `roots`, the system directories and the toolchains on the commands' `PATH` (`env`
    /// is the commands' environment); executes only
    /// from the latter two; writes only `tmp` (its own temp dir) and `/dev/null`; has no
    /// network and no UNIX sockets. What the person allowed for approved commands
    /// (network, sockets, writable roots) does not carry over. `None` when the session's
    /// sandbox is off.
    pub fn for_unasked(
        &self,
        roots: &[PathBuf],
        tmp: &Path,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        home: Option<&Path>,
    ) -> Option<Self> {
        if self.mode == SandboxMode::Off {
            return None;
        }
        let mut exec: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
        for dir in toolchain_dirs(env, home, roots) {
            if !exec.iter().any(|e| dir.starts_with(e)) {
                exec.push(dir);
            }
        }
        let mut read = roots.to_vec();
        read.extend(SYSTEM_CONFIG_DIRS.iter().map(PathBuf::from));
        Some(Self {
            mode: SandboxMode::ReadOnly,
            writable: vec![tmp.to_path_buf()],
            deny_read: self.deny_read.clone(),
            network: false,
            unix_sockets: UnixSockets::All(false),
            unasked: Some(UnaskedReach { read, exec }),
            overlay: None,
        })
    }
}

/// The directories of the toolchains on `PATH` an unasked command may run: each entry,
/// and for a `bin` (or `sbin`, `shims`) directory its parent, which holds what the
/// programs load (`~/.cargo`, a Python or Node installation). Never an entry inside the
/// workspace (the repository's own programs), nor the home directory or one above it
/// (that would be the whole home); for `~/.local/bin` only `~/.local/bin` and
/// `~/.local/lib`, since `~/.local/share` holds other programs' data (shell history).
/// A rustup proxy on `PATH` brings its toolchains (`RUSTUP_HOME`, else `~/.rustup`).
pub fn toolchain_dirs(
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    home: Option<&Path>,
    roots: &[PathBuf],
) -> Vec<PathBuf> {
    let home = home.and_then(|h| h.canonicalize().ok());
    let too_wide = |dir: &Path| {
        dir == Path::new("/")
            || home.as_deref().is_some_and(|h| h.starts_with(dir))
            || roots
                .iter()
                .any(|r| dir.starts_with(r) || r.starts_with(dir))
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let add = |dir: PathBuf, out: &mut Vec<PathBuf>| {
        if !too_wide(&dir) && !out.contains(&dir) {
            out.push(dir);
        }
    };
    let Some(path_var) = env("PATH") else {
        return out;
    };
    for entry in std::env::split_paths(&path_var) {
        if !entry.is_absolute() {
            continue;
        }
        let Ok(dir) = entry.canonicalize() else {
            continue;
        };
        if too_wide(&dir) {
            continue;
        }
        let named = |n: &str| dir.file_name().is_some_and(|f| f == n);
        let parent = dir.parent().map(Path::to_path_buf);
        let local = home.as_ref().map(|h| h.join(".local"));
        match parent {
            Some(parent) if local.as_ref() == Some(&parent) => {
                add(dir.clone(), &mut out);
                add(parent.join("lib"), &mut out);
            }
            Some(parent) if named("bin") || named("sbin") || named("shims") => {
                add(parent, &mut out)
            }
            _ => add(dir.clone(), &mut out),
        }
        if dir.join("rustup").exists() {
            let rustup = env("RUSTUP_HOME")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".rustup")));
            if let Some(rustup) = rustup.and_then(|r| r.canonicalize().ok()) {
                add(rustup, &mut out);
            }
        }
    }
    out
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
    /// Whether a command that runs unasked gets the read-only sandbox, enforced by the
    /// kernel ([`SandboxPolicy::for_unasked`]).
    #[serde(default)]
    pub read_only_unasked: bool,
    /// Whether a speculated command can run in an overlay of the workspace (the kernel
    /// allowed the private namespaces and the overlay mount); why not, in `detail`.
    #[serde(default)]
    pub speculation_overlay: bool,
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

/// The program shell commands go through: the small `saki-sandbox-exec` beside `saki`
/// when it is there (an exec of it costs a fraction of one of saki, and every command
/// costs two), else `saki` itself, whose `sandbox-exec` subcommand is the same helper.
pub fn helper_program(saki: &Path) -> PathBuf {
    let small = saki.with_file_name("saki-sandbox-exec");
    if small.is_file() {
        small
    } else {
        saki.to_path_buf()
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

/// Restricts the calling process to `policy` (the helper's step 2): Landlock for the
/// file system, TCP and scopes, then seccomp for the sockets and calls Landlock does not
/// cover ([`seccomp`]).
pub(crate) fn enforce(policy: &SandboxPolicy) -> Result<SandboxStatus, String> {
    let mut status = SandboxStatus {
        mode: policy.mode,
        enforced: false,
        network: policy.network,
        detail: String::new(),
        read_only_unasked: false,
        speculation_overlay: false,
    };
    if policy.mode == SandboxMode::Off {
        status.detail = "turned off".into();
        return Ok(status);
    }
    #[cfg(target_os = "linux")]
    {
        if let Some(mount) = &policy.overlay {
            namespace::enter(mount)?;
            status.speculation_overlay = true;
        }
        let (enforced, detail) = landlock_rules::restrict_self(policy)?;
        status.enforced = enforced;
        status.detail = detail;
        let refusals = seccomp::Refusals::for_policy(policy);
        let filtered = seccomp::apply(&refusals)?;
        status.detail.push_str(&sockets_detail(policy, filtered));
        status.read_only_unasked = enforced && filtered && policy.unasked.is_some();
    }
    #[cfg(not(target_os = "linux"))]
    {
        status.detail = "no sandbox on this operating system".into();
    }
    Ok(status)
}

/// What the status says of sockets, after the Landlock part.
#[cfg(target_os = "linux")]
fn sockets_detail(policy: &SandboxPolicy, filtered: bool) -> String {
    if !filtered {
        return "; sockets not restricted (no seccomp filter for this architecture)".into();
    }
    if policy.unasked.is_some() {
        return "; no sockets".into();
    }
    let unix = match &policy.unix_sockets {
        UnixSockets::All(false) => "no UNIX sockets",
        UnixSockets::All(true) => "UNIX sockets allowed",
        UnixSockets::Paths(_) => {
            "UNIX sockets allowed (a list of socket paths cannot be enforced on this kernel)"
        }
    };
    if policy.network {
        format!("; {unix}")
    } else {
        format!("; {unix}, no UDP")
    }
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
        assert_eq!(
            ww.deny_read,
            SYSTEM_SECRETS.iter().map(PathBuf::from).collect::<Vec<_>>(),
            "without a home only the system's secrets"
        );
        assert!(ww.unasked.is_none());
        let off = SandboxPolicy::new(SandboxMode::Off, &roots, Path::new("/t"), None, &[], true);
        assert!(off
            .for_unasked(&roots, Path::new("/t2"), &|_| None, None)
            .is_none());
    }

    #[test]
    fn an_unasked_policy_keeps_the_denials_and_drops_what_approved_commands_may() {
        let roots = [PathBuf::from("/w")];
        let mut approved = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            &roots,
            Path::new("/t"),
            Some(Path::new("/h")),
            &[],
            true,
        );
        approved.unix_sockets = UnixSockets::All(true);
        let unasked = approved
            .for_unasked(&roots, Path::new("/t2"), &|_| None, None)
            .unwrap();
        assert_eq!(unasked.writable, [PathBuf::from("/t2")]);
        assert!(!unasked.network);
        assert_eq!(unasked.unix_sockets, UnixSockets::All(false));
        assert_eq!(unasked.deny_read, approved.deny_read);
        let reach = unasked.unasked.unwrap();
        assert!(reach.read.contains(&PathBuf::from("/w")));
        assert!(!reach.exec.iter().any(|d| d.starts_with("/w")), "{reach:?}");
        assert!(reach.exec.contains(&PathBuf::from("/usr")));
    }

    #[test]
    fn toolchains_on_path_are_reached_but_not_the_workspace_or_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        for d in [
            "home/.cargo/bin",
            "home/.local/bin",
            "home/.local/lib",
            "home/.rustup",
            "home/ws/node_modules/.bin",
            "opt/node/bin",
            "opt/tools",
        ] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(home.join(".cargo/bin/rustup"), "").unwrap();
        let ws = home.join("ws");
        let path = std::env::join_paths([
            home.join(".cargo/bin"),
            home.join(".local/bin"),
            ws.join("node_modules/.bin"),
            base.join("opt/node/bin"),
            base.join("opt/tools"),
            home.clone(),
            PathBuf::from("relative/bin"),
            base.join("missing/bin"),
        ])
        .unwrap();
        let env = |name: &str| (name == "PATH").then(|| path.clone());
        let dirs = toolchain_dirs(&env, Some(&home), std::slice::from_ref(&ws));
        assert_eq!(
            dirs,
            [
                home.join(".cargo"),
                home.join(".rustup"),
                home.join(".local/bin"),
                home.join(".local/lib"),
                base.join("opt/node"),
                base.join("opt/tools"),
            ]
        );
    }

    #[test]
    fn labels_never_claim_a_sandbox_that_is_not_there() {
        let mut s = SandboxStatus {
            mode: SandboxMode::WorkspaceWrite,
            enforced: false,
            network: false,
            detail: "the kernel has no Landlock".into(),
            read_only_unasked: false,
            speculation_overlay: false,
        };
        assert_eq!(s.label(), "sandbox: none (the kernel has no Landlock)");
        s.enforced = true;
        assert_eq!(s.label(), "sandbox: workspace-write");
    }
}
