//! `ls`, `glob` and `grep` over the merged view: the real tree with the overlay's files
//! laid over it. New files appear; a written file is searched in its overlay copy.
//! Same names, descriptions, input schemas and output format as the real tools,
//! whose code does the walking and searching.
//!
//! Paths outside the primary root (other workspace roots) are not covered by the
//! overlay; those calls run the real tool unchanged.

use crate::overlay::OverlayFs;
use ignore::gitignore::GitignoreBuilder;
use ignore::Match;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_tools::common::{failed, parse_args};
use saki_tools::grep::{self, Grep, MAX_MATCHES};
use saki_tools::listing::{glob_matcher, glob_walk, sorted_list, Glob, Ls};
use saki_tools::ScopeError;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub struct OverlayLs {
    overlay: Arc<OverlayFs>,
    real: Ls,
}

pub struct OverlayGlob {
    overlay: Arc<OverlayFs>,
    real: Glob,
}

pub struct OverlayGrep {
    overlay: Arc<OverlayFs>,
    real: Grep,
}

impl OverlayLs {
    pub fn new(overlay: Arc<OverlayFs>) -> Self {
        let real = Ls(overlay.workspace().clone());
        Self { overlay, real }
    }
}

impl OverlayGlob {
    pub fn new(overlay: Arc<OverlayFs>) -> Self {
        let real = Glob(overlay.workspace().clone());
        Self { overlay, real }
    }
}

impl OverlayGrep {
    pub fn new(overlay: Arc<OverlayFs>) -> Self {
        let real = Grep(overlay.workspace().clone());
        Self { overlay, real }
    }
}

#[derive(Deserialize)]
struct LsArgs {
    path: Option<String>,
}

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

/// `path` (default ".") as a canonical real path and its key under the primary root.
fn locate(
    overlay: &OverlayFs,
    path: Option<&str>,
) -> Result<(PathBuf, Option<PathBuf>), ToolError> {
    overlay.locate(path.unwrap_or(".")).map_err(failed)
}

fn not_found(shown: Option<&str>) -> ToolError {
    failed(ScopeError::NotFound(shown.unwrap_or(".").to_owned()))
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

/// The walker skips hidden entries below the search base.
fn hidden(sub: &Path) -> bool {
    sub.components()
        .any(|c| matches!(c, Component::Normal(n) if n.to_string_lossy().starts_with('.')))
}

/// Whether the real walk would skip the new file `key` for `.ignore` / `.gitignore`
/// rules (read through the view, so an ignore file the speculation wrote counts). The
/// nearest rule wins; `.gitignore` counts only in a git repository, as in the walker.
fn ignored(overlay: &OverlayFs, key: &Path) -> bool {
    let root = overlay.root();
    let in_git = root.ancestors().any(|a| a.join(".git").exists());
    let path = root.join(key);
    for dir in key.ancestors().skip(1) {
        for name in [".ignore", ".gitignore"] {
            if name == ".gitignore" && !in_git {
                continue;
            }
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

#[async_trait::async_trait]
impl Tool for OverlayLs {
    fn name(&self) -> &str {
        self.real.name()
    }
    fn rank(&self) -> u32 {
        self.real.rank()
    }
    fn description(&self) -> &str {
        self.real.description()
    }
    fn input_schema(&self) -> Value {
        self.real.input_schema()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: LsArgs = parse_args(input)?;
        let shown = args.path.as_deref();
        let (dir, key) = locate(&self.overlay, shown)?;
        let Some(key) = key else {
            return self.real.execute(input, ctx).await;
        };
        let mut names = BTreeSet::new();
        let real_dir = dir.is_dir();
        if real_dir {
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| failed(format!("cannot list {}: {e}", shown.unwrap_or("."))))?;
            for entry in entries.filter_map(Result::ok) {
                let mut name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                names.insert(name);
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
            if dir.exists() || self.overlay.written_files().contains(&key) {
                return Err(failed(format!(
                    "cannot list {}: not a directory",
                    shown.unwrap_or(".")
                )));
            }
            return Err(not_found(shown));
        }
        Ok(sorted_list(
            names.into_iter().collect(),
            "entries",
            "",
            "[empty directory]".into(),
        ))
    }
}

#[async_trait::async_trait]
impl Tool for OverlayGlob {
    fn name(&self) -> &str {
        self.real.name()
    }
    fn rank(&self) -> u32 {
        self.real.rank()
    }
    fn description(&self) -> &str {
        self.real.description()
    }
    fn input_schema(&self) -> Value {
        self.real.input_schema()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: GlobArgs = parse_args(input)?;
        let shown = args.path.as_deref();
        let (base, key) = locate(&self.overlay, shown)?;
        let Some(key) = key else {
            return self.real.execute(input, ctx).await;
        };
        let matcher = glob_matcher(&args.pattern)?;
        let under = overlay_files_under(&self.overlay, &key);
        let real_base = base.exists();
        if !real_base && under.is_empty() {
            return Err(not_found(shown));
        }
        let mut found: Vec<String> = under
            .into_iter()
            .filter(|(file, sub, is_new)| {
                *is_new
                    && !sub.as_os_str().is_empty()
                    && !hidden(sub)
                    && matcher.is_match(sub)
                    && !ignored(&self.overlay, file)
            })
            .map(|(_, sub, _)| sub.display().to_string())
            .collect();
        if real_base {
            let walked = tokio::task::spawn_blocking(move || glob_walk(&base, &matcher))
                .await
                .map_err(failed)?;
            found.extend(walked);
        }
        // A "new" file the person created meanwhile would be listed twice.
        found.sort();
        found.dedup();
        let empty = format!("no files match {}", args.pattern);
        Ok(sorted_list(found, "files", "; narrow the pattern", empty))
    }
}

#[async_trait::async_trait]
impl Tool for OverlayGrep {
    fn name(&self) -> &str {
        self.real.name()
    }
    fn rank(&self) -> u32 {
        self.real.rank()
    }
    fn description(&self) -> &str {
        self.real.description()
    }
    fn input_schema(&self) -> Value {
        self.real.input_schema()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: GrepArgs = parse_args(input)?;
        let shown = args.path.as_deref();
        let (base, key) = locate(&self.overlay, shown)?;
        let Some(key) = key else {
            return self.real.execute(input, ctx).await;
        };
        let filter = match &args.glob {
            Some(g) => {
                let mut builder = ignore::overrides::OverrideBuilder::new(&base);
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
            return Err(not_found(shown));
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
                || (!hidden(&sub)
                    && filter
                        .as_ref()
                        .is_none_or(|f| f.matched(base.join(&sub), false).is_whitelist())
                    && !ignored(&self.overlay, &file));
            if wanted {
                new_files.push(dir.join(&file));
            }
        }
        let found = tokio::task::spawn_blocking(move || {
            let read_from = |p: &Path| written.get(p).cloned();
            let mut found = if real_base {
                grep::search_view(
                    &base,
                    &root,
                    &args.pattern,
                    args.glob.as_deref(),
                    args.case_insensitive,
                    MAX_MATCHES,
                    &read_from,
                )?
            } else {
                grep::Found::default()
            };
            for file in new_files {
                let more = grep::search(
                    &file,
                    &dir,
                    &args.pattern,
                    None,
                    args.case_insensitive,
                    MAX_MATCHES,
                )?;
                found.merge(more, MAX_MATCHES);
            }
            Ok::<_, ToolError>(found)
        })
        .await
        .map_err(failed)??;
        Ok(grep::render(&found))
    }
}

#[cfg(test)]
mod tests;
