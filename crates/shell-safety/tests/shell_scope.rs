#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Which shell commands may run unasked: proven read-only by the classifier *and* in
//! scope (no outside path, no environment). The table is written as an attacker would
//! try to read secrets, plus the everyday reads that must keep running unasked.

use saki_shell_safety::roots::Roots;
use saki_shell_safety::{check_scope, classify, Safety};
use std::fs;

/// `true`: runs without asking (in `plan` and `default`).
const CASES: &[(&str, bool)] = &[
    // Everyday reads inside the workspace.
    ("ls", true),
    ("ls -la", true),
    ("cat README.md", true),
    ("grep -rn x .", true),
    ("grep -rn 'fn main' src", true),
    ("git status", true),
    ("git log --oneline", true),
    ("git diff", true),
    ("head -n 5 src/lib.rs", true),
    ("wc -l src/*.rs", true),
    ("find . -name '*.rs'", true),
    ("rg TODO src", true),
    ("cat README.md > /dev/null", true),
    ("ls 2>/dev/null", true),
    ("cd src && ls", true),
    // Conservative: `..` is checked from the workspace root too, where a failed `cd`
    // would leave the command.
    ("cd src && cat ../README.md", false),
    ("for f in src/*.rs; do wc -l \"$f\"; done", true),
    ("echo $?", true),
    ("x=README.md; cat \"$x\"", true),
    ("sed -n '1,5p' README.md", true),
    ("awk '{print $1}' README.md", true),
    ("jq .name package.json", true),
    // xargs takes its arguments from its input at run time: never unasked.
    ("find . -name '*.rs' | xargs wc -l", false),
    // Words as bash reads them: quotes join, braces expand, a backslash-newline goes.
    ("cat .\"\"./x", false),
    ("cat '.'./x", false),
    ("cat {.,.}./x", false),
    ("cat {a,.}./x", false),
    ("cat .\\\n./x", false),
    ("cat \".\\\n./x\"", false),
    ("cat {README.md,src/lib.rs}", true),
    ("cat .*/x", false),
    ("cat $'\\x2e\\x2e'/x", false),
    ("cat README$'\\x2e'md", false),
    // Words computed at run time.
    ("printf '\\x2e\\x2e/x' | xargs cat", false),
    ("echo Q | tr Q . | xargs cat", false),
    ("d=.; cat $d$d/x", false),
    ("d=.; cat \"$d.\"/x", false),
    ("d=..; cat \"$d\"/x", false),
    ("cat $(echo README.md)", false),
    ("cat \"$(printf ..)/x\"", false),
    ("cat README.md; d=..; cat $d/x", false),
    ("while read f; do cat \"$f\"; done < README.md", false),
    ("for f in $(ls); do cat \"$f\"; done", false),
    ("x=README.md; x=../y; cat \"$x\"", false),
    ("cat $HOME/x", false),
    // git: configuration and other repositories.
    ("git config --list", false),
    ("git config --get-regexp .", false),
    ("git config user.name", false),
    ("git --git-dir=elsewhere status", false),
    ("GIT_DIR=elsewhere git status", false),
    ("env GIT_DIR=elsewhere git status", false),
    // Outside paths, every spelling.
    ("cat ../x", false),
    ("cat /etc/passwd", false),
    ("cat ~/.ssh/id_rsa", false),
    ("cat ~root/.bashrc", false),
    ("tail -n 3 /etc/hosts", false),
    ("awk '{print}' /etc/passwd", false),
    ("sort < /etc/passwd", false),
    ("diff README.md /etc/hosts", false),
    ("grep -r root ..", false),
    ("rg password ../dir", false),
    ("find .. -name id_rsa", false),
    ("git -C ../other log -p", false),
    ("git --git-dir=/tmp/x/.git log", false),
    ("cat \\/etc/passwd", false),
    ("cat '/etc/'passwd", false),
    ("cat /et?/passwd", false),
    ("cat /etc/pass*", false),
    ("cat ../*", false),
    ("cat src/../../x", false),
    ("cd .. && cat x", false),
    ("cd && cat .bashrc", false),
    ("cd - && ls", false),
    ("cd src; cd ../..; ls", false),
    ("grep -f/etc/passwd x README.md", false),
    ("sort --random-source=/etc/shadow README.md", false),
    (
        "awk 'BEGIN { while ((getline l < \"/etc/passwd\") > 0) print l }'",
        false,
    ),
    ("sed -n 'r /etc/passwd' README.md", false),
    ("git show HEAD:../secret", false),
    ("git config --global --list", false),
    ("cat /proc/self/environ", false),
    ("cat /proc/1/cmdline", false),
    ("head -c 100 /dev/sda", false),
    ("cat link-out", false),
    ("cat link-out/secret.txt", false),
    ("ls link-dir/", false),
    ("cat *", false),
    ("grep -R secret .", false),
    ("rg -L secret", false),
    ("find -L . -name x", false),
    ("ls | xargs cat", false),
    // The environment.
    ("env", false),
    ("env -u PATH", false),
    ("printenv", false),
    ("printenv ANTHROPIC_API_KEY", false),
    ("echo $ANTHROPIC_API_KEY", false),
    ("echo \"${OPENAI_API_KEY}\"", false),
    ("echo ${!OPENAI*}", false),
    ("cat <<EOF\n$GEMINI_API_KEY\nEOF", false),
    ("set", false),
    ("export -p", false),
    ("ps eww", false),
    ("ps auxww", false),
    ("pgrep -a saki", false),
    ("awk 'BEGIN { print ENVIRON[\"HOME\"] }'", false),
    ("jq -n env", false),
    ("jq -n '$ENV.HOME'", false),
    ("echo $HOME", false),
    ("test -n \"$SAKI_API_KEY\" && echo set", false),
];

fn workspace() -> (tempfile::TempDir, tempfile::TempDir, Roots) {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(root.join("src/lib.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("README.md"), "# x\n").unwrap();
    fs::write(root.join("package.json"), "{\"name\": \"x\"}").unwrap();
    let ws = Roots::new(root).unwrap();
    (dir, outside, ws)
}

fn runs_unasked(command: &str, ws: &Roots) -> bool {
    classify(command) == Safety::ReadOnly && check_scope(command, ws).in_scope()
}

#[test]
fn commands_run_unasked_only_inside_the_workspace_and_without_the_environment() {
    let (_dir, outside, ws) = workspace();
    let mut wrong = Vec::new();
    // The symlink cases need links; the rest must hold without them too.
    let (plain, linked): (Vec<_>, Vec<_>) = CASES
        .iter()
        .partition(|(c, _)| !c.contains("link-") && !is_runtime(c));
    for (command, expected) in &plain {
        if runs_unasked(command, &ws) != *expected {
            wrong.push(format!("{command:?}: expected {expected}"));
        }
    }
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        ws.root().join("link-out"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.root().join("link-dir")).unwrap();
    for (command, expected) in &linked {
        if runs_unasked(command, &ws) != *expected {
            wrong.push(format!("{command:?}: expected {expected}"));
        }
    }
    assert!(CASES.len() >= 40);
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
}

/// Commands whose verdict depends on whether the workspace links outside.
fn is_runtime(command: &str) -> bool {
    ["cat *", "grep -R", "rg -L", "find -L"]
        .iter()
        .any(|p| command.contains(p))
}

#[test]
fn reading_through_runtime_paths_is_fine_while_no_link_leads_outside() {
    let (_dir, _outside, ws) = workspace();
    for command in ["cat *", "grep -R x ."] {
        assert!(runs_unasked(command, &ws), "{command}");
    }
    assert!(
        !runs_unasked("ls | xargs cat", &ws),
        "xargs reads its words at run time"
    );
    std::os::unix::fs::symlink("src/lib.rs", ws.root().join("inner-link")).unwrap();
    assert!(runs_unasked("cat *", &ws), "a link inside is fine");
    std::os::unix::fs::symlink("/etc", ws.root().join("etc")).unwrap();
    let verdict = check_scope("cat *", &ws);
    assert!(!verdict.in_scope());
    assert!(
        verdict.problems()[0].contains("etc -> /etc"),
        "{:?}",
        verdict.problems()
    );
}

#[test]
fn git_runs_unasked_only_while_the_repository_config_runs_nothing() {
    let (_dir, _outside, ws) = workspace();
    let git = ws.root().join(".git");
    fs::create_dir_all(git.join("hooks")).unwrap();
    fs::write(
        git.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
    )
    .unwrap();
    assert!(runs_unasked("git status", &ws));
    assert!(runs_unasked("cd src && git diff", &ws));
    fs::write(
        git.join("config"),
        "[core]\n\tbare = false\n\tfsmonitor = \"touch pwned\"\n",
    )
    .unwrap();
    let verdict = check_scope("git status", &ws);
    assert!(!verdict.in_scope());
    assert!(verdict.problems()[0].contains("core.fsmonitor"));
    assert!(!runs_unasked("cd src && git log", &ws));
    assert!(runs_unasked("ls", &ws), "other commands are unaffected");
    fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
    fs::write(
        git.join("hooks/post-index-change"),
        "#!/bin/sh\ntouch pwned\n",
    )
    .unwrap();
    assert!(!runs_unasked("git status", &ws));
    // A directory shaped like a repository of its own runs its config, whichever way git
    // is sent there.
    fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
    fs::remove_file(git.join("hooks/post-index-change")).unwrap();
    let evil = ws.root().join("evil");
    for d in ["objects", "refs/heads"] {
        fs::create_dir_all(evil.join(d)).unwrap();
    }
    fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(
        evil.join("config"),
        "[core]\n\tfsmonitor = \"touch pwned\"\n",
    )
    .unwrap();
    for command in [
        "git -C evil status",
        "git --git-dir=evil status",
        "cd evil && git status",
        "GIT_DIR=evil git status",
    ] {
        assert!(!runs_unasked(command, &ws), "{command}");
    }
    assert!(
        runs_unasked("git -C src status", &ws),
        "inside the own repository"
    );
    assert!(runs_unasked("git status", &ws));
    // Flags that make git run configured programs are not read-only at all.
    assert_eq!(classify("git diff --ext-diff"), Safety::Unknown);
    assert_eq!(classify("git log -p --ext-diff"), Safety::Unknown);
    assert_eq!(classify("git show --textconv HEAD"), Safety::Unknown);
    assert_eq!(classify("git -c core.pager=sh log"), Safety::Unknown);
}
