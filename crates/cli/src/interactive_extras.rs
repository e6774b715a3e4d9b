//! The interactive UI's extras wired to this session (see `saki_tui::extras`): `/export`
//! writes this session with `crate::export`, `/shells` lists the shell runtime's
//! background commands, the status line prices the session with `crate::pricing`, and
//! notifications follow `notify` and run the `Notification` hook.

use saki_llm_worker::hook::Hooks;
use saki_llm_worker::BackgroundUsage;
use saki_tools::shell_background::Ended;
use saki_tools::ShellRuntime;
use saki_tui::extras::{CostMeter, NotifyMode};
use saki_tui::App;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// `notify = "auto" | "off"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifySetting {
    #[default]
    Auto,
    Off,
}

/// The session's shell runtime, for `/shells`; weak, so the session's end still drops it
/// (and kills its background commands).
static SHELL_RUNTIME: Mutex<Option<Weak<ShellRuntime>>> = Mutex::new(None);

pub fn set_shell_runtime(runtime: &Arc<ShellRuntime>) {
    *SHELL_RUNTIME.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::downgrade(runtime));
}

/// `/shells`: one line per background command.
pub fn shells_report() -> String {
    let runtime = SHELL_RUNTIME
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(Weak::upgrade);
    let Some(runtime) = runtime else {
        return "no background commands".to_owned();
    };
    let jobs = runtime.background().list();
    if jobs.is_empty() {
        return format!(
            "no background commands (at most {} at once)",
            runtime.background().limit()
        );
    }
    jobs.iter()
        .map(|job| {
            let state = match job.ended {
                None => "running".to_owned(),
                Some(Ended::Exit(code)) => format!("exit {code}"),
                Some(Ended::Signal) => "killed by a signal".to_owned(),
                Some(Ended::Killed) => "killed".to_owned(),
            };
            let command: String = job.command.chars().take(80).collect();
            format!(
                "{:<5} {:<20} {:>6}s  {}",
                job.id, state, job.seconds, command
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the extras need from the session's set-up.
pub struct Parts {
    pub notify: NotifySetting,
    pub hooks: Hooks,
    pub wire: saki_llm_client::WireApi,
    pub workspace: PathBuf,
}

impl Parts {
    pub fn new(resolved: &crate::config::Resolved, hooks: &Hooks, workspace: PathBuf) -> Self {
        Self {
            notify: resolved.notify,
            hooks: hooks.clone(),
            wire: resolved.wire_api,
            workspace,
        }
    }

    pub fn install(self, app: &mut App, background: BackgroundUsage) {
        let extras = &mut app.extras;
        let workspace = self.workspace;
        extras.exporter = Some(Arc::new(move |id: &str, args: &str| {
            crate::export::export_command(&workspace, id, args)
        }));
        extras.shells = Some(Arc::new(shells_report));
        if let Some(table) = crate::pricing::session() {
            extras.cost = Some(CostMeter::new(table.clone(), self.wire, background));
        }
        extras.notify.mode = match self.notify {
            NotifySetting::Auto => NotifyMode::Auto,
            NotifySetting::Off => NotifyMode::Off,
        };
        extras.notify.style = saki_tui::notify::style(&|k| std::env::var(k).ok());
        let hooks = self.hooks;
        if !hooks.is_empty() {
            extras.notify.hook = Some(Arc::new(move |kind: &str, message: &str| {
                let (hooks, kind, message) = (hooks.clone(), kind.to_owned(), message.to_owned());
                tokio::spawn(async move { hooks.notification(&kind, &message).await });
            }));
        }
    }
}
