use super::*;

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

#[tokio::test]
async fn facts_are_appended_to_the_file_in_effect() {
    let workspace = tempfile::tempdir().unwrap();
    let global = tempfile::tempdir().unwrap();
    let tool = Remember::new(workspace.path(), Some(global.path().to_path_buf()));
    tool.execute(r#"{"fact": "Use  tabs.", "scope": "project"}"#, ctx())
        .await
        .unwrap();
    tool.execute(r#"{"fact": "Tests: cargo nextest"}"#, ctx())
        .await
        .unwrap();
    let agents = std::fs::read_to_string(workspace.path().join("AGENTS.md")).unwrap();
    assert_eq!(agents, "- Use tabs.\n- Tests: cargo nextest\n");
    tool.execute(
        r#"{"fact": "I prefer short answers", "scope": "global"}"#,
        ctx(),
    )
    .await
    .unwrap();
    let global_md = std::fs::read_to_string(global.path().join("AGENTS.md")).unwrap();
    assert_eq!(global_md, "- I prefer short answers\n");
    let bad = tool
        .execute(r#"{"fact": "x", "scope": "team"}"#, ctx())
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("scope"), "{bad}");
    let report = report(workspace.path(), workspace.path(), Some(global.path()));
    assert!(report.contains("AGENTS.md"), "{report}");
}

#[tokio::test]
async fn a_project_set_up_for_claude_code_gets_its_claude_md() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("CLAUDE.md"), "# Rules").unwrap();
    let tool = Remember::new(workspace.path(), None);
    tool.execute(r#"{"fact": "Run make check"}"#, ctx())
        .await
        .unwrap();
    let claude = std::fs::read_to_string(workspace.path().join("CLAUDE.md")).unwrap();
    assert_eq!(claude, "# Rules\n- Run make check\n");
    assert!(!workspace.path().join("AGENTS.md").exists());
    let no_global = tool
        .execute(r#"{"fact": "x", "scope": "global"}"#, ctx())
        .await
        .unwrap_err();
    assert!(no_global.to_string().contains("global"), "{no_global}");
}
