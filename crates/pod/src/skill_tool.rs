//! The `skill` tool: `{"name"}` returns a skill's `SKILL.md` body and the files beside
//! it; `{"name", "file"}` returns one of those files. The files are read through this
//! tool rather than `read_file` because a person's skills live outside the workspace,
//! where `read_file` does not reach: widening the workspace's roots for them would let
//! every tool (writes and commands too) reach them. Only the skill's own folder is
//! readable this way, text only, and nothing in it is run.

use crate::skills::{Skill, SKILL_MAX_BYTES};
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use saki_tools::common::{failed, parse_args, read_regular_at_most};
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

pub const TOOL_NAME: &str = "skill";
/// Files beside `SKILL.md` named in the result at most.
const LISTED_FILES_MAX: usize = 50;
/// Largest file beside it read.
const FILE_MAX_BYTES: u64 = 256 * 1024;

pub struct SkillTool {
    skills: Arc<Vec<Skill>>,
    description: String,
}

impl SkillTool {
    pub fn new(skills: Arc<Vec<Skill>>) -> Self {
        Self {
            skills,
            description: "Load a skill listed under Skills in the system prompt: returns its instructions and the files beside them. Call it with `file` to read one of those files.".to_owned(),
        }
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
    #[serde(default)]
    file: Option<String>,
}

#[async_trait::async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name"},
                "file": {"type": "string", "description": "A file beside SKILL.md, relative to the skill's folder"}
            },
            "required": ["name"]
        })
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(&self, input: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(input)?;
        let Some(skill) = self.skills.iter().find(|s| s.name == args.name) else {
            let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(failed(format!(
                "no skill named `{}`; skills: {}",
                args.name,
                names.join(", ")
            )));
        };
        match args
            .file
            .as_deref()
            .filter(|f| !f.is_empty() && *f != "SKILL.md")
        {
            Some(file) => read_beside(skill, file),
            None => load(skill),
        }
    }
}

fn text_of(path: &Path, max: u64) -> Result<String, ToolError> {
    let bytes = read_regular_at_most(path, max).map_err(failed)?;
    if saki_tools::common::looks_binary(&bytes) {
        return Err(failed("a binary file; skills are read as text only"));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn load(skill: &Skill) -> Result<ToolOutput, ToolError> {
    let dir = skill.dir.canonicalize().map_err(failed)?;
    let file = skill.file().canonicalize().map_err(failed)?;
    // The file may have been swapped for a link since it was found.
    if !file.starts_with(&dir) {
        return Err(failed("SKILL.md leads outside its folder; not read"));
    }
    let body = crate::frontmatter::parse(&text_of(&file, SKILL_MAX_BYTES)?).body;
    let mut out = format!(
        "# Skill: {} ({})\n\n{body}",
        skill.name,
        skill.dir.display()
    );
    let files = beside(&dir);
    if !files.is_empty() {
        out.push_str(&format!(
            "\n\nFiles beside it (read one with skill {{\"name\": \"{}\", \"file\": PATH}}): {}",
            skill.name,
            files.join(", ")
        ));
    }
    Ok(ToolOutput::new(out).with_summary(format!("skill {}", skill.name)))
}

/// Files in the skill's folder (two levels), by relative path.
fn beside(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walk = ignore::WalkBuilder::new(dir)
        .max_depth(Some(3))
        .follow_links(false)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walk.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(dir) else {
            continue;
        };
        if relative == Path::new("SKILL.md") {
            continue;
        }
        if out.len() == LISTED_FILES_MAX {
            out.push("…".to_owned());
            break;
        }
        out.push(relative.display().to_string());
    }
    out
}

fn read_beside(skill: &Skill, file: &str) -> Result<ToolOutput, ToolError> {
    let dir = skill.dir.canonicalize().map_err(failed)?;
    let path = dir
        .join(file)
        .canonicalize()
        .map_err(|e| failed(format!("{file}: {e}")))?;
    if !path.starts_with(&dir) {
        return Err(failed(format!(
            "`{file}` is outside the skill's folder; only files beside SKILL.md are readable"
        )));
    }
    let text = text_of(&path, FILE_MAX_BYTES)?;
    Ok(ToolOutput::new(text).with_summary(format!("skill {} {file}", skill.name)))
}
