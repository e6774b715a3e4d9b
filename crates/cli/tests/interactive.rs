#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki` with no subcommand: what a person types before the UI opens.

mod common;

use common::env_with;
use predicates::prelude::*;

#[test]
fn without_a_terminal_it_points_to_exec() {
    let e = env_with(&[]);
    e.saki()
        .args(["--base-url", "http://127.0.0.1:9/v1", "-m", "m"])
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("needs a terminal").and(predicate::str::contains("saki exec")),
        );
}

#[test]
fn help_lists_the_interactive_flags() {
    let e = env_with(&[]);
    e.saki().arg("--help").assert().success().stdout(
        predicate::str::contains("--no-suggestions")
            .and(predicate::str::contains("--approval"))
            .and(predicate::str::contains("--resume"))
            .and(predicate::str::contains("--fast-model"))
            .and(predicate::str::contains("opens the interactive UI")),
    );
}

#[test]
fn bad_flags_are_named() {
    let e = env_with(&[]);
    e.saki()
        .args(["--approval", "sometimes"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown approval mode `sometimes`",
        ));
    e.saki()
        .args(["--model", "x", "exec", "hi"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}
