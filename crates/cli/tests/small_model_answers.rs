#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` on a small local model: a rewrite gets the standard imports it uses, an
//! answer is not asked for beside a refused call's made-up values once a read succeeded,
//! a question about functions that matches no words lists the definitions, "add X to
//! Y" adds to `Y`, a count is searched for, a line to uncomment is uncommented, and a
//! line spelled out under a heading goes there.

mod common;

use common::{edit_call, env_with, llamacpp, text_call};
use saki_testkit::{MockServer, Turn};

fn run(server: &MockServer, e: &common::Env, prompt: &str) -> Vec<serde_json::Value> {
    common::exec_on_llamacpp(server, e, prompt)
}

fn file(e: &common::Env, name: &str) -> String {
    std::fs::read_to_string(e.ws.join(name)).unwrap()
}

/// The text of the turn's last answer.
fn last_answer(events: &[serde_json::Value]) -> &str {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "assistant_message")
        .and_then(|e| e["item"]["text"].as_str())
        .unwrap()
}

#[test]
fn a_rewrite_that_uses_a_standard_module_gets_its_import() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call("server.py", "8000", "8001")));
    server.push(Turn::text(
        "```python\nPORT = int(os.getenv('PORT', 8000))\n\nprint(PORT)\n```",
    ));
    server.push(Turn::text("server.py reads PORT from the environment."));
    let e = env_with(&[("server.py", "PORT = 8000\n\nprint(PORT)\n")]);
    run(
        &server,
        &e,
        "Make server.py read PORT from the environment, with 8000 as the default.",
    );
    assert_eq!(
        file(&e, "server.py"),
        "import os\n\nPORT = int(os.getenv('PORT', 8000))\n\nprint(PORT)\n"
    );
}

#[test]
fn a_question_is_answered_from_what_was_read_not_from_a_refused_edit() {
    let server = llamacpp(494_032_768);
    let edit = edit_call("conf/settings.ini", "timeout = 30", "timeout = 60");
    // Refused, then the same again: the loop guard asks for the answer.
    server.push(Turn::text(edit.clone()));
    server.push(Turn::text(edit));
    server.push(Turn::text("timeout = 60"));
    // No call of the turn succeeded: saki reads the settings and asks again.
    server.push(Turn::text("The timeout is 30."));
    let e = env_with(&[
        ("conf/settings.ini", "[net]\ntimeout = 30\n"),
        ("main.py", "print(0)\n"),
    ]);
    let events = run(&server, &e, "What is the timeout in the settings?");
    assert_eq!(file(&e, "conf/settings.ini"), "[net]\ntimeout = 30\n");
    let requests = server.requests();
    let stopped = requests[2].body["messages"].to_string();
    assert!(
        stopped.contains("timeout = 60"),
        "with nothing read, the refusal is what the turn has: {stopped}"
    );
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("timeout = 30"), "{last}");
    assert!(!last.contains("timeout = 60"), "{last}");
    assert_eq!(last_answer(&events), "The timeout is 30.");
}

#[test]
fn a_question_about_a_function_whose_words_match_nothing_lists_the_definitions() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text("The reverse function."));
    server.push(Turn::text("backwards, in utils/strings.py."));
    let e = env_with(&[
        (
            "utils/strings.py",
            "def shout(s):\n    return s.upper()\n\n\ndef backwards(s):\n    return s[::-1]\n",
        ),
        ("app.py", "print(1)\n"),
    ]);
    let events = run(&server, &e, "Which function reverses a string?");
    let result = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .unwrap();
    assert_eq!(result["item"]["name"], "grep");
    let output = result["item"]["output"].as_str().unwrap();
    assert!(
        output.contains("def backwards(s):") && output.contains("def shout(s):"),
        "{output}"
    );
    assert!(!output.contains("print(1)"), "{output}");
}

#[test]
fn adding_a_name_to_a_file_changes_that_file_and_creates_none() {
    let server = llamacpp(494_032_768);
    server.push(Turn::text(text_call(
        "write_file",
        serde_json::json!({"path": ".env", "content": "__pycache__/\n.env\n"}),
    )));
    server.push(Turn::text("Added."));
    // The turn's end asks for the named file that was not changed.
    server.push(Turn::text("```\n__pycache__/\n.env\n```"));
    server.push(Turn::text(".env is now ignored."));
    let e = env_with(&[(".gitignore", "__pycache__/\n"), ("app.py", "print(1)\n")]);
    let events = run(&server, &e, "Add .env to .gitignore.");
    assert_eq!(file(&e, ".gitignore"), "__pycache__/\n.env\n");
    assert!(!e.ws.join(".env").exists());
    let refused = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .unwrap();
    assert_eq!(refused["item"]["status"], "denied");
    assert!(
        refused["item"]["output"]
            .as_str()
            .unwrap()
            .contains("not to create .env"),
        "{refused}"
    );
}

#[test]
fn a_count_the_model_gets_wrong_is_searched_for_and_answered_again() {
    const TESTS: &str =
        "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n\n\ndef test_c():\n    pass\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(text_call(
        "read_file",
        serde_json::json!({"path": "test_math.py"}),
    )));
    server.push(Turn::text("There are 2 tests."));
    server.push(Turn::text("There are 3 tests."));
    let e = env_with(&[("test_math.py", TESTS), ("math.py", "x = 1\n")]);
    let events = run(&server, &e, "How many tests are in test_math.py?");
    let grep = events
        .iter()
        .find(|e| {
            e["type"] == "item.completed"
                && e["item"]["kind"] == "tool_result"
                && e["item"]["name"] == "grep"
        })
        .unwrap();
    assert!(
        grep["item"]["output"]
            .as_str()
            .unwrap()
            .ends_with("[3 matching lines in 1 file]"),
        "{grep}"
    );
    assert_eq!(last_answer(&events), "There are 3 tests.");
}

#[test]
fn a_line_to_uncomment_is_uncommented_without_asking_the_model_for_the_file() {
    const CONFIG: &str = "DEBUG = False\n# CACHE_ENABLED = True\nTIMEOUT = 10\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "config.py",
        "DEBUG = False",
        "DEBUG = True",
    )));
    server.push(Turn::text("Caching is on."));
    let e = env_with(&[("config.py", CONFIG)]);
    run(
        &server,
        &e,
        "Uncomment the line that enables caching in config.py.",
    );
    assert_eq!(
        file(&e, "config.py"),
        "DEBUG = False\nCACHE_ENABLED = True\nTIMEOUT = 10\n"
    );
    assert_eq!(server.requests().len(), 2, "no request for the file's text");
}

#[test]
fn a_line_spelled_out_under_a_heading_goes_there_when_the_rewrites_cannot_be_used() {
    const README: &str = "# tool\n\n## Testing\n\n## License\n\nMIT\n";
    let server = llamacpp(494_032_768);
    server.push(Turn::text(edit_call(
        "README.md",
        "## Testing",
        "## Testing\npytest",
    )));
    // Both answers drop the License section: an addition keeps every character.
    server.push(Turn::text("```\n# tool\n\n## Testing\n\npytest\n```"));
    server.push(Turn::text("```\n# tool\n\n## Testing\n\npytest\n```"));
    server.push(Turn::text("The Testing section says how to run the tests."));
    let e = env_with(&[("README.md", README), ("app.py", "print(1)\n")]);
    run(
        &server,
        &e,
        "Under the Testing heading in README.md, add the line: Run tests with pytest.",
    );
    assert_eq!(
        file(&e, "README.md"),
        "# tool\n\n## Testing\n\nRun tests with pytest.\n\n## License\n\nMIT\n"
    );
}
