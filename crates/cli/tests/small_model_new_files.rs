#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` on a small local model: a request for a new file, or to move a file or a
//! function, is met at the turn's end when the model's own calls did not meet it.

mod common;

use common::{env_with, llamacpp};
use saki_testkit::{MockServer, Turn};

fn run(server: &MockServer, e: &common::Env, prompt: &str) -> Vec<serde_json::Value> {
    common::exec_on_llamacpp(server, e, prompt)
}

/// The calls the turn made, by tool name, in order.
fn calls(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .map(|e| format!("{} {}", e["item"]["name"], e["item"]["status"]))
        .collect()
}

fn file(e: &common::Env, name: &str) -> Option<String> {
    std::fs::read_to_string(e.ws.join(name)).ok()
}

#[test]
fn a_new_file_the_request_asks_for_is_written_from_the_text_the_model_gives() {
    let server = llamacpp(494_032_768);
    // The model answers with a command to run instead of making the file.
    server.push(Turn::text("Run: echo node_modules >> .gitignore"));
    server.push(Turn::text("```\n.gitignore\nnode_modules/\n```"));
    server.push(Turn::text("The .gitignore now ignores node_modules."));
    let e = env_with(&[("index.js", "console.log(1)\n")]);
    let events = run(&server, &e, "Add a .gitignore that ignores node_modules.");
    assert_eq!(file(&e, ".gitignore").as_deref(), Some("node_modules/\n"));
    assert_eq!(file(&e, "index.js").as_deref(), Some("console.log(1)\n"));
    assert_eq!(calls(&events), vec!["\"write_file\" \"success\""]);
    // The request for its text: the person's words and the new file's name, no tools.
    let requests = server.requests();
    let asked = requests[1].body["messages"].to_string();
    assert!(
        asked.contains("Add a .gitignore") && asked.contains("new file .gitignore"),
        "{asked}"
    );
    assert!(requests[1].body.get("tools").is_none());
    assert_eq!(requests.len(), 3);
}

#[test]
fn a_renamed_file_is_written_under_its_new_name_then_deleted() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Renamed."));
    server.push(Turn::text("config.yaml holds it."));
    server.push(Turn::text("config.yml is now config.yaml."));
    let e = env_with(&[("config.yml", "a: 1\n")]);
    let events = run(&server, &e, "Rename config.yml to config.yaml.");
    assert_eq!(file(&e, "config.yaml").as_deref(), Some("a: 1\n"));
    assert_eq!(file(&e, "config.yml"), None);
    assert_eq!(
        calls(&events),
        vec!["\"write_file\" \"success\"", "\"delete_file\" \"success\""]
    );
    // No model request was spent on the move: the text moves as it is.
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_file_moved_into_a_directory_keeps_its_name() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Moved."));
    server.push(Turn::text("Copied."));
    server.push(Turn::text("util.py is in lib now."));
    let e = env_with(&[("util.py", "X = 1\n"), ("lib/__init__.py", "")]);
    run(&server, &e, "Move util.py into lib/.");
    assert_eq!(file(&e, "lib/util.py").as_deref(), Some("X = 1\n"));
    assert_eq!(file(&e, "util.py"), None);
}

#[test]
fn a_function_moved_between_files_is_written_into_its_new_place_from_where_it_was() {
    const A: &str = "def helper():\n    return 42\n\n\ndef other():\n    return 1\n";
    const B: &str = "def existing():\n    return 0\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}",
    ));
    server.push(Turn::text("helper should go to b.py."));
    // The turn end: a.py without helper, though that keeps less than half of it.
    server.push(Turn::text("```python\ndef other():\n    return 1\n```"));
    server.push(Turn::text("helper is gone from a.py."));
    server.push(Turn::text(format!(
        "```python\n{B}\n\ndef helper():\n    return 42\n```"
    )));
    server.push(Turn::text("helper is in b.py."));
    let e = env_with(&[("a.py", A), ("b.py", B)]);
    run(&server, &e, "Move the function helper from a.py to b.py.");
    assert_eq!(
        file(&e, "a.py").as_deref(),
        Some("def other():\n    return 1\n")
    );
    assert!(file(&e, "b.py").unwrap().contains("def helper"));
    // b.py's request shows a.py as it was when the request was made, helper and all.
    let requests = server.requests();
    let asked = requests[4].body["messages"].to_string();
    assert!(
        asked.contains("a.py:") && asked.contains("return 42") && asked.contains("b.py:"),
        "{asked}"
    );
}

#[test]
fn a_path_the_request_only_mentions_is_not_created() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Done."));
    server.push(Turn::text("```markdown\n# Tool\n\nSee example.com.\n```"));
    server.push(Turn::text("README.md links example.com."));
    let e = env_with(&[("README.md", "# Tool\n")]);
    run(&server, &e, "Add a link to example.com in README.md.");
    assert_eq!(file(&e, "example.com"), None);
    assert_eq!(
        file(&e, "README.md").as_deref(),
        Some("# Tool\n\nSee example.com.\n")
    );
}

#[test]
fn a_moved_files_delete_waits_until_its_new_place_holds_it() {
    let server = llamacpp(494_032_768);
    // The model deletes the file it was asked to move: refused, the text would be lost.
    server.push(Turn::text(
        "{\"name\": \"delete_file\", \"arguments\": {\"path\": \"notes.txt\"}}",
    ));
    server.push(Turn::text("Moved."));
    server.push(Turn::text("Copied."));
    server.push(Turn::text("notes.txt is in docs now."));
    let e = env_with(&[("notes.txt", "buy milk\n"), ("docs/index.md", "# Docs\n")]);
    let events = run(&server, &e, "Move notes.txt into the docs folder.");
    assert_eq!(file(&e, "docs/notes.txt").as_deref(), Some("buy milk\n"));
    assert_eq!(file(&e, "notes.txt"), None);
    assert_eq!(
        calls(&events),
        vec![
            "\"delete_file\" \"denied\"",
            "\"write_file\" \"success\"",
            "\"delete_file\" \"success\""
        ]
    );
}

#[test]
fn a_request_for_a_new_file_leaves_the_files_it_does_not_name_alone() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"Dockerfile\", \
         \"old_string\": \"COPY . .\", \"new_string\": \"COPY . .\\nCOPY .dockerignore\"}}",
    ));
    server.push(Turn::text("I could not."));
    server.push(Turn::text("```\n.git\n__pycache__\n```"));
    server.push(Turn::text("It excludes .git and __pycache__."));
    let e = env_with(&[("Dockerfile", "FROM python:3.12\nCOPY . .\n")]);
    let events = run(
        &server,
        &e,
        "Add a .dockerignore file that excludes .git and __pycache__.",
    );
    assert_eq!(
        file(&e, "Dockerfile").as_deref(),
        Some("FROM python:3.12\nCOPY . .\n")
    );
    assert_eq!(
        file(&e, ".dockerignore").as_deref(),
        Some(".git\n__pycache__\n")
    );
    assert_eq!(
        calls(&events),
        vec!["\"edit\" \"denied\"", "\"write_file\" \"success\""]
    );
}

#[test]
fn a_moved_file_is_moved_as_it_is() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"notes.txt\", \
         \"old_string\": \"buy milk\", \"new_string\": \"buy milk again\"}}",
    ));
    server.push(Turn::text("Moved."));
    server.push(Turn::text("Copied."));
    server.push(Turn::text("notes.txt is in docs now."));
    let e = env_with(&[("notes.txt", "buy milk\n"), ("docs/index.md", "# Docs\n")]);
    let events = run(&server, &e, "Move notes.txt into docs/.");
    assert_eq!(file(&e, "docs/notes.txt").as_deref(), Some("buy milk\n"));
    assert_eq!(file(&e, "notes.txt"), None);
    assert_eq!(calls(&events)[0], "\"edit\" \"denied\"");
}

#[test]
fn a_file_the_request_deletes_is_deleted_when_the_turn_did_not() {
    let server = llamacpp(494_032_768);
    // The model calls the file's name as a tool, then answers.
    server.push(Turn::text(
        "{\"name\": \"old_helpers.py\", \"arguments\": {}}",
    ));
    server.push(Turn::text("It is not used."));
    server.push(Turn::text("old_helpers.py is deleted."));
    let e = env_with(&[
        ("old_helpers.py", "def old():\n    pass\n"),
        ("helpers.py", "X = 1\n"),
    ]);
    let events = run(&server, &e, "Delete old_helpers.py, nothing uses it.");
    assert_eq!(file(&e, "old_helpers.py"), None);
    assert_eq!(file(&e, "helpers.py").as_deref(), Some("X = 1\n"));
    assert_eq!(
        calls(&events).last().unwrap(),
        "\"delete_file\" \"success\""
    );
    // The request after saki's delete shows the call, not the answer it replaced.
    let requests = server.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(!last.contains("It is not used."), "{last}");
    assert!(last.contains("delete_file"), "{last}");
}

#[test]
fn a_deletion_leaves_the_files_the_request_does_not_name() {
    let server = llamacpp(494_032_768);
    // The model deletes a file beside the one named, by its absolute path, then the one
    // named.
    let e = env_with(&[("draft.md", "# Draft\n"), ("notes.md", "keep me\n")]);
    let other = e.ws.join("notes.md").display().to_string();
    server.push(Turn::text(format!(
        "{{\"name\": \"delete_file\", \"arguments\": {{\"path\": \"{other}\"}}}}"
    )));
    server.push(Turn::text(
        "{\"name\": \"delete_file\", \"arguments\": {\"path\": \"draft.md\"}}",
    ));
    server.push(Turn::text("draft.md is deleted."));
    let events = run(&server, &e, "Delete draft.md, it is obsolete.");
    assert_eq!(file(&e, "notes.md").as_deref(), Some("keep me\n"));
    assert_eq!(file(&e, "draft.md"), None);
    assert_eq!(
        calls(&events),
        vec!["\"delete_file\" \"denied\"", "\"delete_file\" \"success\""]
    );
    let denied = server.requests()[1].body["messages"].to_string();
    assert!(
        denied.contains("the request asks to delete draft.md and not notes.md"),
        "{denied}"
    );
}

#[test]
fn a_file_the_request_names_and_asks_to_remove_as_it_is_deleted() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("It is unused."));
    server.push(Turn::text("Removed old_helpers.py."));
    let e = env_with(&[
        ("old_helpers.py", "def old():\n    pass\n"),
        ("helpers.py", "X = 1\n"),
    ]);
    run(
        &server,
        &e,
        "old_helpers.py is not used anymore, remove it.",
    );
    assert_eq!(file(&e, "old_helpers.py"), None);
    assert_eq!(file(&e, "helpers.py").as_deref(), Some("X = 1\n"));
}

#[test]
fn a_file_renamed_in_a_sentence_that_also_names_a_part_of_another_is_renamed() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(common::edit_call(
        "main.py",
        "from helpers import shout",
        "from utils import shout",
    )));
    // The whole new text of main.py, asked for in place of the edit.
    server.push(Turn::text(
        "```python\nfrom utils import shout\n\nprint(shout('hi'))\n```",
    ));
    server.push(Turn::text("Updated the import."));
    server.push(Turn::text("Copied."));
    server.push(Turn::text("helpers.py is now utils.py."));
    let e = env_with(&[
        ("helpers.py", "def shout(s):\n    return s.upper()\n"),
        (
            "main.py",
            "from helpers import shout\n\nprint(shout('hi'))\n",
        ),
    ]);
    run(
        &server,
        &e,
        "Rename helpers.py to utils.py and update the import in main.py.",
    );
    assert_eq!(
        file(&e, "utils.py").as_deref(),
        Some("def shout(s):\n    return s.upper()\n")
    );
    assert_eq!(file(&e, "helpers.py"), None);
    assert_eq!(
        file(&e, "main.py").as_deref(),
        Some("from utils import shout\n\nprint(shout('hi'))\n")
    );
}
