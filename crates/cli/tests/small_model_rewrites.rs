#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `saki exec` on a small local model: its `edit` of a small file is made from the file's
//! whole new text, asked for in a request of its own.

mod common;

use common::{env_with, llamacpp};
use saki_testkit::{MockServer, Turn};

const DEPLOY: &str = "name: api\nreplicas: 2\nimage: api:1.4\n";
const PROMPT: &str = "Scale the api to 5 replicas in deploy.yaml.";
const WRONG_EDIT: &str = "{\"name\": \"edit\", \"arguments\": {\"path\": \"deploy.yaml\", \
                          \"old_string\": \"api:1.4\", \"new_string\": \"api:1.5\"}}";

/// A llama.cpp server that says it serves a 0.6B model.
fn small_model_server() -> MockServer {
    llamacpp(630_167_424)
}

fn run(server: &MockServer, e: &common::Env, prompt: &str) -> Vec<serde_json::Value> {
    common::exec_on_llamacpp(server, e, prompt)
}

fn read(e: &common::Env) -> String {
    std::fs::read_to_string(e.ws.join("deploy.yaml")).unwrap()
}

/// How many rewrite requests the turn's `background_usage` counts.
fn rewrite_requests(events: &[serde_json::Value]) -> u64 {
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .expect("a completed turn");
    done["background_usage"]["rewrite"]["requests"]
        .as_u64()
        .unwrap_or_else(|| panic!("no rewrite count in {done}"))
}

fn tool_result(events: &[serde_json::Value]) -> &serde_json::Value {
    events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .expect("a tool result")
}

#[test]
fn a_small_models_edit_is_made_from_the_files_new_text() {
    let server = small_model_server();
    server.push(Turn::text(WRONG_EDIT));
    server.push(Turn::text(
        "```yaml\nname: api\nreplicas: 5\nimage: api:1.4\n```",
    ));
    server.push(Turn::text("The api now has 5 replicas."));
    let e = env_with(&[("deploy.yaml", DEPLOY)]);
    let events = run(&server, &e, PROMPT);
    assert_eq!(read(&e), "name: api\nreplicas: 5\nimage: api:1.4\n");
    let result = tool_result(&events);
    assert_eq!(result["item"]["status"], "success", "{result}");
    let output = result["item"]["output"].as_str().unwrap();
    assert!(output.contains("whole new text"), "{output}");
    assert!(output.contains("+replicas: 5"), "{output}");
    // The rewrite request: the file and the person's words, no tools, no history.
    let requests = server.requests();
    let rewrite = &requests[1].body;
    assert!(rewrite.get("tools").is_none(), "{rewrite}");
    let messages = rewrite["messages"].as_array().unwrap();
    let asked = messages.last().unwrap()["content"].to_string();
    assert!(
        asked.contains("replicas: 2") && asked.contains(PROMPT),
        "{asked}"
    );
    assert!(!asked.contains("api:1.5"), "{asked}");
    assert_eq!(rewrite_requests(&events), 1);
}

#[test]
fn without_a_usable_new_text_the_models_own_edit_runs() {
    let server = small_model_server();
    server.push(Turn::text(WRONG_EDIT));
    // No code block, twice: nothing to write in place of the model's call.
    server.push(Turn::text("Set replicas to 5."));
    server.push(Turn::text("Set replicas to 5, and keep the rest."));
    server.push(Turn::text("Done."));
    let e = env_with(&[("deploy.yaml", DEPLOY)]);
    let events = run(&server, &e, PROMPT);
    assert_eq!(read(&e), "name: api\nreplicas: 2\nimage: api:1.5\n");
    let output = tool_result(&events)["item"]["output"].as_str().unwrap();
    assert!(!output.contains("whole new text"), "{output}");
}

#[test]
fn an_unusable_new_text_is_asked_for_once_more_asking_to_keep_the_rest() {
    let server = small_model_server();
    server.push(Turn::text(WRONG_EDIT));
    // A fragment first, then the whole file.
    server.push(Turn::text("```yaml\nreplicas: 5\n```"));
    server.push(Turn::text(
        "```yaml\nname: api\nreplicas: 5\nimage: api:1.4\n```",
    ));
    server.push(Turn::text("The api now has 5 replicas."));
    let e = env_with(&[("deploy.yaml", DEPLOY)]);
    let events = run(&server, &e, PROMPT);
    assert_eq!(read(&e), "name: api\nreplicas: 5\nimage: api:1.4\n");
    let requests = server.requests();
    let first = requests[1].body["messages"].to_string();
    let second = requests[2].body["messages"].to_string();
    assert!(!first.contains("Change nothing"), "{first}");
    assert!(
        second.contains(PROMPT) && second.contains("Change nothing the request does not ask for."),
        "{second}"
    );
    assert_eq!(rewrite_requests(&events), 2);
}

#[test]
fn a_rewritten_file_is_not_changed_again_in_the_turn_and_off_means_off() {
    let server = small_model_server();
    server.push(Turn::text(WRONG_EDIT));
    server.push(Turn::text(
        "```\nname: api\nreplicas: 5\nimage: api:1.4\n```",
    ));
    // The model goes on and undoes the change.
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"deploy.yaml\", \
         \"old_string\": \"replicas: 5\", \"new_string\": \"replicas: 2\"}}",
    ));
    server.push(Turn::text("Done."));
    let e = env_with(&[("deploy.yaml", DEPLOY)]);
    let events = run(&server, &e, PROMPT);
    assert_eq!(read(&e), "name: api\nreplicas: 5\nimage: api:1.4\n");
    let second = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .nth(1)
        .unwrap();
    assert_eq!(second["item"]["status"], "denied", "{second}");
    assert!(
        second["item"]["output"]
            .as_str()
            .unwrap()
            .contains("already changed"),
        "{second}"
    );

    // `rewrite_edits = false`: the model's edit runs as it wrote it, with no request more.
    e.write_config("[providers.llamacpp]\nrewrite_edits = false\n");
    std::fs::write(e.ws.join("deploy.yaml"), DEPLOY).unwrap();
    let before = server.requests().len();
    server.push(Turn::text(WRONG_EDIT));
    server.push(Turn::text("Done."));
    run(&server, &e, PROMPT);
    assert_eq!(read(&e), "name: api\nreplicas: 2\nimage: api:1.5\n");
    assert_eq!(server.requests().len() - before, 2);
}

#[test]
fn a_question_gets_no_rewrite_request() {
    let server = small_model_server();
    server.push(Turn::text(WRONG_EDIT));
    server.push(Turn::text("There are 3 replicas."));
    // Nothing it called succeeded: saki reads the file, and the model answers again.
    server.push(Turn::text("There are 2 replicas."));
    let e = env_with(&[("deploy.yaml", DEPLOY)]);
    let events = run(&server, &e, "How many replicas does deploy.yaml set?");
    assert_eq!(read(&e), DEPLOY);
    assert_eq!(tool_result(&events)["item"]["status"], "denied");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(rewrite_requests(&events), 0);
}

#[test]
fn a_path_written_as_a_search_prints_it_is_the_file_but_a_dotless_name_is_not_a_dotfile() {
    let server = small_model_server();
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"settings.py:2:DEBUG = True\", \
         \"old_string\": \"\", \"new_string\": \"DEBUG = False\"}}",
    ));
    server.push(Turn::text("```python\nNAME = 'shop'\nPORT = 8000\n```"));
    server.push(Turn::text("Removed."));
    let e = env_with(&[
        ("settings.py", "NAME = 'shop'\nDEBUG = True\nPORT = 8000\n"),
        (".envrc", "export A=1\n"),
    ]);
    let events = run(&server, &e, "Remove the DEBUG line from settings.py.");
    let settings = std::fs::read_to_string(e.ws.join("settings.py")).unwrap();
    assert_eq!(settings, "NAME = 'shop'\nPORT = 8000\n");
    let call = events
        .iter()
        .find(|e| e["item"]["kind"] == "tool_call")
        .unwrap();
    assert_eq!(call["item"]["name"], "edit");
    assert!(!e.ws.join("settings.py:2:DEBUG = True").exists());

    // `envrc` is a new file to write, not `.envrc` to rewrite: no request is spent on it.
    let before = server.requests().len();
    server.push(Turn::text(
        "{\"name\": \"write_file\", \"arguments\": {\"path\": \"envrc\", \"content\": \"B=2\\n\"}}",
    ));
    server.push(Turn::text("Written."));
    run(&server, &e, "Create a file envrc with B=2.");
    assert_eq!(server.requests().len() - before, 2);
    assert_eq!(
        std::fs::read_to_string(e.ws.join(".envrc")).unwrap(),
        "export A=1\n"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("envrc")).unwrap(),
        "B=2\n"
    );
}

const GREETINGS: &str = "def greet(name):\n    return 'Hello, ' + name\n";
const APP: &str = "from greetings import greet\n\nprint(greet('Ann'))\n";
const RENAME: &str =
    "Rename the function greet to welcome, in greetings.py and where app.py uses it.";
/// A rename in words saki does not read as one ("rename X to Y" is made without the
/// model): the files' new texts are the model's.
const NEW_NAME: &str =
    "Change the function greet's name to welcome, in greetings.py and where app.py uses it.";

#[test]
fn a_file_the_request_names_and_the_turn_left_is_written_whole_when_the_turn_ends() {
    let server = small_model_server();
    // The model changes app.py (rewritten), then answers.
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"app.py\", \
         \"old_string\": \"Ann\", \"new_string\": \"Bob\"}}",
    ));
    server.push(Turn::text(
        "```python\nfrom greetings import welcome\n\nprint(welcome('Ann'))\n```",
    ));
    server.push(Turn::text("Renamed in app.py."));
    // The turn end: greetings.py is named and unchanged, so its new text is asked for.
    server.push(Turn::text(
        "```python\ndef welcome(name):\n    return 'Hello, ' + name\n```",
    ));
    server.push(Turn::text("greet is now welcome in both files."));
    let e = env_with(&[("greetings.py", GREETINGS), ("app.py", APP)]);
    let events = run(&server, &e, NEW_NAME);
    let file = |name: &str| std::fs::read_to_string(e.ws.join(name)).unwrap();
    assert_eq!(
        file("app.py"),
        "from greetings import welcome\n\nprint(welcome('Ann'))\n"
    );
    assert_eq!(
        file("greetings.py"),
        "def welcome(name):\n    return 'Hello, ' + name\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // The turn-end request shows greetings.py as it is, with the person's words, no tools.
    let asked = requests[3].body["messages"].to_string();
    assert!(
        asked.contains("def greet(name)") && asked.contains("greetings.py"),
        "{asked}"
    );
    assert!(requests[3].body.get("tools").is_none());
    let own = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .nth(1)
        .unwrap();
    assert_eq!(own["item"]["status"], "success", "{own}");
    assert_eq!(rewrite_requests(&events), 2);
}

#[test]
fn a_models_edit_in_a_rename_is_the_rename_made_in_the_whole_file() {
    let server = small_model_server();
    // The model renames one use of three.
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"sum.py\", \
         \"old_string\": \"acc = 0\", \"new_string\": \"total = 0\"}}",
    ));
    server.push(Turn::text("acc is now total."));
    let before = "def add_all(xs):\n    acc = 0\n    for x in xs:\n        acc += x\n    \
                  return acc\n\n\nprint(add_all([1, 2]))\n";
    let e = env_with(&[("sum.py", before)]);
    let events = run(&server, &e, "Rename the variable acc to total in sum.py.");
    assert_eq!(
        std::fs::read_to_string(e.ws.join("sum.py")).unwrap(),
        before.replace("acc", "total")
    );
    assert_eq!(tool_result(&events)["item"]["status"], "success");
    // No request for the file's whole new text: the rename is made as asked.
    assert_eq!(server.requests().len(), 2);
    let told = server.requests()[1].body["messages"].to_string();
    assert!(told.contains("the request renames acc to total"), "{told}");
}

#[test]
fn a_named_file_that_comes_back_as_it_is_is_left_alone_and_asked_for_once() {
    let server = small_model_server();
    // No call at all: the turn end asks for each named file's new text, in order.
    server.push(Turn::text("I would rename it."));
    server.push(Turn::text(format!("```python\n{GREETINGS}```")));
    server.push(Turn::text(
        "```python\nfrom greetings import welcome\n\nprint(welcome('Ann'))\n```",
    ));
    server.push(Turn::text("app.py now calls welcome."));
    server.push(Turn::text("greetings.py defines welcome."));
    let e = env_with(&[("greetings.py", GREETINGS), ("app.py", APP)]);
    run(&server, &e, RENAME);
    let file = |name: &str| std::fs::read_to_string(e.ws.join(name)).unwrap();
    assert_eq!(
        file("app.py"),
        "from greetings import welcome\n\nprint(welcome('Ann'))\n"
    );
    // Five requests: the answer, two rewrites, the answer after saki's edit, and the
    // answer after the rename saki made itself in greetings.py, which still held
    // `greet`. greetings.py, unchanged, is not asked for again at the second turn end.
    assert_eq!(file("greetings.py"), GREETINGS.replace("greet", "welcome"));
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let last = requests[4].body["messages"].to_string();
    assert!(
        !last.contains("Reply with the complete new content"),
        "{last}"
    );
}

#[test]
fn a_change_to_a_file_whose_new_text_comes_back_unchanged_is_refused() {
    const STACK: &str = "class Stack:\n    def pop(self):\n        return self.items[0]\n";
    const TEST: &str = "from stack import Stack\nassert Stack().pop() == 2\n";
    let server = small_model_server();
    // The model "fixes" the test; asked apart, the test comes back as it is.
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"test_stack.py\", \
         \"old_string\": \"== 2\", \"new_string\": \"== 1\"}}",
    ));
    server.push(Turn::text(format!("```python\n{TEST}```")));
    // Told so, it tries again: refused without another request.
    server.push(Turn::text(
        "{\"name\": \"edit\", \"arguments\": {\"path\": \"test_stack.py\", \
         \"old_string\": \"assert\", \"new_string\": \"# assert\"}}",
    ));
    server.push(Turn::text("I could not fix it."));
    // The turn end: stack.py, named and unchanged, is asked for and written.
    server.push(Turn::text(
        "```python\nclass Stack:\n    def pop(self):\n        return self.items.pop()\n```",
    ));
    server.push(Turn::text("pop now takes the last item."));
    let e = env_with(&[("stack.py", STACK), ("test_stack.py", TEST)]);
    // Not said to fail or pass, the test is not the request's check (that refusal is
    // `small_model_checks`'): what refuses its change is its unchanged new text.
    let events = run(
        &server,
        &e,
        "Fix stack.py: pop should give the last item, as test_stack.py expects.",
    );
    let file = |name: &str| std::fs::read_to_string(e.ws.join(name)).unwrap();
    assert_eq!(file("test_stack.py"), TEST);
    assert_eq!(
        file("stack.py"),
        "class Stack:\n    def pop(self):\n        return self.items.pop()\n"
    );
    let results: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .collect();
    for refused in &results[..2] {
        assert_eq!(refused["item"]["status"], "denied", "{refused}");
        let output = refused["item"]["output"].as_str().unwrap();
        assert!(output.contains("came back unchanged"), "{output}");
    }
    assert_eq!(results[2]["item"]["status"], "success", "{}", results[2]);
    assert_eq!(server.requests().len(), 6);
}
