//! Subagent definitions: the built-in `explore` and `general`, and the person's own from
//! `~/.config/saki/agents/*.md` and the workspace's `.saki/agents/*.md` (the workspace's
//! wins). A file's header gives `name` (else the file name), `description`, `tools` and
//! `model`; its body is the agent's system prompt. Claude Code's agent files work as
//! they are: its tool names (`Read`, `Bash`, …) map to saki's, `model: inherit` (or
//! `sonnet` / `opus`) means the session's model and `haiku` the fast model. The engine
//! runs them (`saki-engine`'s `subagent`).

use crate::frontmatter;
use std::path::{Path, PathBuf};

/// Largest agent file read.
const MAX_BYTES: u64 = 64 * 1024;

/// Tools an `explore` agent gets: looking only (its shell runs under plan mode's rule,
/// so only commands proven read-only and in scope run). `lsp` when the session has it.
pub const EXPLORE_TOOLS: &[&str] = &["read_file", "ls", "glob", "grep", "shell", "lsp"];

/// Which tools an agent gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentTools {
    /// Every tool of the session (but the ones a subagent never gets).
    All,
    /// These, by saki name.
    Only(Vec<String>),
}

/// How the agent's calls are approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentMode {
    /// The session's approval mode and grants.
    Session,
    /// Plan mode's rule whatever the session's: looking only.
    ReadOnly,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    pub tools: AgentTools,
    /// `None`: the session's model; `Some("fast")` is resolved by the engine.
    pub model: Option<String>,
    pub mode: AgentMode,
    /// The system prompt (built-ins: `None`, the engine's own).
    pub prompt: Option<String>,
    pub path: Option<PathBuf>,
}

/// The two agents every session has.
pub fn built_in() -> Vec<AgentDef> {
    vec![
        AgentDef {
            name: "explore".into(),
            description: "Read-only research: searches and reads the workspace and reports what it found, with paths and line numbers. Use it for questions that need many searches.".into(),
            tools: AgentTools::Only(EXPLORE_TOOLS.iter().map(|s| (*s).to_owned()).collect()),
            model: None,
            mode: AgentMode::ReadOnly,
            prompt: None,
            path: None,
        },
        AgentDef {
            name: "general".into(),
            description: "A general agent with all tools, under the session's approval mode: for a self-contained task whose steps need not be in this conversation.".into(),
            tools: AgentTools::All,
            model: None,
            mode: AgentMode::Session,
            prompt: None,
            path: None,
        },
    ]
}

/// Claude Code's tool names, as saki's.
fn saki_tool(name: &str) -> Option<&'static str> {
    Some(match name {
        "Read" | "NotebookRead" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" | "NotebookEdit" => "edit",
        "Bash" => "shell",
        "Glob" => "glob",
        "Grep" => "grep",
        "LS" => "ls",
        "WebFetch" => "web_fetch",
        "TodoWrite" => "update_plan",
        "Task" | "Agent" => "agent",
        "Skill" => "skill",
        _ => return None,
    })
}

/// Agent definitions: built-ins, then the person's, then the workspace's (a later one of
/// the same name replaces an earlier one, but never a built-in); problems, for alerts.
pub fn load(global_dir: Option<&Path>, workspace: &Path) -> (Vec<AgentDef>, Vec<String>) {
    let mut agents = built_in();
    let mut problems = Vec::new();
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let sources = global_dir
        .map(|d| (d.join("agents"), false))
        .into_iter()
        .chain(std::iter::once((workspace.join(".saki/agents"), true)));
    for (dir, from_workspace) in sources {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for path in files {
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            if from_workspace && !real.starts_with(&root) {
                problems.push(format!(
                    "{}: leads outside the workspace; ignored",
                    path.display()
                ));
                continue;
            }
            let text = match saki_tools::common::read_regular_at_most(&real, MAX_BYTES) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    problems.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            let def = parse(&path, &text);
            if matches!(def.name.as_str(), "explore" | "general") {
                problems.push(format!(
                    "{}: `{}` is a built-in agent; the file is ignored",
                    path.display(),
                    def.name
                ));
                continue;
            }
            agents.retain(|a| a.name != def.name);
            agents.push(def);
        }
    }
    (agents, problems)
}

/// An agent from its file.
pub fn parse(path: &Path, text: &str) -> AgentDef {
    let parsed = frontmatter::parse(text);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tools = match parsed.list("tools") {
        None => AgentTools::All,
        Some(names) => {
            let mut tools: Vec<String> = Vec::new();
            for name in names {
                // `Bash(git diff:*)`: the tool, whatever the pattern.
                let base = name.split('(').next().unwrap_or("").trim();
                let saki = saki_tool(base)
                    .map(str::to_owned)
                    .unwrap_or_else(|| base.to_owned());
                if !tools.contains(&saki) {
                    tools.push(saki);
                }
            }
            AgentTools::Only(tools)
        }
    };
    let model = match parsed.get("model") {
        None | Some("inherit" | "sonnet" | "opus") => None,
        Some("haiku") => Some("fast".to_owned()),
        Some(other) => Some(other.to_owned()),
    };
    AgentDef {
        name: parsed.get("name").unwrap_or(&stem).to_owned(),
        description: parsed.get("description").unwrap_or("").replace("\\n", " "),
        tools,
        model,
        mode: AgentMode::Session,
        prompt: Some(parsed.body),
        path: Some(path.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_file_works_as_it_is() {
        let def = parse(
            Path::new("/x/reviewer.md"),
            "---\nname: code-reviewer\ndescription: Expert code review.\\nUse after changes.\ntools: Read, Grep, Glob, Bash(git diff:*)\nmodel: haiku\n---\nYou are a senior reviewer.",
        );
        assert_eq!(def.name, "code-reviewer");
        assert_eq!(def.description, "Expert code review. Use after changes.");
        assert_eq!(
            def.tools,
            AgentTools::Only(vec![
                "read_file".into(),
                "grep".into(),
                "glob".into(),
                "shell".into()
            ])
        );
        assert_eq!(def.model.as_deref(), Some("fast"));
        assert_eq!(def.prompt.as_deref(), Some("You are a senior reviewer."));
        let bare = parse(Path::new("/x/helper.md"), "Just a prompt.");
        assert_eq!(
            (bare.name.as_str(), bare.tools, bare.model),
            ("helper", AgentTools::All, None)
        );
    }

    #[test]
    fn workspace_agents_replace_global_ones_but_not_built_ins() {
        let global = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(global.path().join("agents")).unwrap();
        std::fs::create_dir_all(workspace.path().join(".saki/agents")).unwrap();
        std::fs::write(
            global.path().join("agents/a.md"),
            "---\nname: a\ndescription: global\n---\nG",
        )
        .unwrap();
        std::fs::write(
            workspace.path().join(".saki/agents/a.md"),
            "---\nname: a\ndescription: local\n---\nL",
        )
        .unwrap();
        std::fs::write(workspace.path().join(".saki/agents/explore.md"), "X").unwrap();
        let (agents, problems) = load(Some(global.path()), workspace.path());
        let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["explore", "general", "a"]);
        assert_eq!(agents[2].description, "local");
        assert_eq!(problems.len(), 1, "{problems:?}");
    }
}
