//! The system calls Landlock does not cover, filtered with seccomp.
//!
//! Landlock (up to ABI 8) cannot stop a `connect()` to a pathname UNIX socket, and it
//! rules TCP only: a sandboxed command could reach `docker.sock`, the D-Bus user bus or
//! the ssh-agent (whose daemons then act outside the sandbox for it), and send data out
//! over UDP (DNS). A seccomp filter cannot read the path a `connect()` names, so it
//! refuses the sockets themselves: `socket(AF_UNIX, …)` unless the policy allows UNIX
//! sockets, `socket(AF_INET | AF_INET6, …)` when it has no network, and every `socket()`
//! for a command that runs unasked. `socketpair()` stays allowed: it connects nothing
//! outside. io_uring is refused whenever a socket rule applies, since its `SOCKET` and
//! `CONNECT` operations bypass the system-call filter; an unasked command also loses the
//! kernel keyring (`keyctl` and friends, which Landlock does not cover either).
//!
//! The filter is applied in the process that then starts the command; it holds for
//! every process that command starts.

use super::{SandboxPolicy, UnixSockets};
use nix::libc;
use seccompiler::{
    apply_filter_all_threads, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp,
    SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// What the filter refuses for `policy`, as system-call rules; empty when nothing is.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Refusals {
    /// Socket domains refused (`socket(domain, …)` fails with `EACCES`).
    pub domains: Vec<i32>,
    /// Every `socket()` refused.
    pub all_sockets: bool,
    /// io_uring and, for unasked commands, the keyring: fail with `ENOSYS` / `EACCES`.
    pub no_io_uring: bool,
    pub no_keyring: bool,
}

impl Refusals {
    pub(crate) fn for_policy(policy: &SandboxPolicy) -> Self {
        if policy.unasked.is_some() {
            return Self {
                all_sockets: true,
                no_io_uring: true,
                no_keyring: true,
                ..Self::default()
            };
        }
        let mut domains = Vec::new();
        let unix_refused = match &policy.unix_sockets {
            UnixSockets::All(allowed) => !allowed,
            // seccomp cannot see the path a connect() names, and Landlock's rule for
            // pathname sockets (ABI 9, Linux 7.1) is not used yet: the person asked for
            // those sockets to work, so they (and all others) do, and the status says
            // the rule is not in force.
            UnixSockets::Paths(_) => false,
        };
        if unix_refused {
            domains.push(libc::AF_UNIX);
        }
        if !policy.network {
            domains.extend([libc::AF_INET, libc::AF_INET6]);
        }
        Self {
            no_io_uring: !domains.is_empty(),
            domains,
            ..Self::default()
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.domains.is_empty() && !self.all_sockets && !self.no_io_uring && !self.no_keyring
    }
}

/// Applies `refusals` to this process and its future children. `Ok(false)` when this
/// architecture has no filter support (the caller says so in the status).
pub(crate) fn apply(refusals: &Refusals) -> Result<bool, String> {
    if refusals.is_empty() {
        return Ok(true);
    }
    let Ok(arch) = TargetArch::try_from(std::env::consts::ARCH) else {
        return Ok(false);
    };
    let mut eacces: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if refusals.all_sockets {
        eacces.insert(libc::SYS_socket, Vec::new());
    } else if !refusals.domains.is_empty() {
        let rules = refusals
            .domains
            .iter()
            .map(|domain| domain_rule(*domain))
            .collect::<Result<Vec<_>, _>>()?;
        eacces.insert(libc::SYS_socket, rules);
    }
    if refusals.no_keyring {
        for call in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key] {
            eacces.insert(call, Vec::new());
        }
    }
    let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if refusals.no_io_uring {
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            enosys.insert(call, Vec::new());
        }
    }
    for (rules, errno) in [(eacces, libc::EACCES), (enosys, libc::ENOSYS)] {
        if rules.is_empty() {
            continue;
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(|e| format!("seccomp filter: {e}"))?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e| format!("seccomp filter: {e:?}"))?;
        apply_filter_all_threads(&program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(true)
}

fn domain_rule(domain: i32) -> Result<SeccompRule, String> {
    let condition =
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, domain as u64)
            .map_err(|e| format!("seccomp condition: {e}"))?;
    SeccompRule::new(vec![condition]).map_err(|e| format!("seccomp rule: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SandboxMode;
    use std::path::PathBuf;

    fn policy(network: bool, unix: UnixSockets) -> SandboxPolicy {
        let mut p = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            &[PathBuf::from("/w")],
            std::path::Path::new("/t"),
            None,
            &[],
            network,
        );
        p.unix_sockets = unix;
        p
    }

    #[test]
    fn approved_commands_lose_unix_sockets_and_without_network_inet_too() {
        let r = Refusals::for_policy(&policy(false, UnixSockets::default()));
        assert_eq!(r.domains, [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6]);
        assert!(r.no_io_uring && !r.all_sockets && !r.no_keyring);
        let r = Refusals::for_policy(&policy(true, UnixSockets::All(true)));
        assert!(r.is_empty(), "{r:?}");
        let listed = UnixSockets::Paths(vec![PathBuf::from("/run/x.sock")]);
        let r = Refusals::for_policy(&policy(true, listed));
        assert!(r.is_empty(), "a list cannot be enforced by path: {r:?}");
    }

    #[test]
    fn an_unasked_command_gets_no_socket_at_all() {
        let base = policy(true, UnixSockets::All(true));
        let unasked = base
            .for_unasked(
                &[PathBuf::from("/w")],
                std::path::Path::new("/t2"),
                &|_| None,
                None,
            )
            .unwrap();
        let r = Refusals::for_policy(&unasked);
        assert!(r.all_sockets && r.no_io_uring && r.no_keyring);
    }
}
