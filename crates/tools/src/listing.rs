//! ls and glob.

use crate::common::{failed, parse_args};
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

const MAX_ENTRIES: usize = 500;

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
        let dir = self.0.resolve(&shown).map_err(failed)?;
        let entries =
            std::fs::read_dir(&dir).map_err(|e| failed(format!("cannot list {shown}: {e}")))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| {
                let mut name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                name
            })
            .collect();
        names.sort();
        let total = names.len();
        names.truncate(MAX_ENTRIES);
        let mut out = names.join("\n");
        if total > MAX_ENTRIES {
            out.push_str(&format!(
                "\n[...{} more entries not shown]",
                total - MAX_ENTRIES
            ));
        }
        if total == 0 {
            out = "[empty directory]".into();
        }
        Ok(ToolOutput::new(out).with_summary(format!("{total} entries")))
    }
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
        let base = self
            .0
            .resolve(args.path.as_deref().unwrap_or("."))
            .map_err(failed)?;
        let matcher = globset::GlobBuilder::new(&args.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::InvalidInput(format!("bad glob pattern: {e}")))?
            .compile_matcher();
        let root = base.clone();
        let mut found = tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            for entry in ignore::WalkBuilder::new(&root)
                .build()
                .filter_map(Result::ok)
            {
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                if let Ok(rel) = entry.path().strip_prefix(&root) {
                    if matcher.is_match(rel) {
                        found.push(rel.display().to_string());
                    }
                }
            }
            found
        })
        .await
        .map_err(failed)?;
        found.sort();
        let total = found.len();
        found.truncate(MAX_ENTRIES);
        let mut out = found.join("\n");
        if total > MAX_ENTRIES {
            out.push_str(&format!(
                "\n[...{} more files not shown; narrow the pattern]",
                total - MAX_ENTRIES
            ));
        }
        if total == 0 {
            out = format!("no files match {}", args.pattern);
        }
        Ok(ToolOutput::new(out).with_summary(format!("{total} files")))
    }
}
