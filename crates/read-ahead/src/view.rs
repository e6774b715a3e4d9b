//! `OverlayView`: the overlay as the file tools' `Fs`. A speculation's tools are the
//! real ones, on a copy of the workspace that sees its files through this view: reads
//! see the overlay's copies laid over the real tree (new files appear, files a command
//! deleted are gone), writes land in the overlay only, and a deletion by a tool waits
//! for the person (the gate makes `delete_file` a boundary; here it is refused).
//!
//! Paths outside the primary root (other workspace roots) are not covered by the
//! overlay: those go to the session's own `Fs`, unchanged, and are never written.

use crate::overlay::OverlayFs;
use ignore::gitignore::GitignoreBuilder;
use ignore::Match;
use saki_llm_worker::ToolError;
use saki_tools::common::failed;
use saki_tools::fs::{DiskFs, Fs, GrepQuery, Kind, Opened, Stat, StopOnDrop};
use saki_tools::grep::{self, Found};
use saki_tools::{Roots, ScopeError};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The overlay over the real tree, as an [`Fs`].
#[derive(Debug)]
pub struct OverlayView {
    overlay: Arc<OverlayFs>,
    /// Where files the overlay does not hold are read: the session's own `Fs`.
    lower: Arc<dyn Fs>,
}

impl OverlayView {
    pub fn new(overlay: Arc<OverlayFs>) -> Self {
        let lower = overlay.workspace().fs().clone();
        Self { overlay, lower }
    }

    /// `path`'s key under the primary root, if it is under it.
    fn key(&self, path: &Path) -> Option<PathBuf> {
        path.strip_prefix(self.overlay.root())
            .ok()
            .map(Path::to_path_buf)
    }

    /// What the view holds at `key`: `Some(Some(stat))` its own (an overlay file, or a
    /// directory only overlay files make), `Some(None)` gone (deleted), `None` the
    /// real tree's.
    fn own(&self, key: &Path) -> Option<Option<Stat>> {
        if self.overlay.is_deleted(key) {
            return Some(None);
        }
        if self.overlay.holds(key) {
            let meta = std::fs::symlink_metadata(self.overlay.dir().join(key)).ok()?;
            return Some(Some(saki_tools::fs::stat_of(&meta)));
        }
        let real = self.overlay.root().join(key);
        if !real.exists() && !overlay_files_under(&self.overlay, key).is_empty() {
            return Some(Some(Stat {
                kind: Kind::Dir,
                len: 0,
            }));
        }
        None
    }

    /// Where a read of `path` goes; `NotFound` when the view says it is gone.
    fn source(&self, path: &Path) -> std::io::Result<Option<PathBuf>> {
        let Some(key) = self.key(path) else {
            return Ok(None);
        };
        if self.overlay.is_deleted(&key) {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        Ok(self
            .overlay
            .holds(&key)
            .then(|| self.overlay.dir().join(key)))
    }
}

#[async_trait::async_trait]
impl Fs for OverlayView {
    fn resolve(&self, roots: &Roots, path: &str) -> Result<PathBuf, ScopeError> {
        // The scope check is the roots'; whether the path exists is the view's.
        let real = roots.resolve_for_write(path)?;
        let Some(key) = self.key(&real) else {
            return roots.resolve(path);
        };
        match self.own(&key) {
            Some(Some(_)) => Ok(real),
            Some(None) => Err(ScopeError::NotFound(path.to_owned())),
            None => roots.resolve(path),
        }
    }

    async fn stat(&self, path: &Path) -> std::io::Result<Option<Stat>> {
        match self.key(path).and_then(|key| self.own(&key)) {
            Some(own) => Ok(own),
            None => self.lower.stat(path).await,
        }
    }

    async fn read(&self, path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
        match self.source(path)? {
            Some(copy) => DiskFs.read(&copy, max).await,
            None => self.lower.read(path, max).await,
        }
    }

    async fn open(&self, path: &Path) -> std::io::Result<Opened> {
        match self.source(path)? {
            Some(copy) => DiskFs.open(&copy).await,
            None => self.lower.open(path).await,
        }
    }

    async fn write(&self, path: &Path, content: &[u8]) -> std::io::Result<()> {
        let shown = path.to_string_lossy();
        let target = self
            .overlay
            .resolve_write(&shown)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))?;
        saki_tools::atomic::write_atomic(&target, content)
    }

    async fn remove_file(&self, _path: &Path) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "a deletion is not run ahead",
        ))
    }

    async fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let Some(key) = self.key(dir) else {
            return self.lower.list_dir(dir).await;
        };
        if self.overlay.is_deleted(&key) {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        let mut names = BTreeSet::new();
        let real_dir = dir.is_dir();
        if real_dir {
            for name in DiskFs.list_dir(dir).await? {
                let bare = name.trim_end_matches('/');
                if !self.overlay.is_deleted(&key.join(bare)) {
                    names.insert(name);
                }
            }
        }
        for (_, sub, _) in overlay_files_under(&self.overlay, &key) {
            let mut parts = sub.components();
            let Some(first) = parts.next() else {
                continue;
            };
            let mut name = first.as_os_str().to_string_lossy().into_owned();
            if parts.next().is_some() {
                name.push('/');
            }
            names.insert(name);
        }
        if !real_dir && names.is_empty() {
            if dir.exists() || self.overlay.holds(&key) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    "not a directory",
                ));
            }
            return Err(std::io::ErrorKind::NotFound.into());
        }
        Ok(names.into_iter().collect())
    }

    async fn glob(
        &self,
        base: &Path,
        matcher: &saki_tools::fs::GlobMatcher,
    ) -> Result<Vec<String>, ToolError> {
        let Some(key) = self.key(base) else {
            return self.lower.glob(base, matcher).await;
        };
        let under = overlay_files_under(&self.overlay, &key);
        let real_base = base.exists();
        if !real_base && under.is_empty() {
            return Err(failed(ScopeError::NotFound(base.display().to_string())));
        }
        let mut found: Vec<String> = under
            .into_iter()
            .filter(|(file, sub, is_new)| {
                *is_new
                    && !sub.as_os_str().is_empty()
                    && !saki_tools::listing::skipped_by_walk(sub)
                    && matcher.is_match(sub)
                    && !ignored(&self.overlay, file)
            })
            .map(|(_, sub, _)| sub.display().to_string())
            .collect();
        if real_base {
            let walked = DiskFs.glob(base, matcher).await?;
            found.extend(
                walked
                    .into_iter()
                    .filter(|sub| !self.overlay.is_deleted(&key.join(sub))),
            );
        }
        // A "new" file the person created meanwhile would be listed twice.
        found.sort();
        found.dedup();
        Ok(found)
    }

    async fn grep(&self, base: &Path, query: &GrepQuery) -> Result<Found, ToolError> {
        let Some(key) = self.key(base) else {
            return self.lower.grep(base, query).await;
        };
        let filter = match &query.glob {
            Some(g) => {
                let mut builder = ignore::overrides::OverrideBuilder::new(base);
                builder
                    .add(g)
                    .map_err(|e| ToolError::InvalidInput(format!("bad glob: {e}")))?;
                Some(
                    builder
                        .build()
                        .map_err(|e| ToolError::InvalidInput(format!("bad glob: {e}")))?,
                )
            }
            None => None,
        };
        let under = overlay_files_under(&self.overlay, &key);
        let real_base = base.exists();
        if !real_base && under.is_empty() {
            return Err(failed(ScopeError::NotFound(base.display().to_string())));
        }
        let root = self.overlay.root().to_path_buf();
        let dir = self.overlay.dir().to_path_buf();
        let mut written = HashMap::new();
        let mut new_files = Vec::new();
        for (file, sub, is_new) in under {
            if !is_new {
                written.insert(root.join(&file), dir.join(&file));
                continue;
            }
            // An explicitly named file is searched whatever the filters say, as in
            // the walker.
            let wanted = sub.as_os_str().is_empty()
                || (!saki_tools::listing::skipped_by_walk(&sub)
                    && filter
                        .as_ref()
                        .is_none_or(|f| f.matched(base.join(&sub), false).is_whitelist())
                    && !ignored(&self.overlay, &file));
            if wanted {
                new_files.push(dir.join(&file));
            }
        }
        let overlay = self.overlay.clone();
        let (base, query) = (base.to_path_buf(), query.clone());
        let stop = StopOnDrop::default();
        let flag = stop.0.clone();
        tokio::task::spawn_blocking(move || {
            let read_from = |p: &Path| written.get(p).cloned();
            let mut found = if real_base {
                let query = GrepQuery {
                    shown_root: root.clone(),
                    ..query.clone()
                };
                grep::search_view(&base, &query, &read_from, &flag)?
            } else {
                Found::default()
            };
            // Lines of files a command deleted are not the view's.
            let before = found.matches.len();
            found
                .matches
                .retain(|(shown, _, _)| !overlay.is_deleted(Path::new(shown)));
            found.total -= before - found.matches.len();
            for file in new_files {
                let in_new_file = GrepQuery {
                    glob: None,
                    shown_root: dir.clone(),
                    ..query.clone()
                };
                let more = grep::search_view(&file, &in_new_file, &|_| None, &flag)?;
                found.merge(more, query.max);
            }
            Ok::<_, ToolError>(found)
        })
        .await
        .map_err(failed)?
    }
}

/// The view as the language servers' `FileView`: the overlay's own text for the files
/// it holds.
impl saki_tools::code_intel::FileView for OverlayView {
    fn text(&self, path: &Path) -> Option<String> {
        let copy = self.source(path).ok()??;
        std::fs::read_to_string(copy).ok()
    }
    fn written(&self) -> Vec<PathBuf> {
        let root = self.overlay.root();
        self.overlay
            .written_files()
            .into_iter()
            .map(|k| root.join(k))
            .collect()
    }
    fn workspace_path(&self, path: &str) -> PathBuf {
        PathBuf::from(self.overlay.workspace_path(path))
    }
}

/// Overlay files under `key` (or `key` itself), relative to it.
fn overlay_files_under(overlay: &OverlayFs, key: &Path) -> Vec<(PathBuf, PathBuf, bool)> {
    overlay
        .overlay_files()
        .into_iter()
        .filter_map(|(file, is_new)| {
            let sub = file.strip_prefix(key).ok()?.to_path_buf();
            Some((file, sub, is_new))
        })
        .collect()
}

/// Whether the real walk would skip the new file `key` for `.ignore` / `.gitignore`
/// rules (read through the view, so an ignore file the speculation wrote counts). The
/// nearest rule wins; `.gitignore` counts in or outside a git repository, as in the
/// walker.
fn ignored(overlay: &OverlayFs, key: &Path) -> bool {
    let root = overlay.root();
    let path = root.join(key);
    for dir in key.ancestors().skip(1) {
        for name in [".ignore", ".gitignore"] {
            let source = overlay.view_path(&dir.join(name));
            if !source.is_file() {
                continue;
            }
            let mut builder = GitignoreBuilder::new(root.join(dir));
            if builder.add(&source).is_some() {
                continue;
            }
            let Ok(rules) = builder.build() else {
                continue;
            };
            match rules.matched_path_or_any_parents(&path, false) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
    }
    false
}

#[cfg(test)]
mod tests;
