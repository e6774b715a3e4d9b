#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki undo`: an `exec` run's shell changes listed, undone, redone; a file the person
//! edited since is named and kept unless `--force`; the session log records each undo.

mod common;

use common::{env_with, Env};
use saki_testkit::{MockServer, Turn};

fn run_exec(env: &Env, server: &MockServer, prompt: &str) {
    env.saki()
        .args([
            "exec",
            "--base-url",
            &server.openai_url(),
            "-m",
            "m",
            "--approval",
            "yolo",
            prompt,
        ])
        .assert()
        .success();
}

fn undo(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = env.saki().arg("undo").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_exec_runs_shell_changes_are_listed_undone_and_redone() {
    let env = env_with(&[("a.txt", "old\n")]);
    let server = MockServer::start().unwrap();
    let command = r#"{"command":"echo new > a.txt && echo made > b.txt && chmod 700 b.txt"}"#;
    server.push(Turn::new().with_tool_call("c1", "shell", command));
    server.push(Turn::text("Done."));
    run_exec(&env, &server, "change things");
    let a = env.ws.join("a.txt");
    let b = env.ws.join("b.txt");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "new\n");

    let (code, out, err) = undo(&env, &["--list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("turn   1  applied") && out.contains("change things"),
        "{out}"
    );
    assert!(out.contains("a.txt, b.txt"), "{out}");
    let (_, json, _) = undo(&env, &["--list", "--json"]);
    let line: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(line["turn"], 1);
    assert_eq!(line["files"], serde_json::json!(["a.txt", "b.txt"]));

    let (code, out, err) = undo(&env, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("reverted turn 1 (change things): a.txt, b.txt"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "old\n");
    assert!(!b.exists());

    let (code, _, err) = undo(&env, &[]);
    assert_eq!(code, 9);
    assert!(err.contains("nothing to undo"), "{err}");

    let (code, out, err) = undo(&env, &["--redo"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("redid turn 1"), "{out}");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "made\n");

    // The person edits a.txt: the undo names it and changes nothing.
    std::fs::write(&a, "mine\n").unwrap();
    let (code, _, err) = undo(&env, &["--last", "--turns", "1"]);
    assert_eq!(code, 9);
    assert!(err.contains("a.txt") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "mine\n");
    assert!(b.exists(), "nothing undone");
    let (code, _, err) = undo(&env, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "old\n");

    let sessions = env.session_files();
    let log = std::fs::read_to_string(&sessions[0]).unwrap();
    assert_eq!(log.matches(r#""type":"undo""#).count(), 3, "{log}");
    assert!(log.contains("[undo] The person reverted the file changes of turn 1"));
    let (code, out, _) = undo(&env, &["--list"]);
    assert_eq!(code, 0);
    assert!(out.contains("undone"), "{out}");
}

#[test]
fn undo_without_a_session_or_with_bad_flags_fails_clearly() {
    let env = env_with(&[]);
    let (code, _, err) = undo(&env, &[]);
    assert_eq!(code, 2);
    assert!(err.contains("no earlier session"), "{err}");
    let (code, _, err) = undo(&env, &["--session", "../../etc/passwd"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = undo(&env, &["--turns", "0"]);
    assert_eq!(code, 2);
    let (code, _, _) = undo(&env, &["--list", "--redo"]);
    assert_eq!(code, 2);
}

#[test]
fn a_session_open_in_another_saki_is_not_undone_from_outside() {
    let env = env_with(&[("a.txt", "old\n")]);
    let server = MockServer::start().unwrap();
    let command = r#"{"command":"echo new > a.txt"}"#;
    server.push(Turn::new().with_tool_call("c1", "shell", command));
    server.push(Turn::text("Done."));
    run_exec(&env, &server, "change a");
    let (code, _, err) = undo(&env, &["--turns", "2"]);
    assert_eq!(code, 9);
    assert!(err.contains("only 1 turn(s) can be undone"), "{err}");
    // Another saki holds the session's lock while it runs.
    let log = std::fs::File::open(&env.session_files()[0]).unwrap();
    log.lock().unwrap();
    let (code, _, err) = undo(&env, &[]);
    assert_eq!(code, 9);
    assert!(
        err.contains("open in another saki") && err.contains("/undo"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "new\n"
    );
    log.unlock().unwrap();
    let (code, _, err) = undo(&env, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "old\n"
    );
}

/// `--force` overrides conflicts, but when no file can be put back at all (here the
/// directory became a symlink, which is never written through) nothing is undone: the
/// turn stays applied and the session log records no undo.
#[test]
fn a_forced_undo_that_restores_nothing_leaves_the_turn_applied() {
    let env = env_with(&[]);
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    std::fs::write(env.ws.join("sub/x.txt"), "x\n").unwrap();
    let server = MockServer::start().unwrap();
    let command = r#"{"command":"echo y > sub/x.txt"}"#;
    server.push(Turn::new().with_tool_call("c1", "shell", command));
    server.push(Turn::text("Done."));
    run_exec(&env, &server, "edit sub");
    let outside = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(env.ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), env.ws.join("sub")).unwrap();

    let (code, _, err) = undo(&env, &["--force"]);
    assert_eq!(code, 9, "{err}");
    assert!(
        err.contains("not undone") && err.contains("sub/x.txt"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let (code, out, err) = undo(&env, &["--list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("turn   1  applied"), "{out}");
    let log = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    assert!(!log.contains(r#""type":"undo""#), "{log}");
}

/// A file a command changed without naming it may be the person's save while it ran
/// (saki cannot tell): `saki undo` names it with the command and writes nothing, the
/// list marks it, and `--force` takes the whole turn back.
#[test]
fn a_file_a_command_changed_without_naming_it_is_undone_only_with_force() {
    let env = env_with(&[
        ("notes.txt", "draft\n"),
        ("gen.sh", "echo generated > notes.txt\n"),
        ("a.txt", "old\n"),
    ]);
    let server = MockServer::start().unwrap();
    let command = r#"{"command":"sh gen.sh && echo new > a.txt"}"#;
    server.push(Turn::new().with_tool_call("c1", "shell", command));
    server.push(Turn::text("Done."));
    run_exec(&env, &server, "generate");
    let notes = env.ws.join("notes.txt");
    let a = env.ws.join("a.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "generated\n");

    let (code, out, err) = undo(&env, &["--list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("needs --force: notes.txt"), "{out}");
    let (_, json, _) = undo(&env, &["--list", "--json"]);
    let line: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(
        line["needs_force"],
        serde_json::json!([{"path": "notes.txt", "command": "sh gen.sh && echo new > a.txt"}])
    );

    let (code, _, err) = undo(&env, &[]);
    assert_eq!(code, 9, "{err}");
    assert!(
        err.contains("notes.txt: changed while `sh gen.sh && echo new > a.txt` ran")
            && err.contains("cannot tell whether the command or you changed it")
            && err.contains("--force")
            && err.contains("cargo fmt"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "generated\n");
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        "new\n",
        "nothing undone"
    );

    let (code, out, err) = undo(&env, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("overwritten (--force): notes.txt"), "{out}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "draft\n");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "old\n");
}
