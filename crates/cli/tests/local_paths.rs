#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A local server however it is reached (`--base-url` alone, `--provider llamacpp`,
//! `--provider ollama`; `--local` is `--provider llamacpp` on a server saki starts), and
//! what a small model's turn may change.

mod common;

use common::{env_with, events as json_lines, llamacpp, Env};
use saki_testkit::{MockServer, Turn};

fn run(e: &Env, server: &MockServer, how: &[&str], prompt: &str) -> Vec<serde_json::Value> {
    let out = e
        .saki()
        .arg("exec")
        .args(how)
        .args(["--base-url", &server.openai_url(), "-m", "local", "--json"])
        .args(["--approval", "yolo", prompt])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    json_lines(&out)
}

/// The rules for a small model's own calls, which run as it wrote them when no rewrite
/// is asked for (`rewrite_edits = false`) or the rewrite is not usable.
fn own_calls_only(e: &Env) {
    e.write_config("[providers.openai-compatible]\nrewrite_edits = false\n");
}

/// What decides a small model's behaviour in a request: the system prompt with its tool
/// list, the tool list, sampling and the bound on each answer.
fn shape(body: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "system": body["messages"][0]["content"],
        "tools": body.get("tools"),
        "temperature": body.get("temperature"),
        "max_tokens": body.get("max_tokens"),
        "response_format": body.get("response_format"),
    })
}

#[test]
fn a_bare_base_url_and_the_named_providers_send_the_same_request() {
    let e = env_with(&[]);
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Hello."));
    let bare = run(&e, &server, &[], "hi");
    server.push(Turn::text("Hello."));
    let named = run(&e, &server, &["--provider", "llamacpp"], "hi");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(shape(&requests[0].body), shape(&requests[1].body));
    for start in [&bare[0], &named[0]] {
        assert_eq!(start["tool_calling"], "prompted", "{start}");
        assert_eq!(start["context_window"], 8192, "{start}");
    }
    // The lean tool set, as for a named local provider: no plan or web tools.
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("\"name\":\"read_file\""), "{system}");
    assert!(!system.contains("\"name\":\"web_fetch\""), "{system}");
    assert!(!system.contains("\"name\":\"update_plan\""), "{system}");

    // Ollama with the same model says so in /api/show: the same request again.
    let ollama = MockServer::start().unwrap();
    ollama.set_server_info(
        "/api/show",
        serde_json::json!({"model_info": {"general.parameter_count": 494_032_768_u64},
            "parameters": "num_ctx 8192", "capabilities": ["completion", "tools"]}),
    );
    ollama.push(Turn::text("Hello."));
    let start = &run(&e, &ollama, &["--provider", "ollama"], "hi")[0];
    assert_eq!(start["tool_calling"], "prompted", "{start}");
    let body = &ollama.requests()[0].body;
    assert_eq!(shape(body), shape(&requests[0].body));
}

/// `saki exec` on `server` by a bare `--base-url` and no model named: its output and
/// whether it succeeded.
fn run_unnamed(e: &Env, server: &MockServer, how: &[&str]) -> (bool, Vec<serde_json::Value>) {
    let out = e
        .saki()
        .arg("exec")
        .args(how)
        .args(["--base-url", &server.openai_url(), "--json", "hi"])
        .output()
        .unwrap();
    (out.status.success(), json_lines(&out.stdout))
}

#[test]
fn with_no_model_named_a_local_server_s_own_is_used_or_its_list_is_shown() {
    let e = env_with(&[]);
    let server = llamacpp(494_032_768);
    server.set_server_info(
        "/v1/models",
        serde_json::json!({"data": [{"id": "qwen-coder.gguf", "meta": {"n_params": 494_032_768}}]}),
    );
    server.push(Turn::text("Hello."));
    let (ok, events) = run_unnamed(&e, &server, &[]);
    assert!(ok, "{events:?}");
    assert_eq!(events[0]["model"], "qwen-coder.gguf", "{}", events[0]);
    // What the server said about itself still applies: a small model's prompted tools.
    assert_eq!(events[0]["tool_calling"], "prompted", "{}", events[0]);
    assert_eq!(server.requests()[0].body["model"], "qwen-coder.gguf");

    // Ollama serving several: none is picked, and the error names them.
    let ollama = MockServer::start().unwrap();
    ollama.set_server_info(
        "/v1/models",
        serde_json::json!({"data": [{"id": "qwen2.5-coder:7b"}, {"id": "llama3.2:3b"}]}),
    );
    let (ok, events) = run_unnamed(&e, &ollama, &["--provider", "ollama"]);
    assert!(!ok);
    let failed = events.iter().find(|e| e["type"] == "turn.failed").unwrap();
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("has no model: pass --model")
            && message.contains("serves 2 models: qwen2.5-coder:7b, llama3.2:3b"),
        "{message}"
    );
    assert!(ollama.requests().is_empty(), "no request without a model");

    // A server that does not answer: the error says so.
    let silent = MockServer::start().unwrap();
    let (ok, events) = run_unnamed(&e, &silent, &[]);
    assert!(!ok);
    let failed = events.iter().find(|e| e["type"] == "turn.failed").unwrap();
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not say which model it serves"),
        "{failed}"
    );
}

#[test]
fn config_still_decides_the_tool_set_over_what_the_server_says() {
    let e = env_with(&[]);
    e.write_config("[providers.openai-compatible]\nlean_tools = false\n");
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Hello."));
    run(&e, &server, &[], "hi");
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("\"name\":\"update_plan\""), "{system}");
}

fn write_call(path: &str, content: &str) -> String {
    serde_json::json!({"name": "write_file", "arguments": {"path": path, "content": content}})
        .to_string()
}

fn results(events: &[serde_json::Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_result")
        .map(|e| {
            (
                e["item"]["status"].as_str().unwrap_or("").to_owned(),
                e["item"]["output"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

const CALC: &str = "def add(a, b):\n    return a + b\n";

/// A stock llama.cpp server's 4096-token slot: a page of a file fits beside the system
/// prompt (a 16 KiB page would not, and the server would refuse the request).
#[test]
fn a_small_window_reads_a_file_in_pages_it_can_hold() {
    let body: String = (1..=500)
        .map(|i| format!("line {i:03} of a long changelog, written out to make it long\n"))
        .collect();
    let e = env_with(&[("HISTORY.md", body.as_str())]);
    let server = llamacpp(494_032_768);
    server.set_server_info(
        "/props",
        serde_json::json!({"default_generation_settings": {"n_ctx": 4096}}),
    );
    let read = serde_json::json!({"name": "read_file", "arguments": {"path": "HISTORY.md"}});
    server.push(Turn::text(read.to_string()));
    server.push(Turn::text("It lists the changes."));
    let events = run(&e, &server, &[], "What is in HISTORY.md?");
    let results = results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    let page = &results[0].1;
    assert!(page.starts_with("line 001"), "{page}");
    // The page holds what fits in 4096 bytes, then says where the file goes on.
    let shown = page.lines().filter(|l| l.starts_with("line ")).count();
    assert!((40..=70).contains(&shown), "{shown} lines shown:\n{page}");
    assert!(page.len() < 4096 + 200, "{} bytes", page.len());
}

/// The shape seen in the UI: asked what a function does, a 0.5B model wrote the file.
#[test]
fn a_small_model_writes_nothing_on_a_question() {
    let e = env_with(&[("calc.py", CALC)]);
    own_calls_only(&e);
    let server = llamacpp(494_032_768);
    server.push(Turn::text(write_call(
        "calc.py",
        "# Overwrote calc.py (63 bytes)",
    )));
    server.push(Turn::text("add returns the sum of a and b."));
    server.push(Turn::text("add returns a + b."));
    let events = run(&e, &server, &[], "What does add in calc.py do?");
    assert_eq!(std::fs::read_to_string(e.ws.join("calc.py")).unwrap(), CALC);
    let results = results(&events);
    assert_eq!(results.len(), 2);
    assert!(
        results[0].1.contains("asks for no change"),
        "{:?}",
        results[0]
    );
    // Nothing it called succeeded: saki read the file, and it answered again.
    assert!(results[1].1.starts_with(CALC), "{:?}", results[1]);
    // Asked for a change, the same model writes.
    server.push(Turn::text(write_call(
        "calc.py",
        "def add(a, b):\n    return b + a\n",
    )));
    server.push(Turn::text("Done."));
    run(&e, &server, &[], "Make add in calc.py return b + a.");
    assert_eq!(
        std::fs::read_to_string(e.ws.join("calc.py")).unwrap(),
        "def add(a, b):\n    return b + a\n"
    );
}

#[test]
fn a_small_model_deletes_a_file_only_when_asked_to() {
    let e = env_with(&[("settings.py", "NAME = 'x'\nDEBUG = True\n")]);
    let server = llamacpp(494_032_768);
    let delete = r#"{"name": "delete_file", "arguments": {"path": "settings.py"}}"#;
    server.push(Turn::text(delete));
    server.push(Turn::text("Done."));
    let events = run(
        &e,
        &server,
        &[],
        "Change the DEBUG line in settings.py to False.",
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("settings.py")).unwrap(),
        "NAME = 'x'\nDEBUG = True\n"
    );
    assert!(results(&events)[0].1.contains("call edit"), "{events:?}");
    server.push(Turn::text(delete));
    server.push(Turn::text("Done."));
    run(
        &e,
        &server,
        &[],
        "settings.py is not used any more; delete it.",
    );
    assert!(!e.ws.join("settings.py").exists());
}

/// Asked to add a dependency, a 0.5B model replaced the one already listed.
#[test]
fn a_small_model_asked_to_add_takes_nothing_out() {
    let e = env_with(&[("requirements.txt", "flask==3.0.0\n")]);
    own_calls_only(&e);
    let server = llamacpp(494_032_768);
    let edit = |old: &str, new: &str| {
        serde_json::json!({"name": "edit", "arguments": {
            "path": "requirements.txt", "old_string": old, "new_string": new}})
        .to_string()
    };
    server.push(Turn::text(edit("flask==3.0.0", "pyyaml")));
    server.push(Turn::text(edit("", "pyyaml")));
    server.push(Turn::text("Added pyyaml."));
    let events = run(&e, &server, &[], "Add pyyaml to requirements.txt.");
    let results = results(&events);
    assert!(
        results[0].1.contains("asks to add") && results[0].1.contains("flask==3.0.0"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("requirements.txt")).unwrap(),
        "flask==3.0.0\npyyaml\n"
    );
}

/// The text of the last message a request carried.
fn last_message(body: &serde_json::Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A small model stopped looping on a change request it has not made is asked once for
/// the change as an `edit` call, with the request and what the tools returned in one
/// message; a question, or a change already made, is asked for the answer.
#[test]
fn a_small_model_stopped_before_the_change_it_was_asked_for_is_asked_for_an_edit() {
    let e = env_with(&[("settings.py", "NAME = 'x'\nDEBUG = True\nPORT = 1\n")]);
    own_calls_only(&e);
    let server = llamacpp(494_032_768);
    let delete = r#"{"name": "delete_file", "arguments": {"path": "settings.py"}}"#;
    server.push(Turn::text(delete));
    server.push(Turn::text(delete));
    server.push(Turn::text(
        r#"{"name": "edit", "arguments": {"path": "settings.py", "old_string": "DEBUG = True", "new_string": ""}}"#,
    ));
    let events = run(&e, &server, &[], "Remove the DEBUG line from settings.py.");
    // The line went with its line break.
    assert_eq!(
        std::fs::read_to_string(e.ws.join("settings.py")).unwrap(),
        "NAME = 'x'\nPORT = 1\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let asked = &requests[2].body;
    let folded = last_message(asked);
    assert!(
        folded.starts_with("Request: Remove the DEBUG line"),
        "{folded}"
    );
    assert!(folded.ends_with("with one edit call."), "{folded}");
    let schema = asked["response_format"].to_string();
    assert!(schema.contains("\"const\":\"edit\""), "{schema}");
    assert!(!schema.contains("write_file"), "{schema}");
    // The edit made, the turn ends on its result.
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    // A requested edit that fails leaves the answer to be asked for, in text.
    server.push(Turn::text(delete));
    server.push(Turn::text(delete));
    server.push(Turn::text(
        r#"{"name": "edit", "arguments": {"path": "settings.py", "old_string": "VERBOSE = 1", "new_string": ""}}"#,
    ));
    server.push(Turn::text("I could not find it."));
    run(
        &e,
        &server,
        &[],
        "Remove the VERBOSE line from settings.py.",
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let last = last_message(&requests[6].body);
    assert!(last.ends_with("Do not repeat the request."), "{last}");
    assert!(requests[6].body.get("response_format").is_none());

    // A question that loops is asked for its answer at once.
    let read = r#"{"name": "read_file", "arguments": {"path": "settings.py"}}"#;
    server.push(Turn::text(read));
    server.push(Turn::text(read));
    server.push(Turn::text("PORT is 1."));
    run(&e, &server, &[], "What is PORT in settings.py?");
    let requests = server.requests();
    assert_eq!(requests.len(), 10);
    assert!(requests[9].body.get("response_format").is_none());
    let last = last_message(&requests[9].body);
    assert!(last.ends_with("Do not repeat the request."), "{last}");

    // A change made and then sent again is to be told, not explained: asked only for
    // "the answer", a small model explained how to make the change it had made.
    let bump = r#"{"name": "edit", "arguments": {"path": "settings.py", "old_string": "PORT = 1", "new_string": "PORT = 2"}}"#;
    server.push(Turn::text(bump));
    server.push(Turn::text(bump));
    server.push(Turn::text("PORT is now 2 in settings.py."));
    run(&e, &server, &[], "Set PORT to 2 in settings.py.");
    let requests = server.requests();
    assert_eq!(requests.len(), 13);
    let last = last_message(&requests[12].body);
    assert!(last.starts_with("Request: Set PORT to 2"), "{last}");
    assert!(
        last.ends_with("Do not explain how to make the change. Do not call tools."),
        "{last}"
    );
}

/// An answer that is only a note copied from a tool result is asked for again, once.
#[test]
fn a_small_models_answer_of_a_tool_note_alone_is_asked_for_again() {
    let e = env_with(&[("sales.csv", "item,amount\npen,3\nbook,12\n")]);
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        r#"{"name": "read_file", "arguments": {"path": "sales.csv"}}"#,
    ));
    server.push(Turn::text("[3 lines in all]"));
    server.push(Turn::text("The total is 15."));
    let events = run(&e, &server, &[], "What is the total of the amount column?");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let asked = last_message(&requests[2].body);
    assert!(asked.starts_with("Request: What is the total"), "{asked}");
    assert!(asked.contains("pen,3\nbook,12"), "{asked}");
    let loop_note = events
        .iter()
        .find(|e| e["type"] == "loop_detected")
        .unwrap();
    assert!(
        loop_note["message"]
            .as_str()
            .unwrap()
            .contains("only a note"),
        "{loop_note}"
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["requests"], 3, "{done}");
}

/// A 7B model is trusted with what it decides; the approval mode governs it.
#[test]
fn a_larger_model_is_not_held_to_the_prompts_words() {
    let e = env_with(&[("calc.py", CALC)]);
    let server = llamacpp(7_615_616_512);
    server.push(Turn::text("").with_tool_call(
        "c1",
        "write_file",
        serde_json::json!({"path": "calc.py", "content": "x = 1\n"}).to_string(),
    ));
    server.push(Turn::text("Done."));
    run(&e, &server, &[], "What does add in calc.py do?");
    assert_eq!(
        std::fs::read_to_string(e.ws.join("calc.py")).unwrap(),
        "x = 1\n"
    );
}

/// `tool_calling = "constrained"`: each request asks the server for a call of one offered
/// tool or an answer; the call runs, and the answer object is shown as its text.
#[test]
fn constrained_replies_are_calls_or_answers() {
    let e = env_with(&[("NOTE.txt", "The secret word is MANGO.\n")]);
    e.write_config("[providers.openai-compatible]\ntool_calling = \"constrained\"\n");
    let server = llamacpp(494_032_768);
    server.push(Turn::text(
        r#"{"name": "read_file", "arguments": {"path": "NOTE.txt"}}"#,
    ));
    server.push(Turn::text(r#"{"answer": "The word is MANGO."}"#));
    let events = run(&e, &server, &[], "What is the word?");
    assert_eq!(events[0]["tool_calling"], "constrained");
    assert_eq!(results(&events)[0].0, "success");
    let answer: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "assistant_message")
        .map(|e| e["item"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, ["The word is MANGO."]);
    let requests = server.requests();
    let format = &requests[0].body["response_format"];
    assert_eq!(format["type"], "json_schema", "{format}");
    let shapes = format["json_schema"]["schema"]["anyOf"].as_array().unwrap();
    let names: Vec<&str> = shapes
        .iter()
        .filter_map(|s| s["properties"]["name"]["const"].as_str())
        .collect();
    assert!(
        names.contains(&"read_file") && !names.contains(&"web_fetch"),
        "{names:?}"
    );
    assert!(requests[0].body.get("tools").is_none());
}

fn read_call(path: &str) -> String {
    serde_json::json!({"name": "read_file", "arguments": {"path": path}}).to_string()
}

const BROKEN_JSON: &str = "{\n  \"name\": \"app\",\n  \"debug\": false,\n}\n";

/// Asked for a fix, a small model answers with the fixed text instead of saving it; saki
/// saves it through write_file, with a note the model reads next.
#[test]
fn a_small_models_answer_holding_the_fixed_file_is_saved() {
    let e = env_with(&[("config.json", BROKEN_JSON)]);
    own_calls_only(&e);
    let server = llamacpp(494_032_768);
    server.push(Turn::text(read_call("config.json")));
    // A failed edit naming the same file by its absolute path: still one candidate.
    let absolute = e.ws.join("config.json").display().to_string();
    server.push(Turn::text(
        serde_json::json!({"name": "edit", "arguments": {"path": absolute,
            "old_string": "\"debug\": false,,", "new_string": "\"debug\": false"}})
        .to_string(),
    ));
    server.push(Turn::text("{\"name\": \"app\", \"debug\": false}"));
    server.push(Turn::text("I removed the trailing comma."));
    let events = run(
        &e,
        &server,
        &[],
        "Fix the JSON syntax error in config.json.",
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("config.json")).unwrap(),
        "{\"name\": \"app\", \"debug\": false}\n"
    );
    let results = results(&events);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[1].0, "error", "{results:?}");
    assert_eq!(results[2].0, "success", "{results:?}");
    let own = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .nth(2)
        .expect("saki's call");
    assert_eq!(own["item"]["name"], "write_file", "{own}");
    assert!(
        own["item"]["call_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("saki_batch_")),
        "{own}"
    );
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("saki made this write_file call"), "{last}");
    let done = events.iter().rev().find(|e| e["type"] == "turn.completed");
    assert!(done.is_some(), "{events:?}");

    // The same answer to a question changes nothing.
    std::fs::write(e.ws.join("config.json"), BROKEN_JSON).unwrap();
    server.push(Turn::text(read_call("config.json")));
    server.push(Turn::text("{\"name\": \"app\", \"debug\": false}"));
    let events = run(&e, &server, &[], "What is wrong with config.json?");
    assert_eq!(
        std::fs::read_to_string(e.ws.join("config.json")).unwrap(),
        BROKEN_JSON
    );
    assert_eq!(crate::results(&events).len(), 1);
}

/// A 7B model's answer is its answer: only small models get their text saved.
#[test]
fn a_larger_models_answer_is_not_saved() {
    let e = env_with(&[("config.json", BROKEN_JSON)]);
    let server = llamacpp(7_615_616_512);
    server.push(Turn::text("").with_tool_call(
        "c1",
        "read_file",
        serde_json::json!({"path": "config.json"}).to_string(),
    ));
    server.push(Turn::text("{\"name\": \"app\", \"debug\": false}"));
    run(
        &e,
        &server,
        &[],
        "Fix the JSON syntax error in config.json.",
    );
    assert_eq!(
        std::fs::read_to_string(e.ws.join("config.json")).unwrap(),
        BROKEN_JSON
    );
}

/// A small model that answers about a named file without opening it gets the file read
/// by saki, once, and answers again.
#[test]
fn a_small_models_answer_about_a_file_it_did_not_open_is_sent_back_once() {
    let e = env_with(&[("shapes.py", "def a():\n    pass\n\n\ndef b():\n    pass\n")]);
    let server = llamacpp(494_032_768);
    server.push(Turn::text("5"));
    server.push(Turn::text("2"));
    // Not a count: a count is searched for, whether or not the model looked.
    let events = run(&e, &server, &[], "What does `shapes.py` define?");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body["messages"].to_string();
    assert!(second.contains("saki read shapes.py"), "{second}");
    assert!(second.contains("def b():"), "{second}");
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    assert!(calls[0]["item"]["call_id"]
        .as_str()
        .unwrap()
        .starts_with("saki_"));
    // Once per turn, and only when there is somewhere to look.
    server.push(Turn::text("5"));
    server.push(Turn::text("still 5"));
    run(&e, &server, &[], "What does shapes.py define?");
    assert_eq!(server.requests().len(), 4);
    server.push(Turn::text("Hello."));
    run(&e, &server, &[], "What does nothere.py define?");
    assert_eq!(server.requests().len(), 5);
}

/// A small model's prompt is followed by the lines where its words occur; a larger
/// model's is not.
#[test]
fn a_small_models_prompt_is_followed_by_where_its_words_occur() {
    let e = env_with(&[
        ("src/shop/config.py", "TAX_RATE = 0.2\nCURRENCY = 'EUR'\n"),
        ("README.md", "# Notes\n"),
    ]);
    let server = llamacpp(494_032_768);
    server.push(Turn::text("EUR"));
    server.push(Turn::text("EUR"));
    run(&e, &server, &[], "What currency does the shop use?");
    let small = server.requests()[0].body["messages"].to_string();
    assert!(
        small.contains("src/shop/config.py:2:CURRENCY = 'EUR'"),
        "{small}"
    );
    // Answered without a call, the question gets the file its words point to read.
    let again = server.requests()[1].body["messages"].to_string();
    assert!(again.contains("saki read src/shop/config.py"), "{again}");
    let server = llamacpp(7_615_616_512);
    server.push(Turn::text("EUR"));
    run(&e, &server, &[], "What currency does the shop use?");
    let large = server.requests()[0].body["messages"].to_string();
    assert!(!large.contains("CURRENCY"), "{large}");
}

/// Asked to run the tests, a small model is told the command its project's manifest
/// declares, not left to take one from a CI workflow its words were found in.
#[test]
fn a_small_models_prompt_to_run_the_tests_is_followed_by_the_projects_command() {
    let e = env_with(&[
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
        (
            ".github/workflows/ci.yml",
            "- run: cargo clippy --tests -- -Dclippy::pedantic\n",
        ),
    ]);
    let server = llamacpp(494_032_768);
    server.push(Turn::text("Run `cargo test`."));
    run(&e, &server, &[], "Run the tests.");
    let small = server.requests()[0].body["messages"].to_string();
    assert!(
        small.contains("[This project's tests run with `cargo test` (Cargo.toml).]"),
        "{small}"
    );
    let server = llamacpp(7_615_616_512);
    server.push(Turn::text("Run `cargo test`."));
    run(&e, &server, &[], "Run the tests.");
    let large = server.requests()[0].body["messages"].to_string();
    assert!(!large.contains("This project's tests"), "{large}");
}
