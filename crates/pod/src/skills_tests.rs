use super::*;
use crate::skill_tool::SkillTool;
use saki_llm_worker::{Tool, ToolExecutionContext};
use std::sync::Arc;

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

fn skill(dir: &Path, name: &str, header: &str, body: &str) {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\n{header}\n---\n{body}\n"),
    )
    .unwrap();
}

#[test]
fn skills_come_from_every_compatible_place_and_the_first_of_a_name_wins() {
    let workspace = tempfile::tempdir().unwrap();
    let global = tempfile::tempdir().unwrap();
    let w = workspace.path();
    skill(
        &w.join(".saki/skills"),
        "pdf",
        "name: pdf\ndescription: Fill PDF forms",
        "Use pdftk.",
    );
    skill(
        &w.join(".claude/skills"),
        "claude-one",
        "name: claude-one\ndescription: From Claude Code",
        "B",
    );
    skill(
        &w.join(".agents/skills"),
        "agents-one",
        "description: From .agents",
        "C",
    );
    skill(
        &global.path().join("skills"),
        "pdf",
        "name: pdf\ndescription: global pdf",
        "G",
    );
    skill(
        &global.path().join("skills"),
        "mine",
        "name: mine\ndescription: Mine",
        "M",
    );
    let (skills, problems) = discover(w, Some(global.path()));
    assert!(problems.is_empty(), "{problems:?}");
    let listed: Vec<(&str, &str, bool)> = skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str(), s.from_workspace))
        .collect();
    assert_eq!(
        listed,
        [
            ("agents-one", "From .agents", true),
            ("claude-one", "From Claude Code", true),
            ("mine", "Mine", false),
            ("pdf", "Fill PDF forms", true),
        ]
    );
    let section = prompt_section(&skills);
    assert!(section.contains("\n- pdf: Fill PDF forms"), "{section}");
    assert_eq!(prompt_section(&[]), "");
}

#[cfg(unix)]
#[test]
fn a_workspace_skill_leading_outside_is_not_read() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    skill(
        outside.path(),
        "secret",
        "name: secret\ndescription: s",
        "x",
    );
    std::fs::create_dir_all(workspace.path().join(".saki/skills")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret"),
        workspace.path().join(".saki/skills/secret"),
    )
    .unwrap();
    let (skills, problems) = discover(workspace.path(), None);
    assert!(skills.is_empty());
    assert_eq!(problems.len(), 1);
}

/// The figure the issue asks for: with 20 skills of long descriptions, the base prompt
/// (saki's rules, a full file listing and the skill list) stays under 2,000 tokens.
#[test]
fn twenty_skills_keep_the_base_prompt_under_2000_tokens() {
    let skills: Vec<Skill> = (0..20)
        .map(|i| Skill {
            name: format!("skill-number-{i:02}"),
            description: "Does a long and detailed thing that takes many words to describe, \
                          including when to use it, when not to, and what it needs first. "
                .repeat(3),
            dir: PathBuf::from(format!("/s/{i}")),
            from_workspace: true,
        })
        .collect();
    let facts = crate::WorkspaceFacts {
        cwd: "/home/person/projects/some-repository".into(),
        os: "linux".into(),
        date: "2026-01-01".into(),
        git: Some(("main".into(), false)),
        files: crate::instructions::FileListing {
            shown: (0..40)
                .map(|i| format!("src/module_{i}/file_{i}.rs"))
                .collect(),
            more: 200,
        },
    };
    let base = crate::system_prompt(&facts, "");
    let section = prompt_section(&skills);
    let tokens = crate::estimate_tokens(&(base.clone() + &section));
    assert!(section.len() <= LIST_HARD_MAX_BYTES, "{}", section.len());
    assert!(section.contains("- Also: "), "{section}");
    assert!(tokens <= 2_000, "{tokens} tokens");
    // The measured figure, for the notes.
    eprintln!(
        "base prompt: {} tokens without skills, {tokens} with 20 (list {} bytes)",
        crate::estimate_tokens(&base),
        section.len()
    );
}

#[tokio::test]
async fn the_skill_tool_loads_the_body_and_files_beside_it_only() {
    let global = tempfile::tempdir().unwrap();
    let dir = global.path().join("skills");
    skill(
        &dir,
        "pdf",
        "name: pdf\ndescription: Fill PDF forms",
        "Run scripts/fill.py.",
    );
    std::fs::create_dir_all(dir.join("pdf/scripts")).unwrap();
    std::fs::write(dir.join("pdf/scripts/fill.py"), "print('fill')\n").unwrap();
    std::fs::write(global.path().join("secret.txt"), "nope").unwrap();
    let (skills, _) = discover(
        &tempfile::tempdir().unwrap().path().join("w"),
        Some(global.path()),
    );
    let tool = SkillTool::new(Arc::new(skills));
    let out = tool.execute(r#"{"name": "pdf"}"#, ctx()).await.unwrap();
    assert!(
        out.content.contains("Run scripts/fill.py."),
        "{}",
        out.content
    );
    assert!(!out.content.contains("description:"), "{}", out.content);
    assert!(out.content.contains("scripts/fill.py"), "{}", out.content);
    let file = tool
        .execute(r#"{"name": "pdf", "file": "scripts/fill.py"}"#, ctx())
        .await
        .unwrap();
    assert_eq!(file.content, "print('fill')\n");
    let escape = tool
        .execute(r#"{"name": "pdf", "file": "../../secret.txt"}"#, ctx())
        .await
        .unwrap_err();
    assert!(escape.to_string().contains("outside"), "{escape}");
    let unknown = tool
        .execute(r#"{"name": "nope"}"#, ctx())
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("skills: pdf"), "{unknown}");
}
