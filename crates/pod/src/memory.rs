//! Memory: the `remember` tool appends a fact to the project's instruction file or the
//! person's global one, so later sessions start with it in the system prompt; `/memory`
//! ([`report`]) names the instruction files in effect.
//!
//! The project's file is the workspace root's `AGENTS.md`, or its `CLAUDE.md` when that
//! is the one in effect (no `AGENTS.md`, see `instructions::agents_md_paths`), created
//! as `AGENTS.md` when there is neither. The global one is `AGENTS.md` in saki's config
//! directory (`~/.config/saki/AGENTS.md`), the file `agents_md_paths` reads first. A
//! call is a write: the approval policy treats it like an edit (`assess`).

use crate::instructions::{agents_md_paths, AGENTS_MD_FILE_MAX};
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_tools::common::{failed, parse_args};
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const TOOL_NAME: &str = "remember";
/// Longest fact kept (a line of a rules file, not a document).
const FACT_MAX_BYTES: usize = 1_000;

pub struct Remember {
    workspace: PathBuf,
    global_dir: Option<PathBuf>,
}

impl Remember {
    pub fn new(workspace: impl Into<PathBuf>, global_dir: Option<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            global_dir,
        }
    }
}

#[derive(Deserialize)]
struct Args {
    fact: String,
    #[serde(default)]
    scope: Option<String>,
}

/// The file a fact of `scope` goes to.
pub fn target(workspace: &Path, global_dir: Option<&Path>, scope: &str) -> Option<PathBuf> {
    match scope {
        "global" => global_dir.map(|d| d.join("AGENTS.md")),
        _ => {
            let agents = workspace.join("AGENTS.md");
            let claude = workspace.join("CLAUDE.md");
            Some(if !agents.is_file() && claude.is_file() {
                claude
            } else {
                agents
            })
        }
    }
}

#[async_trait::async_trait]
impl Tool for Remember {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn description(&self) -> &str {
        "Save a lasting fact or preference for future sessions: appends it to the project's AGENTS.md (scope project, the default) or the person's global AGENTS.md (scope global). Use it when the person asks you to remember something."
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "One short sentence"},
                "scope": {"type": "string", "enum": ["project", "global"]}
            },
            "required": ["fact"]
        })
    }
    async fn execute(&self, input: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(input)?;
        let fact = args.fact.split_whitespace().collect::<Vec<_>>().join(" ");
        if fact.is_empty() {
            return Err(ToolError::InvalidInput("`fact` is empty".into()));
        }
        if fact.len() > FACT_MAX_BYTES {
            return Err(ToolError::InvalidInput(format!(
                "a fact is one short sentence (at most {FACT_MAX_BYTES} bytes)"
            )));
        }
        let scope = args.scope.as_deref().unwrap_or("project");
        if !matches!(scope, "project" | "global") {
            return Err(ToolError::InvalidInput(format!(
                "scope is `project` or `global`, not `{scope}`"
            )));
        }
        let path = target(&self.workspace, self.global_dir.as_deref(), scope)
            .ok_or_else(|| failed("no global config directory (set HOME or XDG_CONFIG_HOME)"))?;
        append(&path, &fact).map_err(|e| failed(format!("{}: {e}", path.display())))?;
        Ok(ToolOutput::new(format!(
            "Remembered in {}: {fact}\nIt is in the system prompt from the next session on.",
            path.display()
        ))
        .with_summary(format!("{scope}: {}", path.display())))
    }
}

/// Appends `- fact` as a line of its own, creating the file (and its folder) if needed.
/// The file must stay readable whole by the system prompt's cap, so a full one is
/// refused instead of growing past what is read.
fn append(path: &Path, fact: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let old = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(std::io::Error::other("is a symbolic link; not written"))
        }
        Ok(_) => String::from_utf8_lossy(&saki_tools::common::read_regular(path)?).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if old.len() + fact.len() + 3 > AGENTS_MD_FILE_MAX {
        return Err(std::io::Error::other(format!(
            "full: the system prompt reads at most {AGENTS_MD_FILE_MAX} bytes of it; tidy it up first"
        )));
    }
    let mut line = String::new();
    if !old.is_empty() && !old.ends_with('\n') {
        line.push('\n');
    }
    line.push_str(&format!("- {fact}\n"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(line.as_bytes())?;
    file.sync_all()
}

/// `/memory`: the instruction files in effect for `cwd` and where `remember` writes.
pub fn report(workspace: &Path, cwd: &Path, global_dir: Option<&Path>) -> String {
    let paths = agents_md_paths(workspace, cwd, global_dir);
    let mut out = String::new();
    if paths.is_empty() {
        out.push_str("no instruction files in effect (AGENTS.md or CLAUDE.md)");
    } else {
        out.push_str("instruction files in effect (read into the system prompt at session start):");
        for path in &paths {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            out.push_str(&format!("\n  {} ({size} bytes)", path.display()));
        }
    }
    let project = target(workspace, global_dir, "project");
    let global = target(workspace, global_dir, "global");
    out.push_str("\nremember writes to:");
    for (scope, path) in [("project", project), ("global", global)] {
        if let Some(path) = path {
            out.push_str(&format!("\n  {scope}: {}", path.display()));
        }
    }
    out
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
