//! How a session's shell commands run: the environment, a private temp dir, and the
//! kernel sandbox really in force (probed with the saki binary's own helper), including
//! whether speculated commands can run in an overlay of the workspace.

use saki_sandbox::shell_env::ShellEnvConfig;
use saki_sandbox::{SandboxMode, SandboxPolicy, SandboxStatus, UnixSockets};
use saki_tools::web_fetch::WebSettings;
use saki_tools::{ShellRuntime, Workspace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What config says about shell commands and the sandbox they run in.
#[derive(Debug, Clone)]
pub struct ShellSpec {
    /// `[shell_environment]`.
    pub environment: ShellEnvConfig,
    /// Every API key variable a provider is configured with: never given to commands.
    pub key_names: Vec<String>,
    /// `max_background_shells`, when set.
    pub max_background: Option<usize>,
    /// The sandbox mode (`--sandbox` over config; default `workspace-write`).
    pub mode: SandboxMode,
    /// Paths no command may read: saki's own config and data, and `sandbox.deny_read`
    /// (with `~` already expanded).
    pub deny_read: Vec<PathBuf>,
    /// `sandbox.network`.
    pub network: bool,
    /// `sandbox.unix_sockets`, when set (with `~` already expanded).
    pub unix_sockets: Option<UnixSockets>,
    /// `$HOME`, whose dotfiles commands may read.
    pub home: Option<PathBuf>,
    /// Cap on a tool's output.
    pub output_cap: usize,
    /// `[web_fetch]`.
    pub web: WebSettings,
}

/// `workspace` with its shell runtime (and the sandbox really in force), its output cap
/// and its web settings; `Err` when the environment cannot be built.
pub fn attach(
    workspace: &Workspace,
    spec: &ShellSpec,
) -> Result<(Arc<Workspace>, Arc<ShellRuntime>, SandboxStatus), String> {
    let mut runtime =
        ShellRuntime::new(&spec.environment, &spec.key_names).map_err(|e| e.to_string())?;
    if let Some(n) = spec.max_background {
        runtime.background().set_limit(n);
    }
    let home = spec.home.as_deref();
    let mut policy = SandboxPolicy::new(
        spec.mode,
        workspace.roots(),
        runtime.tmp(),
        home,
        &spec.deny_read,
        spec.network,
    );
    if let Some(sockets) = &spec.unix_sockets {
        policy.unix_sockets = sockets.clone();
    }
    let commands_env = |name: &str| runtime.var(name);
    let unasked = policy.for_unasked(
        workspace.roots(),
        runtime.tmp_unasked(),
        &commands_env,
        home,
    );
    let probed = std::env::current_exe()
        .map_err(|e| format!("cannot find the saki binary to run the sandbox: {e}"))
        .map(|saki| saki_sandbox::helper_program(&saki))
        .and_then(|helper| Ok((saki_sandbox::probe(&helper, &policy)?, helper)));
    let status = match probed {
        Ok((mut status, saki)) => {
            // The unasked policy is probed too: it is what `read_only_unasked` reports.
            status.read_only_unasked = match &unasked {
                Some(p) => saki_sandbox::probe(&saki, p).is_ok_and(|s| s.read_only_unasked),
                None => false,
            };
            let overlay = probe_speculation_overlay(&saki, &policy, workspace, &runtime, home);
            match &overlay {
                Ok(()) => status.speculation_overlay = true,
                Err(why) => tracing::debug!(why, "speculated commands cannot run in an overlay"),
            }
            runtime.set_sandbox(saki, &policy, unasked.as_ref());
            if overlay.is_ok() {
                runtime.allow_speculation_overlay(workspace.roots(), home);
            }
            status
        }
        Err(detail) => {
            tracing::warn!(detail, "shell commands run without the sandbox helper");
            SandboxStatus {
                mode: spec.mode,
                enforced: false,
                network: policy.network,
                detail,
                read_only_unasked: false,
                speculation_overlay: false,
            }
        }
    };
    let mut workspace = workspace.clone();
    let runtime = Arc::new(runtime);
    workspace.set_shell_runtime(runtime.clone());
    workspace.set_output_cap(spec.output_cap);
    workspace.set_web(spec.web.clone());
    Ok((Arc::new(workspace), runtime, status))
}

/// Whether a speculated command can run in an overlay of the workspace here: the helper
/// mounts one over a throwaway upper layer where speculations keep theirs (the upper
/// layer's file system must take it), in namespaces that end with the probe.
fn probe_speculation_overlay(
    saki: &Path,
    policy: &SandboxPolicy,
    workspace: &Workspace,
    runtime: &ShellRuntime,
    home: Option<&Path>,
) -> Result<(), String> {
    let base = saki_read_ahead::overlay::default_base();
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("saki-probe-")
        .tempdir_in(&base)
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let upper = scratch.path().join("upper");
    let work = scratch.path().join("work");
    for dir in [&upper, &work] {
        std::fs::create_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mount = saki_sandbox::OverlayMount {
        root: workspace.root().to_path_buf(),
        upper,
        work,
    };
    let env = |name: &str| runtime.var(name);
    let speculation = policy
        .for_speculation(workspace.roots(), runtime.tmp_unasked(), &env, home, mount)
        .ok_or("the sandbox is off")?;
    let status = saki_sandbox::probe(saki, &speculation);
    // overlayfs leaves its scratch directory without permissions; the temp dir's
    // removal needs to read it.
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(
        scratch.path().join("work/work"),
        std::fs::Permissions::from_mode(0o700),
    );
    let status = status?;
    if status.speculation_overlay && status.enforced {
        Ok(())
    } else {
        Err(status.detail)
    }
}

/// The alert for a sandbox that is asked for but not in force.
pub fn sandbox_alert(sandbox: &SandboxStatus) -> Option<String> {
    (sandbox.mode != SandboxMode::Off && !sandbox.enforced).then(|| {
        format!(
            "shell commands run without a sandbox ({}); only approvals protect this machine",
            sandbox.detail
        )
    })
}

/// The session's language servers: the entries config sets over the built-in ones whose
/// program is on the commands' `PATH`, started lazily by the tools (`saki-lsp`), with
/// the environment `runtime` gives shell commands (secrets scrubbed). `workspace` is returned
/// unchanged when there are none; the engine stops them when the session ends.
pub fn attach_language_servers(
    workspace: Arc<Workspace>,
    runtime: &ShellRuntime,
    setting: Option<&saki_lsp::LspSetting>,
    trusted: bool,
) -> Arc<Workspace> {
    let env = runtime.env().to_vec();
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone());
    let specs = saki_lsp::config::specs(setting, trusted, &|program| {
        saki_lsp::config::on_path(program, path.as_deref())
    });
    if specs.is_empty() {
        return workspace;
    }
    tracing::debug!(servers = specs.len(), "language servers available");
    let manager = saki_lsp::LspManager::new(specs, workspace.scope().clone(), env);
    let mut with = (*workspace).clone();
    with.set_code_intel(Arc::new(manager));
    Arc::new(with)
}
