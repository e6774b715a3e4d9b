//! Helpers shared by the crate's unit tests.

use crate::workspace::Workspace;
use std::sync::Arc;

/// A workspace in a new temporary directory holding `files` (paths and texts).
pub(crate) fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
    (dir, workspace)
}
