//! ls and glob.

use crate::common::{failed, parse_args};
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

pub const MAX_ENTRIES: usize = 500;

/// One name per line, sorted, capped at [`MAX_ENTRIES`] with a notice naming the rest.
pub fn sorted_list(mut names: Vec<String>, what: &str, hint: &str, empty: String) -> ToolOutput {
    names.sort();
    let total = names.len();
    if total == 0 {
        return ToolOutput::new(empty).with_summary(format!("0 {what}"));
    }
    names.truncate(MAX_ENTRIES);
    let mut out = names.join("\n");
    if total > MAX_ENTRIES {
        out.push_str(&format!(
            "\n[...{} more {what} not shown{hint}]",
            total - MAX_ENTRIES
        ));
    }
    ToolOutput::new(out).with_summary(format!("{total} {what}"))
}

/// The matcher `glob` uses: `*` does not cross `/`.
pub fn glob_matcher(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    Ok(globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::InvalidInput(format!("bad glob pattern: {e}")))?
        .compile_matcher())
}

/// Hidden directories that hold a version control system's store, installed
/// dependencies or caches: never the project's own text, often large, and not always
/// in `.gitignore`.
#[rustfmt::skip]
const STORE_DIRS: &[&str] = &[
    ".git", ".hg", ".svn", ".venv", ".tox", ".nox", ".cache", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".npm", ".yarn", ".pnpm-store", ".gradle",
    ".terraform", ".next", ".nuxt", ".svelte-kit", ".angular", ".parcel-cache", ".turbo",
    ".direnv",
];

/// A walk of `base` close to what `git ls-files` sees: `.gitignore` respected (in a tree
/// outside git too: what it names, such as `.env`, the person keeps out of the
/// project), dotfiles walked, [`STORE_DIRS`] skipped. The one walk behind the file listing, `glob` and
/// `grep`, so that a file the model is shown is a file it can find: the value asked
/// about is often in `.env`, the CI setup in `.github/`.
pub fn project_walk(base: &std::path::Path) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(base);
    walk.hidden(false).require_git(false).filter_entry(|e| {
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        e.depth() == 0 || !skipped_entry(e.file_name(), is_dir)
    });
    walk
}

/// Whether [`project_walk`] skips an entry named `name`. A worktree's `.git` is a file.
fn skipped_entry(name: &std::ffi::OsStr, is_dir: bool) -> bool {
    let name = name.to_str().unwrap_or_default();
    name == ".git" || (is_dir && STORE_DIRS.contains(&name))
}

/// Whether [`project_walk`] from a base skips the file at `sub` below it (for a file
/// the walk cannot see yet, such as one only a speculation's overlay holds).
pub fn skipped_by_walk(sub: &std::path::Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = sub.iter().collect();
    parts
        .iter()
        .enumerate()
        .any(|(i, name)| skipped_entry(name, i + 1 < parts.len()))
}

/// Files under `base` ([`project_walk`]) whose path relative to `base` matches, ending
/// early with what it found once `stop` is set (the caller is gone, as for
/// [`crate::grep::search_view`]). Blocking.
pub fn glob_walk(
    base: &std::path::Path,
    matcher: &globset::GlobMatcher,
    stop: &std::sync::atomic::AtomicBool,
) -> Vec<String> {
    let mut found = Vec::new();
    for entry in project_walk(base).build().filter_map(Result::ok) {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(base) {
            if matcher.is_match(rel) {
                found.push(rel.display().to_string());
            }
        }
    }
    found
}

pub struct Ls(pub Arc<Workspace>);
pub struct Glob(pub Arc<Workspace>);

#[derive(Deserialize)]
struct LsArgs {
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for Ls {
    fn name(&self) -> &str {
        "ls"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn read_only(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "List a directory (default: the workspace root). Directories end with /."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: LsArgs = parse_args(input)?;
        let shown = args.path.unwrap_or_else(|| ".".into());
        let path = self
            .0
            .resolve(&shown)
            .map_err(|e| crate::suggest::scope_failure(&self.0, &shown, e))?;
        let fs = self.0.fs();
        let gone = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let meta = fs
            .stat(&path)
            .await
            .and_then(|s| s.ok_or_else(gone))
            .map_err(|e| failed(format!("cannot list {shown}: {e}")))?;
        if meta.kind == crate::fs::Kind::File {
            return Ok(describe_file(fs.as_ref(), &path, &shown, meta.len).await);
        }
        list_dir(fs.as_ref(), &path, &shown).await
    }
}

/// A directory's entries, sorted and capped; directories end with `/`.
pub async fn list_dir(
    fs: &dyn crate::fs::Fs,
    dir: &std::path::Path,
    shown: &str,
) -> Result<ToolOutput, ToolError> {
    let names = fs
        .list_dir(dir)
        .await
        .map_err(|e| failed(format!("cannot list {shown}: {e}")))?;
    Ok(sorted_list(
        names,
        "entries",
        "",
        "[empty directory]".into(),
    ))
}

/// Files up to this size have their lines counted when `ls` names them.
const COUNT_LINES_UP_TO: u64 = 8 * 1024 * 1024;

/// What `ls` says for a regular file, as the shell's `ls FILE` would name it; models ask
/// `ls` about a file to learn its size or length.
async fn describe_file(
    fs: &dyn crate::fs::Fs,
    path: &std::path::Path,
    shown: &str,
    size: u64,
) -> ToolOutput {
    let bytes = match size <= COUNT_LINES_UP_TO {
        true => fs.read(path, COUNT_LINES_UP_TO).await.ok(),
        false => None,
    };
    let lines = bytes.map(|bytes| {
        let newlines = bytes.iter().filter(|b| **b == b'\n').count();
        newlines + usize::from(bytes.last().is_some_and(|b| *b != b'\n'))
    });
    // The line count first: asked "how many lines", small models take the first number.
    let detail = match lines {
        Some(1) => format!("1 line, {size} bytes"),
        Some(n) => format!("{n} lines, {size} bytes"),
        None => format!("{size} bytes"),
    };
    ToolOutput::new(format!("{shown} (a file: {detail})"))
}

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn read_only(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "Find files by glob pattern (e.g. **/*.rs), respecting .gitignore. Paths are relative to the search directory."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "Directory to search (default: workspace root)"}
        }, "required": ["pattern"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: GlobArgs = parse_args(input)?;
        let requested = args.path.as_deref().unwrap_or(".");
        let base = self
            .0
            .resolve(requested)
            .map_err(|e| crate::suggest::scope_failure(&self.0, requested, e))?;
        let matcher = glob_matcher(&args.pattern)?;
        let found = self.0.fs().glob(&base, &matcher).await?;
        let empty = format!("no files match {}", args.pattern);
        let total = found.len();
        let mut output = sorted_list(found, "files", "; narrow the pattern", empty);
        // Ended on its count, as a search is: asked how many, a small model copies it.
        if total > 0 {
            output.content.push_str(&match total {
                1 => "\n[1 file]".to_owned(),
                n => format!("\n[{n} files]"),
            });
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_walk_skips_stores_and_a_worktrees_git_file() {
        for sub in [
            ".git",
            ".git/config",
            ".venv/lib/x.py",
            "src/.mypy_cache/a.json",
        ] {
            assert!(skipped_by_walk(Path::new(sub)), "{sub}");
        }
        for sub in [
            ".env",
            ".github/ci.yml",
            "src/.secret.rs",
            ".venv",
            "a/.cache",
        ] {
            assert!(
                !skipped_by_walk(Path::new(sub)),
                "{sub}: a file of that name"
            );
        }
    }
}
