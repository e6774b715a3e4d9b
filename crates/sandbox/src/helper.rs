//! `saki sandbox-exec`: the process between saki and a shell command.
//!
//! `saki sandbox-exec --policy JSON -- PROGRAM ARGS...` becomes a child subreaper, starts
//! itself again as `sandbox-exec --inner`, which restricts itself to the policy and
//! replaces itself with the program (`exec`), and once the program ends kills every
//! process that is left (background jobs, `setsid` daemons: as a subreaper it inherits
//! them all). SIGTERM, SIGHUP and SIGINT, and saki's own death (the parent-death signal),
//! do the same and exit. `--probe` restricts itself, prints the resulting
//! [`SandboxStatus`] as JSON and exits.
//!
//! Two processes, because the one that finds and kills leftovers reads `/proc`, which a
//! command that runs unasked may not: the reaper stays unrestricted (it runs only this
//! code), and only the process that becomes the command is restricted.
//!
//! Exit codes: the program's, or 128 + the signal that killed it; 127 when it cannot be
//! started; the caller prints [`HelperError`]s and exits 125.

use super::{enforce, SandboxPolicy, SandboxStatus};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// The hidden subcommand of the `saki` binary that runs [`helper_main`].
pub const HELPER_SUBCOMMAND: &str = "sandbox-exec";

/// Exit code for a failure of the helper itself (as `env` and `timeout` use it).
pub const HELPER_FAILED: u8 = 125;

/// How the helper ended.
#[derive(Debug)]
pub enum HelperExit {
    /// `--probe`: the status to print.
    Probe(SandboxStatus),
    /// The command ran; exit with this code.
    Exited(u8),
}

#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot apply the sandbox: {0}")]
    Sandbox(String),
    #[error("cannot handle signals: {0}")]
    Signals(std::io::Error),
}
/// How long the helper keeps killing leftovers that keep appearing (a fork bomb).
const KILL_DEADLINE: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Args {
    probe: bool,
    /// The restricted half: enforce, then become the command.
    inner: bool,
    policy: SandboxPolicy,
    /// The process that started the helper (`--parent PID`): if it is gone by the time
    /// the helper asks to be told of its death, nothing would ever tell it.
    parent: Option<u32>,
    command: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut probe = false;
    let mut inner = false;
    let mut policy = None;
    let mut parent = None;
    let mut rest = args.iter();
    let mut command = Vec::new();
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("--probe") => probe = true,
            Some("--inner") => inner = true,
            Some("--policy") => {
                let json = rest
                    .next()
                    .and_then(|j| j.to_str())
                    .ok_or("--policy needs JSON")?;
                policy = Some(
                    serde_json::from_str::<SandboxPolicy>(json)
                        .map_err(|e| format!("invalid --policy: {e}"))?,
                );
            }
            Some("--parent") => {
                let pid = rest.next().and_then(|p| p.to_str()?.parse().ok());
                parent = Some(pid.ok_or("--parent needs a process id")?);
            }
            Some("--") => {
                command.extend(rest.by_ref().cloned());
                break;
            }
            _ => return Err(format!("unexpected argument {}", arg.to_string_lossy())),
        }
    }
    let policy = policy.ok_or("--policy is required")?;
    if !probe && command.is_empty() {
        return Err("no command after --".into());
    }
    Ok(Args {
        probe,
        inner,
        policy,
        parent,
        command,
    })
}

/// Runs the helper with the arguments after the subcommand.
pub fn helper_main(args: &[OsString]) -> Result<HelperExit, HelperError> {
    let parsed = parse(args).map_err(HelperError::Usage)?;
    if parsed.probe {
        let status = enforce(&parsed.policy).map_err(HelperError::Sandbox)?;
        return Ok(HelperExit::Probe(status));
    }
    let Some((program, program_args)) = parsed.command.split_first() else {
        return Err(HelperError::Usage("no command after --".into()));
    };
    if parsed.inner {
        enforce(&parsed.policy).map_err(HelperError::Sandbox)?;
        // Only returns when the program could not be started.
        let e = Command::new(program).args(program_args).exec();
        tracing::debug!(error = %e, "sandbox-exec: cannot start the command");
        return Ok(HelperExit::Exited(127));
    }
    become_reaper();
    // saki killed before the death signal was asked for: the helper was handed to
    // another parent and would outlive it with its command.
    if parsed
        .parent
        .is_some_and(|parent| std::os::unix::process::parent_id() != parent)
    {
        return Ok(HelperExit::Exited(HELPER_FAILED));
    }
    let mut signals =
        signal_hook::iterator::Signals::new([libc_sig::TERM, libc_sig::HUP, libc_sig::INT])
            .map_err(HelperError::Signals)?;
    let me = std::env::current_exe()
        .map_err(|e| HelperError::Usage(format!("cannot find the saki binary: {e}")))?;
    let mut child = match Command::new(me)
        .arg(HELPER_SUBCOMMAND)
        .arg("--inner")
        .args(args)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "sandbox-exec: cannot start the restricted half");
            return Ok(HelperExit::Exited(127));
        }
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            kill_descendants();
            std::process::exit(128 + signal);
        }
    });
    let code = match child.wait() {
        Ok(status) => exit_code(status),
        Err(_) => HELPER_FAILED,
    };
    kill_descendants();
    Ok(HelperExit::Exited(code))
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(HELPER_FAILED),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(HELPER_FAILED),
        (None, None) => HELPER_FAILED,
    }
}

/// Signal numbers for signal-hook, which takes raw `c_int`s.
mod libc_sig {
    pub const TERM: i32 = nix::sys::signal::Signal::SIGTERM as i32;
    pub const HUP: i32 = nix::sys::signal::Signal::SIGHUP as i32;
    pub const INT: i32 = nix::sys::signal::Signal::SIGINT as i32;
}

#[cfg(target_os = "linux")]
fn become_reaper() {
    use nix::sys::prctl;
    if let Err(e) = prctl::set_child_subreaper(true) {
        tracing::warn!(error = %e, "sandbox-exec: cannot become a subreaper");
    }
    // saki gone (even by SIGKILL): clean up like for SIGTERM.
    let _ = prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
}

#[cfg(not(target_os = "linux"))]
fn become_reaper() {}

/// Kills every descendant of this process. As a subreaper the process inherits orphans,
/// so killing its children (and their children, who then become its own) repeats until
/// none is left.
pub fn kill_descendants() {
    use nix::sys::signal::{kill, Signal};
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    use nix::unistd::Pid;
    let me = std::process::id();
    let deadline = Instant::now() + KILL_DEADLINE;
    loop {
        let children = children_of(me);
        for pid in &children {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        // Reap whatever has exited, without blocking on the living.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
        if children.is_empty() || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Process ids whose parent is `parent`, from `/proc`.
fn children_of(parent: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_pid(&stat))
                == Some(parent)
        })
        .collect()
}

/// The parent pid in a `/proc/PID/stat` line (the field after the state, after the
/// command name in parentheses, which may itself hold spaces and parentheses).
fn parent_pid(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parent_pids_from_stat_lines() {
        assert_eq!(parent_pid("12 (bash) S 7 12 12 0"), Some(7));
        assert_eq!(parent_pid("12 (a) b) (c) R 99 1"), Some(99));
        assert_eq!(parent_pid("garbage"), None);
    }

    #[test]
    fn arguments_are_checked() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(parse(&os(&["--", "true"])).is_err(), "policy required");
        let policy = r#"{"mode":"off","writable":[],"deny_read":[],"network":true}"#;
        assert!(
            parse(&os(&["--policy", policy])).is_err(),
            "command required"
        );
        assert!(parse(&os(&["--probe", "--policy", policy])).is_ok());
        let args = parse(&os(&["--policy", policy, "--", "bash", "-c", "x"])).unwrap();
        assert_eq!(args.command, os(&["bash", "-c", "x"]));
        assert!(parse(&os(&["--policy", "{"]))
            .unwrap_err()
            .contains("invalid"));
    }
}
