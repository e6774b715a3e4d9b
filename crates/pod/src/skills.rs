//! Skills: folders holding a `SKILL.md` (the format Claude Code, Codex, Gemini CLI,
//! OpenCode and Goose share). Found under the workspace's `.saki/skills/*/`,
//! `.claude/skills/*/` and `.agents/skills/*/`, and the person's
//! `~/.config/saki/skills/*/` (the first of a name wins, in that order).
//!
//! The header's `name` and `description` are listed in the system prompt, within
//! [`LIST_MAX_BYTES`]; the body is loaded only when the model calls the `skill` tool
//! (`skill_tool.rs`). A skill is text, like AGENTS.md: nothing in its folder is run,
//! and a workspace skill that leads outside the workspace (a symlink) is not read.

use crate::frontmatter;
use std::path::{Path, PathBuf};

/// Largest `SKILL.md` read.
pub const SKILL_MAX_BYTES: u64 = 64 * 1024;
/// Each description in the system prompt is cut here.
pub const DESCRIPTION_MAX_BYTES: usize = 160;
/// The whole list in the system prompt: about 750 tokens. Past it, skills are listed by
/// name only, and past [`LIST_HARD_MAX_BYTES`] only counted; `/skills` shows them all.
pub const LIST_MAX_BYTES: usize = 3_000;
pub const LIST_HARD_MAX_BYTES: usize = 3_600;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The folder holding `SKILL.md` (as found, not canonicalized).
    pub dir: PathBuf,
    pub from_workspace: bool,
}

impl Skill {
    pub fn file(&self) -> PathBuf {
        self.dir.join("SKILL.md")
    }
}

/// Where skills are looked for, in precedence order: the workspace's three folders, then
/// the person's.
pub fn skill_dirs(workspace: &Path, global_dir: Option<&Path>) -> Vec<(PathBuf, bool)> {
    [".saki/skills", ".claude/skills", ".agents/skills"]
        .into_iter()
        .map(|d| (workspace.join(d), true))
        .chain(global_dir.map(|g| (g.join("skills"), false)))
        .collect()
}

/// The skills of the workspace and the person, sorted by name; problems found, for
/// alerts.
pub fn discover(workspace: &Path, global_dir: Option<&Path>) -> (Vec<Skill>, Vec<String>) {
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let mut skills: Vec<Skill> = Vec::new();
    let mut problems = Vec::new();
    for (dir, from_workspace) in skill_dirs(workspace, global_dir) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        found.sort();
        for folder in found {
            let file = folder.join("SKILL.md");
            let Ok(real) = file.canonicalize() else {
                continue;
            };
            if from_workspace && !real.starts_with(&root) {
                problems.push(format!(
                    "{}: leads outside the workspace; ignored",
                    file.display()
                ));
                continue;
            }
            let text = match saki_tools::common::read_regular_at_most(&real, SKILL_MAX_BYTES) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    problems.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            let parsed = frontmatter::parse(&text);
            let fallback = folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = parsed.get("name").unwrap_or(&fallback).to_owned();
            if !valid_name(&name) {
                problems.push(format!(
                    "{}: `{}` is not a skill name (letters, digits, -, _ and .)",
                    file.display(),
                    name.escape_debug()
                ));
                continue;
            }
            if skills.iter().any(|s| s.name == name) {
                continue;
            }
            let description = parsed
                .get("description")
                .map(str::to_owned)
                .or_else(|| {
                    parsed
                        .body
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| l.trim().to_owned())
                })
                .unwrap_or_default();
            skills.push(Skill {
                name,
                description: one_line(&description),
                dir: folder,
                from_workspace,
            });
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, problems)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The system prompt's section listing `skills`, within [`LIST_MAX_BYTES`] (empty when
/// there are none). Byte-stable for the same skills.
pub fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\n# Skills\nInstructions for special tasks. When a task matches one, call the skill tool with its name first and follow what it says.",
    );
    let mut rest = skills.iter();
    for skill in rest.by_ref() {
        let description =
            saki_tools::common::prefix_at_boundary(&skill.description, DESCRIPTION_MAX_BYTES);
        let cut = if description.len() < skill.description.len() {
            "…"
        } else {
            ""
        };
        let line = format!("\n- {}: {description}{cut}", skill.name);
        if out.len() + line.len() > LIST_MAX_BYTES {
            // This one and the rest by name only.
            let mut shown = format!("\n- Also: {}", skill.name);
            let mut left = 0;
            for other in rest.by_ref() {
                if out.len() + shown.len() + other.name.len() + 2 > LIST_HARD_MAX_BYTES {
                    left += 1;
                    continue;
                }
                shown.push_str(", ");
                shown.push_str(&other.name);
            }
            out.push_str(&shown);
            if left > 0 {
                out.push_str(&format!(" (and {left} more)"));
            }
            break;
        }
        out.push_str(&line);
    }
    out
}

/// Lines for `/skills`.
pub fn report(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return "no skills: put SKILL.md files in .saki/skills/NAME/ (or .claude/skills, .agents/skills) or ~/.config/saki/skills/NAME/".to_owned();
    }
    let mut out = format!("{} skills:", skills.len());
    for skill in skills {
        out.push_str(&format!(
            "\n  {} — {} ({})",
            skill.name,
            skill.description,
            skill.file().display()
        ));
    }
    out
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
