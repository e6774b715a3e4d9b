use super::*;
use saki_llm_worker::ToolExecutionContext;
use serde_json::json;
use std::sync::atomic::AtomicUsize;

struct Scripted {
    answer: Approval,
    asked: AtomicUsize,
}

#[async_trait::async_trait]
impl Approver for Scripted {
    async fn approve(&self, _question: ApprovalQuestion<'_>) -> Approval {
        self.asked.fetch_add(1, Ordering::Relaxed);
        self.answer.clone()
    }
}

fn shell(command: &str) -> ToolCallInfo {
    call("shell", json!({ "command": command }))
}

fn call(name: &str, input: serde_json::Value) -> ToolCallInfo {
    ToolCallInfo {
        name: name.into(),
        arguments: input.to_string(),
        input,
        ctx: ToolExecutionContext {
            call_id: "c".into(),
            batch_id: "b1".into(),
            call_index: 0,
        },
    }
}

type Fixture = (ApprovalPolicy, Arc<Scripted>, SharedMode, tempfile::TempDir);

fn policy(answer: Approval) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
    let approver = Arc::new(Scripted {
        answer,
        asked: AtomicUsize::new(0),
    });
    let mode = SharedMode::new(ApprovalMode::Default);
    let policy = ApprovalPolicy::shared(mode.clone(), Arc::default(), approver.clone(), workspace);
    (policy, approver, mode, dir)
}

#[tokio::test]
async fn a_session_grant_never_covers_reads_outside_or_sensitive_edits() {
    let (policy, approver, mode, _dir) = policy(Approval::Session);
    assert_eq!(
        policy.pre_tool_call(&shell("cat a.txt")).await,
        ToolAction::Allow
    );
    assert_eq!(
        approver.asked.load(Ordering::Relaxed),
        0,
        "read-only, in scope"
    );
    policy.pre_tool_call(&shell("cat /etc/hostname")).await;
    policy.pre_tool_call(&shell("cat /etc/hostname")).await;
    assert_eq!(
        approver.asked.load(Ordering::Relaxed),
        2,
        "asked every time"
    );
    mode.set(ApprovalMode::AutoEdit);
    let git_config = call("edit", json!({"path": ".git/config"}));
    policy.pre_tool_call(&git_config).await;
    policy.pre_tool_call(&git_config).await;
    assert_eq!(approver.asked.load(Ordering::Relaxed), 4);
    let ordinary = call("edit", json!({"path": "src/lib.rs"}));
    assert_eq!(policy.pre_tool_call(&ordinary).await, ToolAction::Allow);
    assert_eq!(approver.asked.load(Ordering::Relaxed), 4);
    mode.set(ApprovalMode::Plan);
    assert!(matches!(
        policy.pre_tool_call(&shell("cat ~/.ssh/id_rsa")).await,
        ToolAction::Deny(reason) if reason.contains("home directory")
    ));
}

#[test]
fn sensitive_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::os::unix::fs::symlink(".git", dir.path().join("g")).unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        "g/config",
        ".GIT/config",
        ".saki/config.toml",
        "sub/.gitattributes",
        ".envrc",
        "sub/.cargo/config.toml",
        ".vscode/tasks.json",
    ] {
        assert!(sensitive_path(&ws, path).is_some(), "{path}");
    }
    for path in [
        "src/main.rs",
        "gitconfig",
        ".github/workflows/ci.yml",
        "sub/config",
    ] {
        assert!(sensitive_path(&ws, path).is_none(), "{path}");
    }
}

#[tokio::test]
async fn a_session_answer_is_not_asked_again_for_the_same_prefix() {
    let (policy, approver, _, _dir) = policy(Approval::Session);
    assert_eq!(
        policy.pre_tool_call(&shell("cargo test")).await,
        ToolAction::Allow
    );
    assert_eq!(
        policy.pre_tool_call(&shell("cargo test -q")).await,
        ToolAction::Allow
    );
    assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
    policy.pre_tool_call(&shell("cargo test && rm x")).await;
    assert_eq!(approver.asked.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn a_denial_carries_the_reason_and_mode_changes_apply_at_once() {
    let (policy, approver, mode, _dir) = policy(Approval::Deny("not now".into()));
    assert_eq!(
        policy.pre_tool_call(&shell("touch x")).await,
        ToolAction::Deny("not now".into())
    );
    mode.set(ApprovalMode::Yolo);
    assert_eq!(
        policy.pre_tool_call(&shell("touch x")).await,
        ToolAction::Allow
    );
    mode.set(ApprovalMode::Plan);
    assert!(matches!(
        policy.pre_tool_call(&shell("touch x")).await,
        ToolAction::Deny(_)
    ));
    assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
    assert_eq!(ApprovalMode::Yolo.next(), ApprovalMode::Plan);
}

fn fetch(url: &str) -> ToolCallInfo {
    call("web_fetch", json!({ "url": url }))
}

#[tokio::test]
async fn web_fetch_is_asked_per_domain_listed_domains_run_in_auto_edit_and_yolo_runs_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut workspace = Workspace::new(dir.path()).unwrap();
    workspace.set_web(crate::web_fetch::WebSettings {
        allowed_domains: vec!["docs.rs".into()],
        ..Default::default()
    });
    let approver = Arc::new(Scripted {
        answer: Approval::Session,
        asked: AtomicUsize::new(0),
    });
    let mode = SharedMode::new(ApprovalMode::Default);
    let policy = ApprovalPolicy::shared(
        mode.clone(),
        Arc::default(),
        approver.clone(),
        Arc::new(workspace),
    );
    let asked = || approver.asked.load(Ordering::Relaxed);
    // default: asked, and "allow for this session" remembers the domain only.
    assert_eq!(
        policy.pre_tool_call(&fetch("https://example.com/a")).await,
        ToolAction::Allow
    );
    assert_eq!(asked(), 1);
    assert_eq!(
        policy.pre_tool_call(&fetch("https://EXAMPLE.com/b")).await,
        ToolAction::Allow
    );
    assert_eq!(asked(), 1, "the domain was granted");
    policy.pre_tool_call(&fetch("https://example.org/")).await;
    assert_eq!(asked(), 2, "another domain is asked about");
    // auto-edit: listed domains run unasked, others are asked.
    mode.set(ApprovalMode::AutoEdit);
    assert_eq!(
        policy.pre_tool_call(&fetch("https://api.docs.rs/x")).await,
        ToolAction::Allow
    );
    assert_eq!(asked(), 2);
    policy.pre_tool_call(&fetch("https://evil.test/")).await;
    assert_eq!(asked(), 3);
    // plan: reading the web is asked about, not denied.
    mode.set(ApprovalMode::Plan);
    policy.pre_tool_call(&fetch("https://plan.test/")).await;
    assert_eq!(asked(), 4);
    // yolo: runs.
    mode.set(ApprovalMode::Yolo);
    assert_eq!(
        policy.pre_tool_call(&fetch("https://any.test/")).await,
        ToolAction::Allow
    );
    assert_eq!(asked(), 4);
}

#[tokio::test]
async fn exec_denies_web_fetch_with_the_way_forward() {
    let dir = tempfile::tempdir().unwrap();
    let policy = ApprovalPolicy::new(
        ApprovalMode::Default,
        Arc::new(DenyWithoutAsking),
        Arc::new(Workspace::new(dir.path()).unwrap()),
    );
    let ToolAction::Deny(reason) = policy.pre_tool_call(&fetch("https://example.com/")).await
    else {
        panic!("not denied")
    };
    assert!(reason.contains("web_fetch.allowed_domains"), "{reason}");
    assert!(reason.contains("example.com"), "{reason}");
}

#[test]
fn an_mcp_call_without_the_sessions_facts_is_a_tool_of_an_unknown_server() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let assessment = assess(&call("mcp__evil__wipe", json!({})), &ws);
    assert_eq!(assessment.class, CallClass::Mcp { auto: false });
    assert!(assessment.reason.unwrap().contains("MCP server"));
    assert!(matches!(
        decide(ApprovalMode::Plan, assessment.class),
        Verdict::Deny(_)
    ));
}

#[tokio::test]
async fn remember_is_an_edit_and_the_asking_tools_run_in_every_mode() {
    let (policy, approver, mode, _dir) = policy(Approval::Deny("no".into()));
    let fact = call("remember", json!({"fact": "use tabs", "scope": "global"}));
    // Asked in default, like an edit, naming where it writes.
    assert_eq!(
        policy.pre_tool_call(&fact).await,
        ToolAction::Deny("no".into())
    );
    assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
    mode.set(ApprovalMode::AutoEdit);
    assert_eq!(policy.pre_tool_call(&fact).await, ToolAction::Allow);
    mode.set(ApprovalMode::Plan);
    assert!(matches!(
        policy.pre_tool_call(&fact).await,
        ToolAction::Deny(_)
    ));
    for name in ["skill", "ask_user", "exit_plan_mode", "agent"] {
        assert_eq!(
            policy.pre_tool_call(&call(name, json!({}))).await,
            ToolAction::Allow,
            "{name}"
        );
    }
    assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
}
