//! What every front end does before a session's first action, whatever its settings:
//! repair what a killed saki left, and find the session to continue.

use crate::session::Resume;
use saki_pod::{LoadedSession, SessionStore};

/// Before anything is written: tells the tools where saki keeps its repair records (the
/// data directory), and repairs what an earlier saki killed mid-write left — a file
/// transaction it was applying (an accept, an undo) is rolled back (the person is told
/// which files), its temporary files are removed (first: a transaction stages every file
/// before renaming any, and its temporary files would keep the directories it created
/// from being removed). Returns what the person should be told.
pub fn recover_killed_writes() -> Vec<String> {
    let env = |k: &str| std::env::var(k).ok();
    let Some(data) = saki_tools::state::default_data_dir(&env) else {
        return Vec::new();
    };
    saki_tools::state::set_data_dir(data.clone());
    saki_tools::atomic::clean_stale(&data.join(saki_tools::atomic::INFLIGHT_DIR));
    let rolled_back = saki_read_ahead::recover_applies(&data.join(saki_read_ahead::JOURNAL_DIR));
    rolled_back
        .iter()
        .filter(|r| r.changed_anything())
        .map(ToString::to_string)
        .collect()
}

/// The session `resume` names, loaded (`None` for a new one); `Err` says why it cannot be.
pub fn load_session(
    store: &SessionStore,
    resume: &Resume,
    workspace: &std::path::Path,
) -> Result<Option<LoadedSession>, String> {
    match resume {
        Resume::New => Ok(None),
        Resume::Id(id) => store.load(id).map(Some).map_err(|e| e.to_string()),
        Resume::Last => store
            .latest_for(&workspace.display().to_string())
            .map(Some)
            .map_err(|e| e.to_string()),
    }
}
