#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` on a small local model, at a turn's end and in its rewrites: a question
//! about which files is searched even after one file was read, a script the request
//! asks to run is run, a name renamed everywhere is renamed in every file, a removal of
//! more than the request points to is narrowed, a change keeps the file's blank lines,
//! "a script NAME" is a file to create, and the module a failing test imports is
//! asked for when the turn changed nothing, a word replaced is replaced keeping its
//! capital, a request for a directory's files is answered from its listing, and one
//! for how many files of a kind there are from a glob that counts them; a request to
//! ignore something in git changes the .gitignore.

mod common;

use common::{edit_call, env_with, items, llamacpp, text_call};
use saki_testkit::{MockServer, Turn};

fn run(server: &MockServer, e: &common::Env, prompt: &str) -> Vec<serde_json::Value> {
    common::exec_on_llamacpp(server, e, prompt)
}

fn file(e: &common::Env, name: &str) -> String {
    std::fs::read_to_string(e.ws.join(name)).unwrap()
}

/// The output of the first call of `tool` in `events`.
fn output_of<'a>(events: &'a [serde_json::Value], tool: &str) -> &'a str {
    let results = items(events, "tool_result");
    let result = results
        .iter()
        .find(|r| r["name"] == tool)
        .unwrap_or_else(|| panic!("no {tool} call"));
    result["output"].as_str().unwrap()
}

/// The turn's last answer.
fn last_answer(events: &[serde_json::Value]) -> &str {
    items(events, "assistant_message").last().unwrap()["text"]
        .as_str()
        .unwrap()
}

#[test]
fn a_question_about_which_files_is_searched_after_one_file_was_read() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(text_call(
        "read_file",
        serde_json::json!({"path": "app/jobs.py"}),
    )));
    server.push(Turn::text("app/jobs.py"));
    server.push(Turn::text("app/jobs.py and app/mail.py."));
    let e = env_with(&[
        ("app/jobs.py", "# TODO: retry\ndef run():\n    pass\n"),
        ("app/mail.py", "def send():\n    pass  # TODO: smtp\n"),
        ("app/models.py", "class User:\n    pass\n"),
    ]);
    let events = run(&server, &e, "Which files have TODO comments?");
    let output = output_of(&events, "grep");
    assert!(
        output.contains("app/jobs.py") && output.contains("app/mail.py"),
        "{output}"
    );
    assert_eq!(last_answer(&events), "app/jobs.py and app/mail.py.");
}

#[test]
fn a_script_the_request_asks_to_run_is_run_when_the_model_only_read_it() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(text_call(
        "read_file",
        serde_json::json!({"path": "checks.py"}),
    )));
    server.push(Turn::text("0 checks fail."));
    server.push(Turn::text("1 check fails."));
    let e = env_with(&[("checks.py", "print(3, 'passed,', 1, 'failed')\n")]);
    let out = e.exec_llamacpp(
        &server.openai_url(),
        &["--json", "--approval", "yolo"],
        "Run checks.py and tell me how many checks fail.",
    );
    let events = common::events(&out.stdout);
    let calls = items(&events, "tool_call");
    let shell = calls.iter().find(|c| c["name"] == "shell").expect("a run");
    assert_eq!(shell["arguments"], r#"{"command":"python3 checks.py"}"#);
    let results = items(&events, "tool_result");
    let ran = results.iter().find(|r| r["name"] == "shell").unwrap();
    assert!(
        ran["output"]
            .as_str()
            .unwrap()
            .contains("3 passed, 1 failed"),
        "{ran}"
    );
}

#[test]
fn a_name_renamed_everywhere_is_renamed_in_each_file_that_uses_it() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "config.py",
        "MAX_USERS = 50",
        "MAX_MEMBERS = 50",
    )));
    // The model's edit becomes the rename made in all of config.py (no rewrite asked).
    server.push(Turn::text("Renamed."));
    // After saki's edit of app.py.
    server.push(Turn::text("Renamed in config.py and app.py."));
    let e = env_with(&[
        ("config.py", "MAX_USERS = 50\nTIMEOUT = 10\n"),
        (
            "app.py",
            "from config import MAX_USERS\n\nprint(MAX_USERS, 'MAX_USERS_X')\n",
        ),
    ]);
    run(&server, &e, "Rename MAX_USERS to MAX_MEMBERS everywhere.");
    assert_eq!(file(&e, "config.py"), "MAX_MEMBERS = 50\nTIMEOUT = 10\n");
    assert_eq!(
        file(&e, "app.py"),
        "from config import MAX_MEMBERS\n\nprint(MAX_MEMBERS, 'MAX_USERS_X')\n"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_removal_of_more_than_the_request_points_to_is_narrowed() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call("main.py", "print('debug:', x)\n", "")));
    // The rewrite drops the last print as well.
    server.push(Turn::text("```python\nx = 41\nx += 1\n```"));
    server.push(Turn::text("Removed the debug print."));
    let e = env_with(&[("main.py", "x = 41\nprint('debug:', x)\nx += 1\nprint(x)\n")]);
    run(&server, &e, "Remove the debug print from main.py.");
    assert_eq!(file(&e, "main.py"), "x = 41\nx += 1\nprint(x)\n");
}

#[test]
fn a_change_keeps_the_blank_lines_it_is_not_about() {
    const CLIENT: &str = "import urllib.request\n\nBASE = 'http://localhost:5000'\n\n\ndef get(path):\n    return BASE + path\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "client.py",
        "http://localhost:5000",
        "https://api.shop.com",
    )));
    server.push(Turn::text(
        "```python\nimport urllib.request\n\nBASE = 'https://api.shop.com'\n\ndef get(path):\n    return BASE + path\n```",
    ));
    server.push(Turn::text("Changed."));
    let e = env_with(&[("client.py", CLIENT)]);
    run(
        &server,
        &e,
        "Change the API URL to https://api.shop.com in client.py.",
    );
    assert_eq!(
        file(&e, "client.py"),
        CLIENT.replace("http://localhost:5000", "https://api.shop.com")
    );
}

#[test]
fn a_script_named_after_its_kind_is_created() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("You can count the lines with wc -l."));
    // The turn's end asks for the new file's text.
    server.push(Turn::text(
        "```python\nprint(len(open('data.txt').readlines()))\n```",
    ));
    server.push(Turn::text("count.py prints the number of lines."));
    let e = env_with(&[("data.txt", "a\nb\n")]);
    run(
        &server,
        &e,
        "Create a script count.py that prints the number of lines in data.txt.",
    );
    assert_eq!(
        file(&e, "count.py"),
        "print(len(open('data.txt').readlines()))\n"
    );
    assert_eq!(file(&e, "data.txt"), "a\nb\n");
}

#[test]
fn the_module_a_failing_test_imports_is_rewritten_when_the_turn_changed_nothing() {
    const TEST: &str =
        "from lists import first_n\n\nassert first_n([1, 2, 3], 2) == [1, 2]\nprint('ok')\n";
    let server = llamacpp(494_032_768);
    // The model changes the test, which is the check: refused.
    server.push(Turn::text(edit_call("test_lists.py", "2) ==", "1) ==")));
    server.push(Turn::text("Fixed."));
    // The turn's end asks for the module the test imports.
    server.push(Turn::text(
        "```python\ndef first_n(xs, n):\n    return xs[:n]\n```",
    ));
    server.push(Turn::text("first_n now returns n items."));
    let e = env_with(&[
        ("lists.py", "def first_n(xs, n):\n    return xs[:n - 1]\n"),
        ("test_lists.py", TEST),
    ]);
    run(&server, &e, "python3 test_lists.py fails. Fix it.");
    assert_eq!(file(&e, "test_lists.py"), TEST);
    assert_eq!(
        file(&e, "lists.py"),
        "def first_n(xs, n):\n    return xs[:n]\n"
    );
    let asked = server.requests()[2].body["messages"].to_string();
    assert!(asked.contains("xs[:n - 1]"), "{asked}");
}

const LISTS: &str = "def first_n(xs, n):\n    return xs[:n - 1]\n";
const TEST_LISTS: &str =
    "from lists import first_n\n\nassert first_n([1, 2, 3], 2) == [1, 2]\nprint('ok')\n";

/// "python3 test_lists.py fails. Fix it." in yolo, the model answering in words only:
/// the turn's events. `fresh` is the module's text written from the test.
fn fixed_from_test(
    fresh: &str,
    last: &[&str],
) -> (MockServer, common::Env, Vec<serde_json::Value>) {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("I cannot see the bug."));
    // The module the test imports, asked for at the turn's end: back as it was.
    server.push(Turn::text(format!("```python\n{LISTS}```")));
    // Asked for anew from the test alone.
    server.push(Turn::text(format!("```python\n{fresh}```")));
    server.push(Turn::text("I rewrote lists.py."));
    for answer in last {
        server.push(Turn::text(*answer));
    }
    let e = env_with(&[("lists.py", LISTS), ("test_lists.py", TEST_LISTS)]);
    let out = e.exec_llamacpp(
        &server.openai_url(),
        &["--json", "--approval", "yolo"],
        "python3 test_lists.py fails. Fix it.",
    );
    let events = common::events(&out.stdout);
    (server, e, events)
}

#[test]
fn a_module_written_from_its_test_is_kept_when_the_test_then_passes() {
    let fresh = "def first_n(lst, n):\n    return lst[:n]\n";
    let (server, e, events) = fixed_from_test(fresh, &["It passes now."]);
    assert_eq!(file(&e, "lists.py"), fresh);
    assert_eq!(file(&e, "test_lists.py"), TEST_LISTS);
    let asked = server.requests()[2].body["messages"].to_string();
    assert!(
        asked.contains("Write lists.py so that test_lists.py passes") && !asked.contains("n - 1"),
        "{asked}"
    );
    let calls = items(&events, "tool_call");
    let shell = calls
        .iter()
        .find(|c| c["name"] == "shell")
        .expect("the test ran");
    assert_eq!(shell["arguments"], r#"{"command":"python3 test_lists.py"}"#);
    assert_eq!(server.requests().len(), 5);
}

#[test]
fn a_module_written_from_its_test_is_put_back_when_the_test_still_fails() {
    let wrong = "def first_n(lst, n):\n    return lst[:n + 1]\n";
    let (server, e, events) = fixed_from_test(wrong, &["It fails.", "The fix was not found."]);
    assert_eq!(file(&e, "lists.py"), LISTS);
    let results = items(&events, "tool_result");
    let ran = results.iter().find(|r| r["name"] == "shell").unwrap();
    assert!(
        ran["output"].as_str().unwrap().contains("AssertionError"),
        "{ran}"
    );
    assert_eq!(server.requests().len(), 6);
}

#[test]
fn a_word_the_model_did_not_replace_is_replaced_keeping_its_capital() {
    const NOTES: &str = "Teh meeting is at noon.\nBring teh slides.\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "notes.md",
        "teh slides",
        "teh slides",
    )));
    // The rewrite gives the file back unchanged.
    server.push(Turn::text(format!("```\n{NOTES}```")));
    server.push(Turn::text("Nothing to change."));
    server.push(Turn::text("Replaced teh with the."));
    let e = env_with(&[("notes.md", NOTES)]);
    run(
        &server,
        &e,
        "Replace teh with the in notes.md, keeping the capital at the start.",
    );
    assert_eq!(
        file(&e, "notes.md"),
        "The meeting is at noon.\nBring the slides.\n"
    );
}

#[test]
fn a_request_for_a_directorys_files_is_answered_from_its_listing() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(text_call(
        "read_file",
        serde_json::json!({"path": "src/a.py"}),
    )));
    server.push(Turn::text("src/a.py"));
    server.push(Turn::text("a.py, b.py and c.js."));
    let e = env_with(&[
        ("src/a.py", "A = 1\n"),
        ("src/b.py", "B = 2\n"),
        ("src/c.js", "let c;\n"),
        ("setup.py", "pass\n"),
    ]);
    let events = run(&server, &e, "What files are in src?");
    let output = output_of(&events, "ls");
    assert!(
        ["a.py", "b.py", "c.js"].iter().all(|n| output.contains(n)) && !output.contains("setup"),
        "{output}"
    );
    assert_eq!(last_answer(&events), "a.py, b.py and c.js.");
}

#[test]
fn a_question_about_how_many_files_of_a_kind_is_answered_from_a_glob_that_counts_them() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(text_call(
        "ls",
        serde_json::json!({"path": "docs"}),
    )));
    server.push(Turn::text("3"));
    server.push(Turn::text("2"));
    let e = env_with(&[
        ("docs/a.md", "# a\n"),
        ("docs/b.md", "# b\n"),
        ("docs/c.txt", "c\n"),
        ("docs/img/d.md", "# d\n"),
        ("x.md", "# x\n"),
    ]);
    let events = run(&server, &e, "How many markdown files are directly in docs?");
    assert_eq!(output_of(&events, "glob"), "a.md\nb.md\n[2 files]");
    assert_eq!(last_answer(&events), "2");
}

#[test]
fn a_request_to_ignore_something_in_git_changes_the_gitignore() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Run `git rm -r dist` to stop tracking it."));
    // The whole new text of .gitignore, asked for at the turn's end.
    server.push(Turn::text("```\nnode_modules/\ndist/\n```"));
    server.push(Turn::text("dist/ is ignored now."));
    let e = env_with(&[(".gitignore", "node_modules/\n"), ("index.js", "1;\n")]);
    run(&server, &e, "Ignore the dist folder in git.");
    assert_eq!(file(&e, ".gitignore"), "node_modules/\ndist/\n");
    assert_eq!(file(&e, "index.js"), "1;\n");
}
