//! How shell commands run in a session: their environment, private temp dirs, the
//! sandbox helper, and which policy each call gets. A call runs under the session's
//! policy (approved commands) unless whoever let it through marked it: unasked (the
//! read-only policy) or speculated (the overlay policy, its writes landing in a
//! speculation's directory).

use saki_sandbox::shell_env::{self, ShellEnvConfig, ShellEnvError};
use saki_sandbox::{OverlayMount, SandboxPolicy};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// How shell commands run in a session: their environment, private temp dirs (0700,
/// removed with the runtime), and the sandbox helper.
#[derive(Debug)]
pub struct ShellRuntime {
    env: Vec<(String, String)>,
    tmp: tempfile::TempDir,
    /// The temp dir of commands that run unasked: not the approved commands' one, so
    /// nothing an unasked command leaves there is met by a later approved one.
    tmp_unasked: tempfile::TempDir,
    sandbox: Option<Launcher>,
    /// Calls let through without asking anyone, by call id ([`Self::mark_unasked`],
    /// [`Self::mark_speculated`]).
    marks: Mutex<HashMap<String, Mark>>,
    /// Commands started with `background: true`; killed when the runtime is dropped.
    background: crate::shell_background::Jobs,
}

/// What a call was let through as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// Proven read-only and in scope: the read-only policy.
    Unasked,
    /// Run ahead of the person: this policy (JSON), in an overlay of the workspace.
    Speculated(String),
}

#[derive(Debug)]
struct Launcher {
    program: PathBuf,
    policy_json: String,
    /// The policy of a command that runs unasked (`None`: the sandbox is off).
    unasked_json: Option<String>,
    /// The session's policy, for the ones made per call.
    policy: SandboxPolicy,
    /// Where speculated commands may run in an overlay (the kernel allows it): the
    /// workspace roots and the home directory their policy is made from.
    speculation: Option<(Vec<PathBuf>, Option<PathBuf>)>,
}

/// Marks kept at most; past it the oldest are forgotten (a marked call that never ran,
/// denied by a later interceptor, leaves its mark behind).
const MAX_UNASKED_MARKS: usize = 4096;

impl ShellRuntime {
    /// A runtime with the environment `config` builds from saki's own, without the
    /// variables named in `key_names` (the providers' API keys), and no sandbox.
    pub fn new(config: &ShellEnvConfig, key_names: &[String]) -> Result<Self, ShellRuntimeError> {
        let temp_dir = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .map_err(ShellRuntimeError::TempDir)
        };
        let tmp = temp_dir("saki-shell-")?;
        let tmp_unasked = temp_dir("saki-shell-ro-")?;
        let mut env = config.build(std::env::vars(), key_names)?;
        let tmp_str = tmp.path().to_string_lossy().into_owned();
        for (name, value) in shell_env::unattended(&tmp_str) {
            env.retain(|(n, _)| n != name);
            env.push((name.to_owned(), value));
        }
        Ok(Self {
            env,
            tmp,
            tmp_unasked,
            sandbox: None,
            marks: Mutex::new(HashMap::new()),
            background: crate::shell_background::Jobs::default(),
        })
    }

    /// Runs commands through `program sandbox-exec` (the saki binary) with `policy`, and
    /// those that run unasked with `unasked` ([`SandboxPolicy::for_unasked`]).
    pub fn set_sandbox(
        &mut self,
        program: PathBuf,
        policy: &SandboxPolicy,
        unasked: Option<&SandboxPolicy>,
    ) {
        self.sandbox = Some(Launcher {
            program,
            policy_json: serde_json::to_string(policy).unwrap_or_default(),
            unasked_json: unasked.and_then(|p| serde_json::to_string(p).ok()),
            policy: policy.clone(),
            speculation: None,
        });
    }

    /// Speculated commands may run in an overlay of the workspace (`roots`): the kernel
    /// allows the namespaces and the mount (the caller probed it).
    pub fn allow_speculation_overlay(&mut self, roots: &[PathBuf], home: Option<&Path>) {
        if let Some(launcher) = self.sandbox.as_mut() {
            launcher.speculation = Some((roots.to_vec(), home.map(Path::to_path_buf)));
        }
    }

    /// Whether a speculated command can run in an overlay here.
    pub fn speculation_overlay(&self) -> bool {
        self.sandbox
            .as_ref()
            .is_some_and(|l| l.speculation.is_some())
    }

    /// The helper program and the session's policy as JSON, while commands run through
    /// the sandbox helper.
    pub(crate) fn launcher(&self) -> Option<(&Path, &str)> {
        self.sandbox
            .as_ref()
            .map(|l| (l.program.as_path(), l.policy_json.as_str()))
    }

    /// The policy (JSON) a call marked `mark` runs under, when it has one of its own.
    pub(crate) fn policy_for(&self, mark: Option<&Mark>) -> Option<String> {
        match mark? {
            Mark::Unasked => self.sandbox.as_ref()?.unasked_json.clone(),
            Mark::Speculated(json) => Some(json.clone()),
        }
    }

    /// The private temp dir commands get as `TMPDIR`.
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// The temp dir of commands that run unasked.
    pub fn tmp_unasked(&self) -> &Path {
        self.tmp_unasked.path()
    }

    /// Says that the call `call_id` runs without anyone having been asked (a command
    /// proven read-only and in scope): it gets the unasked policy, whatever the
    /// classifier thought of it. Whoever lets a shell call through unasked (the approval
    /// policy, the speculation gate) marks it before it runs.
    pub fn mark_unasked(&self, call_id: &str) {
        self.mark(call_id, Mark::Unasked);
    }

    /// Says that the call `call_id` runs ahead of the person, in `mount`'s overlay of the
    /// workspace. False (and no mark) where that cannot be: no sandbox helper, or the
    /// kernel refused the overlay when the session started.
    pub fn mark_speculated(&self, call_id: &str, mount: OverlayMount) -> bool {
        let Some(launcher) = &self.sandbox else {
            return false;
        };
        let Some((roots, home)) = &launcher.speculation else {
            return false;
        };
        let env = |name: &str| self.var(name);
        let policy = launcher.policy.for_speculation(
            roots,
            self.tmp_unasked(),
            &env,
            home.as_deref(),
            mount,
        );
        match policy.and_then(|p| serde_json::to_string(&p).ok()) {
            Some(json) => {
                self.mark(call_id, Mark::Speculated(json));
                true
            }
            None => false,
        }
    }

    fn mark(&self, call_id: &str, mark: Mark) {
        let mut marks = self.marks.lock().unwrap_or_else(PoisonError::into_inner);
        if marks.len() >= MAX_UNASKED_MARKS {
            marks.clear();
        }
        marks.insert(call_id.to_owned(), mark);
    }

    /// How `call_id` was let through, if it was marked; the mark is used up.
    pub fn take_mark(&self, call_id: &str) -> Option<Mark> {
        self.marks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id)
    }

    /// Whether `call_id` was marked unasked; the mark is used up.
    pub fn take_unasked(&self, call_id: &str) -> bool {
        self.take_mark(call_id) == Some(Mark::Unasked)
    }

    /// The session's background commands.
    pub fn background(&self) -> &crate::shell_background::Jobs {
        &self.background
    }

    /// The environment commands run with.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// One variable of the environment commands run with.
    pub fn var(&self, name: &str) -> Option<std::ffi::OsString> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| std::ffi::OsString::from(value))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ShellRuntimeError {
    #[error("cannot create the private temp dir for shell commands: {0}")]
    TempDir(std::io::Error),
    #[error(transparent)]
    Env(#[from] ShellEnvError),
}
