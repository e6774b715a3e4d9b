//! `saki undo [--session ID | --last] [--turns N] [--force]`, `saki undo --list` and
//! `saki undo --redo`: a saved session's checkpoints, from the command line. The files
//! go back in the session's own workspace; the undo is recorded in its session log (a
//! system item tells the model when the session is resumed).

use crate::exit::ExitCode;
use crate::session;
use saki_llm_worker::Item;
use saki_pod::{LoadedSession, StoreError};
use saki_tools::sanitize::sanitize;
use saki_undo::objects::Objects;
use saki_undo::ops::{self, log_note, model_note, short};
use saki_undo::restore::uncertain_why;
use saki_undo::{journal_path, store_dir, Journal, UndoError};
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct UndoArgs {
    /// The session (`saki sessions` lists them; default: the newest of this workspace).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub session: Option<String>,
    /// The newest session of this workspace (the default).
    #[arg(long)]
    pub last: bool,
    /// Take back the file changes of the last N turns that changed files.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..),
          conflicts_with_all = ["list", "redo"])]
    pub turns: u32,
    /// Show the checkpoints: turn, prompt, files changed.
    #[arg(long, conflicts_with = "redo")]
    pub list: bool,
    /// Put back what the last undo took back.
    #[arg(long)]
    pub redo: bool,
    /// Overwrite files that changed since the turn, and restore files a command changed
    /// without naming them (you may have saved them while it ran); they are named
    /// either way.
    #[arg(long, conflicts_with = "list")]
    pub force: bool,
    /// With --list: one JSON object per checkpoint.
    #[arg(long, requires = "list")]
    pub json: bool,
    /// The workspace whose newest session is meant (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
}

fn fail(message: &str, code: ExitCode) -> ExitCode {
    eprintln!("error: {}", sanitize(message));
    code
}

pub fn run(args: UndoArgs) -> ExitCode {
    // An undo writes through the file transaction, journaled in the data directory: the
    // session builder's first steps roll back what a killed saki left half done, then
    // find the store and the session.
    let (store, loaded, recovered) = match saki_engine::open_log(&resume(&args), &workspace(&args))
    {
        Ok(opened) => opened,
        Err(e) => return fail(&e.message, e.code),
    };
    for message in recovered {
        eprintln!("warning: {}", sanitize(&message));
    }
    let Some(undo_dir) = store.dir().parent().map(store_dir) else {
        return fail("no data directory", ExitCode::Config);
    };
    let Some(path) = journal_path(&undo_dir, &loaded.meta.id) else {
        return fail("not a session id", ExitCode::Usage);
    };
    let mut journal = Journal::load(path);
    for warning in &journal.warnings {
        eprintln!("warning: {}", sanitize(warning));
    }
    if args.list {
        return list(&loaded, &journal, args.json);
    }
    let root = PathBuf::from(&loaded.meta.workspace);
    // The session's own workspace, as recorded (a canonical path); it must still be
    // that directory, not a symlink put in its place.
    if root.canonicalize().ok().as_deref() != Some(root.as_path()) || !root.is_dir() {
        let message = format!(
            "the session's workspace {} is not there any more",
            root.display()
        );
        return fail(&message, ExitCode::Usage);
    }
    // The session's lock: a saki that has it open would not know the files went back.
    let mut writer = match store.append_to(&loaded) {
        Ok(w) => w,
        Err(StoreError::Busy(id)) => {
            let message =
                format!("session {id} is open in another saki; use /undo there (or quit it first)");
            return fail(&message, ExitCode::UndoRefused);
        }
        Err(e) => return fail(&e.to_string(), ExitCode::Internal),
    };
    let objects = Objects::new(undo_dir.join("objects"));
    let result = if args.redo {
        ops::redo(&root, &objects, &mut journal, args.force)
    } else {
        ops::undo(
            &root,
            &objects,
            &mut journal,
            args.turns as usize,
            args.force,
        )
    };
    let outcome = match result {
        Ok(o) => o,
        Err(e @ UndoError::Io { .. }) => return fail(&e.to_string(), ExitCode::Internal),
        Err(e) => return fail(&e.to_string(), ExitCode::UndoRefused),
    };
    if let Some(text) = model_note(&outcome) {
        let recorded = writer
            .append(&Item::system(text))
            .and_then(|()| writer.append_undo(&log_note(&outcome)));
        if let Err(e) = recorded {
            eprintln!("warning: the session log could not record it: {e}");
        }
    }
    println!("{}", sanitize(&outcome.describe()));
    println!("in {}", root.display());
    if outcome.left.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::UndoRefused
    }
}

/// The session `--session` names, else the newest of the workspace.
fn resume(args: &UndoArgs) -> session::Resume {
    match &args.session {
        Some(id) => session::Resume::Id(id.clone()),
        None => session::Resume::Last,
    }
}

/// The workspace whose newest session is meant: `--cd`, else the current directory (its
/// root, as sessions record it; the directory as given when it is not one).
fn workspace(args: &UndoArgs) -> PathBuf {
    let dir = args
        .cd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    saki_tools::Workspace::new(&dir)
        .map(|w| w.root().to_path_buf())
        .unwrap_or(dir)
}

fn list(loaded: &LoadedSession, journal: &Journal, json_mode: bool) -> ExitCode {
    let summaries = ops::summaries(journal);
    if json_mode {
        for s in &summaries {
            let line = json!({
                "session": loaded.meta.id,
                "turn": s.turn,
                "prompt": s.prompt,
                "time": s.time,
                "state": s.state,
                "files": s.files,
                "not_saved": s.skipped.iter().map(|(p, why)| json!({"path": p, "why": why})).collect::<Vec<_>>(),
                "needs_force": s.uncertain.iter().map(|(p, command)| json!({"path": p, "command": command})).collect::<Vec<_>>(),
            });
            println!("{line}");
        }
        return ExitCode::Success;
    }
    println!(
        "session {} ({}), workspace {}",
        loaded.meta.id,
        sanitize(&loaded.meta.title),
        loaded.meta.workspace
    );
    if summaries.is_empty() {
        println!("no checkpoints: no turn of this session changed files");
    }
    for s in summaries.iter().rev() {
        println!(
            "turn {:>3}  {:<11} {:>8}  {}",
            s.turn,
            s.state,
            session::ago(s.time),
            sanitize(&short(&s.prompt, 60))
        );
        println!("           {}", sanitize(&ops::list(&s.files)));
        for (path, why) in &s.skipped {
            println!(
                "           not saved: {}: {}",
                sanitize(path),
                sanitize(why)
            );
        }
        for (path, command) in &s.uncertain {
            println!(
                "           needs --force: {}: {}",
                sanitize(path),
                sanitize(&uncertain_why(command))
            );
        }
    }
    ExitCode::Success
}

/// The `[undo]` table. Honoured from trusted files only: a repository must not be able
/// to turn off the person's way back (or fill their disk).
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UndoConfig {
    /// The undo store's bound in MiB; past it the oldest checkpoints are dropped
    /// (default 512; 0 turns undo off).
    pub max_mb: Option<u64>,
    /// Files larger than this many MiB are not saved, and the turn says so (default 32).
    pub max_file_mb: Option<u64>,
}

impl UndoConfig {
    pub fn overlay(&mut self, other: UndoConfig) {
        self.max_mb = other.max_mb.or(self.max_mb);
        self.max_file_mb = other.max_file_mb.or(self.max_file_mb);
    }

    /// The engine's limits; `None`: off.
    pub fn limits(&self) -> Option<saki_undo::UndoLimits> {
        use saki_undo::{UndoLimits, DEFAULT_MAX_FILE_MB, DEFAULT_MAX_MB};
        let max_mb = self.max_mb.unwrap_or(DEFAULT_MAX_MB);
        (max_mb > 0)
            .then(|| UndoLimits::from_mb(max_mb, self.max_file_mb.unwrap_or(DEFAULT_MAX_FILE_MB)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use saki_undo::UndoLimits;

    #[test]
    fn undo_limits_come_from_trusted_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("global.toml");
        let local = dir.path().join("local.toml");
        std::fs::write(&global, "[undo]\nmax_mb = 64\nmax_file_mb = 4\n").unwrap();
        std::fs::write(&local, "[undo]\nmax_mb = 0\n").unwrap();
        let paths = [global, local];
        let untrusted = crate::config::load_files(&paths, 1).unwrap();
        assert_eq!(untrusted.undo.limits(), Some(UndoLimits::from_mb(64, 4)));
        assert!(untrusted.ignored.iter().any(|k| k.ends_with(": undo")));
        let trusted = crate::config::load_files(&paths, 2).unwrap();
        assert_eq!(trusted.undo.limits(), None, "max_mb = 0 turns undo off");
        let none = crate::config::load_files(&[], 0).unwrap();
        assert_eq!(none.undo.limits(), Some(UndoLimits::default()));
    }
}
