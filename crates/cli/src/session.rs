//! Sessions for the command line: where they are kept, and `saki sessions`. Opening and
//! recording them is the engine's (`Engine::ensure_session`, `saki_engine::continue_session`, `Recorder`).

use crate::exit::ExitCode;
pub use saki_engine::{ago, Resume};

/// Where sessions are kept: the engine's.
pub use saki_engine::session_store as store;

/// The system prompt for a new session in `workspace`, without its skills (the engine
/// adds those it offers). Blocking: runs git.
pub fn build_system_prompt(workspace: &std::path::Path) -> String {
    let global_dir = crate::config::global_config_dir(&|k: &str| std::env::var(k).ok());
    let cwd = std::env::current_dir()
        .ok()
        .filter(|c| c.starts_with(workspace))
        .unwrap_or_else(|| workspace.to_path_buf());
    let paths = saki_pod::instructions::agents_md_paths(workspace, &cwd, global_dir.as_deref());
    let instructions = saki_pod::instructions::project_instructions(&paths);
    saki_pod::system_prompt(&saki_pod::WorkspaceFacts::gather(workspace), &instructions)
}

/// The session `resume` names, loaded (`None` for a new one): the engine's.
pub use saki_engine::load_session as load;

/// `saki sessions`: newest first; `--json` prints one metadata object per line.
pub fn list(json: bool) -> ExitCode {
    let store = match store() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::Config;
        }
    };
    let metas = match store.list() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::Internal;
        }
    };
    if json {
        for meta in &metas {
            crate::output::emit(&serde_json::to_value(meta).unwrap_or_default());
        }
    } else if metas.is_empty() {
        eprintln!(
            "no sessions yet (they are kept in {})",
            store.dir().display()
        );
    } else {
        for m in &metas {
            let line = format!(
                "{}  {:>8}  {:<24}  {}  {}",
                m.id,
                ago(m.created),
                m.model,
                m.workspace,
                m.title
            );
            println!("{}", saki_tools::sanitize::sanitize(&line));
        }
    }
    ExitCode::Success
}
