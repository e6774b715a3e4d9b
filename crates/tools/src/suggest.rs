//! What a tool says when a path cannot be used: the error, and the workspace files the
//! model most likely meant. Small models make paths up (`/tmp/log` for `tmp.log`,
//! `/etc/nginx/nginx.conf` for `config.json`); a name to copy gets them back on track
//! where a bare "does not exist" makes them guess again.

use crate::workspace::{ScopeError, Workspace};
use saki_llm_worker::ToolError;
use std::path::Path;

/// Files looked at for suggestions; past this the walk stops (an error path stays cheap
/// in a large repository).
const WALK_LIMIT: usize = 5000;
/// A workspace this small is listed whole.
const LIST_ALL_UP_TO: usize = 12;
const MAX_SUGGESTIONS: usize = 3;

/// The tool error for `err`, raised while resolving `requested`, with suggestions.
pub fn scope_failure(workspace: &Workspace, requested: &str, err: ScopeError) -> ToolError {
    let message = err.to_string();
    let hint = match err {
        ScopeError::NotFound(_) | ScopeError::OutOfScope { .. } => hint(workspace, requested),
        ScopeError::Io { .. } => None,
    };
    ToolError::Failed(match hint {
        Some(hint) => format!("{message}. {hint}"),
        None => message,
    })
}

/// "Did you mean …?" or the whole (small) workspace; `None` when nothing fits.
fn hint(workspace: &Workspace, requested: &str) -> Option<String> {
    let files = workspace_files(workspace.root(), 6, WALK_LIMIT);
    if files.is_empty() {
        return None;
    }
    if files.len() <= LIST_ALL_UP_TO {
        return Some(format!("Files in the workspace: {}", files.join(", ")));
    }
    let wanted = file_name(requested);
    let mut scored: Vec<(f64, &String)> = files
        .iter()
        .map(|f| (similarity(&wanted, &file_name(f)), f))
        .filter(|(score, _)| *score >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let names: Vec<&str> = scored
        .iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, f)| f.as_str())
        .collect();
    (!names.is_empty()).then(|| format!("Did you mean: {}?", names.join(", ")))
}

/// Relative paths of the files under `root` as [`crate::listing::project_walk`] sees
/// them (names with control characters skipped), at most `max_depth` directories deep
/// and `limit` files, shallowest first, then by name. Shared with the system prompt's
/// file listing.
pub fn workspace_files(root: &Path, max_depth: usize, limit: usize) -> Vec<String> {
    let mut files: Vec<(usize, String)> = crate::listing::project_walk(root)
        .max_depth(Some(max_depth))
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(limit)
        .filter_map(|e| {
            let relative = e.path().strip_prefix(root).ok()?.display().to_string();
            (!relative.chars().any(char::is_control)).then(|| (e.depth(), relative))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, path)| path).collect()
}

fn file_name(path: &str) -> String {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
        .to_lowercase()
}

/// 1.0 for the same name; high when one contains the other (`log` in `tmp.log`);
/// otherwise the Dice coefficient of character pairs.
fn similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    if a.len() >= 3 && b.len() >= 3 && (a.contains(b) || b.contains(a)) {
        return 0.8;
    }
    let pairs = |s: &str| -> Vec<(char, char)> {
        let chars: Vec<char> = s.chars().collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect()
    };
    let (x, mut y) = (pairs(a), pairs(b));
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let total = x.len() + y.len();
    let mut common = 0;
    for pair in &x {
        if let Some(i) = y.iter().position(|p| p == pair) {
            y.swap_remove(i);
            common += 1;
        }
    }
    2.0 * common as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_names_score_high_and_others_low() {
        assert_eq!(similarity("tmp.log", "tmp.log"), 1.0);
        assert!(similarity("log", "tmp.log") >= 0.8);
        assert!(similarity("confg.json", "config.json") > 0.7);
        assert!(similarity("nginx.conf", "readme.md") < 0.5);
    }

    #[test]
    fn a_small_workspace_is_listed_and_a_large_one_suggested_from() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tmp.log"), "x").unwrap();
        std::fs::write(dir.path().join("keep.txt"), "x").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let err = scope_failure(&ws, "/tmp/log", ScopeError::NotFound("/tmp/log".into()));
        assert_eq!(
            err.to_string(),
            "/tmp/log does not exist. Files in the workspace: keep.txt, tmp.log"
        );
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("file{i}.rs")), "x").unwrap();
        }
        let err = scope_failure(&ws, "/tmp/log", ScopeError::NotFound("/tmp/log".into()));
        assert_eq!(
            err.to_string(),
            "/tmp/log does not exist. Did you mean: tmp.log?"
        );
        let err = scope_failure(&ws, "zzzz", ScopeError::NotFound("zzzz".into()));
        assert_eq!(err.to_string(), "zzzz does not exist");
    }
}
