#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` on a small local model: a question that asks where something is, or which
//! files do something, is answered from a search, and by a file's path.

mod common;

use common::{env_with, exec_on_llamacpp, llamacpp};
use saki_testkit::Turn;

/// The final answer of the turn.
fn answer(events: &[serde_json::Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "assistant_message")
        .map(|e| e["item"]["text"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[test]
fn which_files_is_answered_from_a_search_for_the_rarest_word() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("a.py"));
    server.push(Turn::text("a.py and c.py import yaml."));
    let e = env_with(&[
        ("a.py", "import yaml\nyaml.safe_load('x')\n"),
        ("b.py", "import json\n"),
        ("c.py", "import os\nimport yaml\n"),
    ]);
    let events = exec_on_llamacpp(&server, &e, "Which files import yaml?");
    let call = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .expect("a call");
    assert_eq!(call["item"]["name"], "grep", "{call}");
    let output = call["item"]["output"].as_str().unwrap();
    assert!(
        output.contains("a.py") && output.contains("c.py") && !output.contains("b.py"),
        "{output}"
    );
    assert_eq!(answer(&events), "a.py and c.py import yaml.");
}

#[test]
fn a_where_answer_that_names_no_file_is_asked_for_once_more() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"conf/app.ini\"}}",
    ));
    server.push(Turn::text("url = postgres://db/shop"));
    server.push(Turn::text("It is set in conf/app.ini."));
    let e = env_with(&[("conf/app.ini", "[db]\nurl = postgres://db/shop\n")]);
    let events = exec_on_llamacpp(&server, &e, "Where is the database URL set?");
    assert_eq!(answer(&events), "It is set in conf/app.ini.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let again = requests[2].body["messages"].to_string();
    assert!(
        again.contains("naming the file or files by their paths"),
        "{again}"
    );
}
