use super::*;
use crate::shell::Shell;
use crate::ShellRuntime;
use saki_sandbox::shell_env::ShellEnvConfig;
use std::io::Read;
use std::time::Duration;

fn workspace(dir: &std::path::Path) -> Arc<Workspace> {
    let mut ws = Workspace::new(dir).unwrap();
    let runtime = ShellRuntime::new(&ShellEnvConfig::default(), &[]).unwrap();
    ws.set_shell_runtime(Arc::new(runtime));
    Arc::new(ws)
}

fn ctx(id: &str) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: id.into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

async fn run(tool: &dyn Tool, input: Value) -> Result<String, ToolError> {
    tool.execute(&input.to_string(), ctx("c"))
        .await
        .map(|o| o.content)
}

#[test]
fn unread_output_is_bounded_and_says_what_it_dropped() {
    let mut unread = Unread {
        cap: 4,
        ..Unread::default()
    };
    unread.push(b"abcdef");
    assert_eq!(unread.take(), ("cdef".to_owned(), 2));
    assert_eq!(unread.take(), (String::new(), 0));
    assert_eq!(
        render("bg1", "x", 2, Some(Ended::Exit(3))),
        "[...2 earlier bytes of output dropped...]\nx\n[bg1 ended: exit code 3]"
    );
}

#[tokio::test]
async fn a_background_command_reports_its_output_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let shell = Shell(ws.clone());
    // It waits for a file the test writes, so the first look surely finds it running.
    let started = run(
        &shell,
        json!({"command": "echo first; while [ ! -e go ]; do sleep 0.01; done; echo second; exit 3",
               "background": true}),
    )
    .await
    .unwrap();
    assert!(started.contains("bg1"), "{started}");
    let output = ShellOutput(ws.clone());
    let kill = ShellKill(ws.clone());
    let list = ws.shell_runtime().unwrap().background().list();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].ended, None);
    std::fs::write(dir.path().join("go"), "").unwrap();
    // The job's waiter sets the end; await it through the registry's own handle.
    let waiter = {
        let jobs = ws.shell_runtime().unwrap().background();
        let mut map = jobs.lock();
        let job = map.get_mut(&1).unwrap();
        std::mem::replace(&mut job.waiter, tokio::spawn(async {}))
    };
    waiter.await.unwrap();
    let text = run(&output, json!({"id": "bg1"})).await.unwrap();
    assert!(text.contains("first\n"), "{text}");
    assert!(text.contains("second\n"), "{text}");
    assert!(text.ends_with("[bg1 ended: exit code 3]"), "{text}");
    // Read once after it ended, it is forgotten.
    assert!(run(&output, json!({"id": "bg1"})).await.is_err());
    assert!(run(&kill, json!({"id": "bg9"})).await.is_err());
}

#[tokio::test]
async fn at_most_the_limit_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    ws.shell_runtime().unwrap().background().set_limit(1);
    let shell = Shell(ws.clone());
    let bg = json!({"command": "sleep 1000", "background": true});
    run(&shell, bg.clone()).await.unwrap();
    let refused = run(&shell, bg.clone()).await.unwrap_err().to_string();
    assert!(refused.contains("at most 1"), "{refused}");
    let killed = run(&ShellKill(ws.clone()), json!({"id": "bg1"}))
        .await
        .unwrap();
    assert!(killed.ends_with("[bg1 killed]"), "{killed}");
    run(&shell, bg).await.unwrap();
}

/// Every process a background command started, also one it put in the background
/// itself, is gone when the session's runtime is dropped: the FIFO they hold open for
/// writing reports end of file only once no process holds it.
#[tokio::test]
async fn no_process_outlives_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("alive");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let ws = workspace(dir.path());
    let shell = Shell(ws.clone());
    for _ in 0..2 {
        run(
            &shell,
            json!({"command": "exec 3>alive; sleep 1000 & sleep 1000", "background": true}),
        )
        .await
        .unwrap();
    }
    // Opening the read end waits for a writer; reading waits until none is left.
    let (opened_tx, opened) = tokio::sync::oneshot::channel();
    let reader = tokio::task::spawn_blocking(move || {
        let mut f = std::fs::File::open(&fifo).unwrap();
        let _ = opened_tx.send(());
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).unwrap();
    });
    let runtime = ws.shell_runtime().unwrap().clone();
    assert_eq!(runtime.background().list().len(), 2);
    // The commands run before the session ends (a command killed before it opened the
    // FIFO would leave the reader waiting for a writer that never comes).
    tokio::time::timeout(Duration::from_secs(60), opened)
        .await
        .expect("no background command opened the FIFO")
        .unwrap();
    drop(shell);
    drop(ws);
    drop(runtime);
    // A bound so a failure fails rather than hangs; nothing waits on a clock otherwise.
    tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("a background process survived the session")
        .unwrap();
}
