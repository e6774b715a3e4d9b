#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` on a small local model: the test a fix is checked by stays as it is, a
//! new text that imports its own file is not written, a request in words with no change
//! verb is met, a system path that ends in a workspace file means that file, and a file
//! the request does not name is not changed unless it reaches past the ones it names.

mod common;

use common::{edit_call, env_with, llamacpp};
use saki_testkit::{MockServer, Turn};

const PAGER: &str = "def last_page(total, per_page):\n    return total // per_page\n";
const TEST_PAGER: &str = "from pager import last_page\n\nassert last_page(11, 5) == 3\n";
const FIXED: &str = "def last_page(total, per_page):\n    return -(-total // per_page)\n";

fn run(server: &MockServer, e: &common::Env, prompt: &str) -> Vec<serde_json::Value> {
    common::exec_on_llamacpp(server, e, prompt)
}

fn file(e: &common::Env, name: &str) -> String {
    std::fs::read_to_string(e.ws.join(name)).unwrap()
}

/// Each tool result of the turn: its tool, status and text.
fn results(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .map(|e| {
            format!(
                "{} {} {}",
                e["item"]["name"], e["item"]["status"], e["item"]
            )
        })
        .collect()
}

#[test]
fn the_test_a_fix_is_checked_by_stays_and_the_fix_does_not_import_itself() {
    let server = llamacpp(494_032_768);
    // The model copies the function into the test.
    server.push(Turn::text(edit_call(
        "test_pager.py",
        "from pager import last_page\n",
        PAGER,
    )));
    server.push(Turn::text("The test now defines last_page."));
    // The turn's end asks for pager.py: first with the test's import copied into it.
    server.push(Turn::text(format!(
        "```python\nfrom pager import last_page\n\n{PAGER}```"
    )));
    server.push(Turn::text(format!("```python\n{FIXED}```")));
    server.push(Turn::text("last_page now rounds up."));
    let e = env_with(&[("pager.py", PAGER), ("test_pager.py", TEST_PAGER)]);
    let events = run(
        &server,
        &e,
        "test_pager.py fails. Fix pager.py so that it passes.",
    );
    assert_eq!(file(&e, "test_pager.py"), TEST_PAGER);
    assert_eq!(file(&e, "pager.py"), FIXED);
    let results = results(&events);
    assert!(
        results[0].starts_with("\"edit\" \"denied\"")
            && results[0].contains("is the test this request is checked by"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("\"edit\" \"success\""),
        "{results:?}"
    );
    // The request for pager.py lists the project's files between the file and the words.
    let requests = server.requests();
    let first = requests[2].body["messages"].to_string();
    assert!(
        first.contains(
            "```\\n\\n(The project's files: pager.py, test_pager.py.)\\ntest_pager.py fails."
        ),
        "{first}"
    );
    // The second request for pager.py asks to change nothing else.
    let again = requests[3].body["messages"].to_string();
    assert!(
        again.contains("Change nothing the request does not ask for"),
        "{again}"
    );
}

#[test]
fn a_fix_written_into_the_test_goes_to_the_module_the_test_imports_it_from() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "test_pager.py",
        "from pager import last_page\n",
        &format!("from pager import last_page\n\n{FIXED}"),
    )));
    server.push(Turn::text("last_page now rounds up."));
    let e = env_with(&[("pager.py", PAGER), ("test_pager.py", TEST_PAGER)]);
    let events = run(
        &server,
        &e,
        "test_pager.py fails; fix last_page in pager.py.",
    );
    assert_eq!(file(&e, "test_pager.py"), TEST_PAGER);
    assert_eq!(file(&e, "pager.py"), FIXED);
    let results = results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("saki wrote the last_page this call gave into pager.py"),
        "{results:?}"
    );
    // No rewrite request: the model's own text went where it belongs.
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_request_to_change_a_test_may_change_it() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call("test_pager.py", "== 3", "== 2")));
    server.push(Turn::text(
        "```python\nfrom pager import last_page\n\nassert last_page(11, 5) == 2\n```",
    ));
    server.push(Turn::text("The test now expects 2."));
    // The turn's end asks for pager.py too, the other file named: it comes back as it is.
    server.push(Turn::text(format!("```python\n{PAGER}```")));
    let e = env_with(&[("pager.py", PAGER), ("test_pager.py", TEST_PAGER)]);
    run(
        &server,
        &e,
        "Fix the test in test_pager.py: it fails, last_page(11, 5) is 2 by design.",
    );
    assert!(file(&e, "test_pager.py").contains("== 2"));
}

#[test]
fn a_request_about_a_file_without_a_change_verb_is_met_at_the_turns_end() {
    const JOB: &str = "def start():\n    work()\n\n\nstart()\n";
    const GUARDED: &str = "def start():\n    work()\n\n\nif __name__ == '__main__':\n    start()\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        "The start function is called at the end of job.py.",
    ));
    server.push(Turn::text(format!("```python\n{GUARDED}```")));
    server.push(Turn::text(
        "start() is now called only when job.py is the script.",
    ));
    let e = env_with(&[("job.py", JOB)]);
    run(
        &server,
        &e,
        "In job.py, only call start() when the module is the main script.",
    );
    assert_eq!(file(&e, "job.py"), GUARDED);
}

#[test]
fn a_system_path_that_ends_in_a_workspace_file_edits_that_file() {
    const CONF: &str = "server {\n    listen 80;\n}\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "/srv/no-such-place/nginx/nginx.conf",
        "listen 80;",
        "listen 8080;",
    )));
    server.push(Turn::text("```\nserver {\n    listen 8080;\n}\n```"));
    server.push(Turn::text("nginx listens on 8080."));
    let e = env_with(&[("nginx.conf", CONF)]);
    let events = run(&server, &e, "Make nginx listen on port 8080.");
    assert_eq!(file(&e, "nginx.conf"), "server {\n    listen 8080;\n}\n");
    let results = results(&events);
    assert!(
        results[0].starts_with("\"edit\" \"success\""),
        "{results:?}"
    );
}

#[test]
fn a_file_the_request_does_not_name_is_left_as_it_is() {
    const BUILD: &str = "#!/bin/sh\nmkdir -p dist\ncp src/*.py dist/\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call("src/a.py", "x = 1", "x = 2")));
    server.push(Turn::text("The output now goes to build."));
    // The turn's end asks for build.sh, which the request names.
    server.push(Turn::text(format!(
        "```sh\n{}```",
        BUILD.replace("dist", "build")
    )));
    server.push(Turn::text("build.sh now writes to build."));
    let e = env_with(&[("build.sh", BUILD), ("src/a.py", "x = 1\n")]);
    let events = run(
        &server,
        &e,
        "In build.sh, put the output in build instead of dist.",
    );
    assert_eq!(file(&e, "src/a.py"), "x = 1\n");
    assert_eq!(file(&e, "build.sh"), BUILD.replace("dist", "build"));
    let results = results(&events);
    assert!(
        results[0].starts_with("\"edit\" \"denied\"")
            && results[0].contains("names the files to change (build.sh) and not src/a.py"),
        "{results:?}"
    );
}

#[test]
fn a_request_that_reaches_past_the_files_it_names_may_change_others() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call("app.py", "greet(", "welcome(")));
    server.push(Turn::text(
        "```python\nfrom greetings import welcome\n\nwelcome()\n```",
    ));
    server.push(Turn::text("app.py calls welcome."));
    // The turn's end asks for greetings.py, which the prompt names.
    server.push(Turn::text("```python\ndef welcome():\n    pass\n```"));
    server.push(Turn::text("greet is now welcome."));
    let e = env_with(&[
        ("greetings.py", "def greet():\n    pass\n"),
        ("app.py", "from greetings import greet\n\ngreet()\n"),
    ]);
    run(
        &server,
        &e,
        "Rename greet to welcome in greetings.py and update all callers.",
    );
    assert_eq!(
        file(&e, "app.py"),
        "from greetings import welcome\n\nwelcome()\n"
    );
    assert_eq!(file(&e, "greetings.py"), "def welcome():\n    pass\n");
}
