#![allow(clippy::unwrap_used)]
use super::*;
use saki_llm_worker::tool::ToolExecutionContext;

fn intent(prompt: &str) -> Intent {
    read_intent(prompt)
}

#[test]
fn questions_and_requests_to_look_ask_for_no_change() {
    for prompt in [
        "What does add in calc.py do?",
        "what does add in calc.py do",
        "Which file defines the function parse_config?",
        "How many lines does data.csv have?",
        "Read NOTE.txt and tell me the secret word.",
        "List the files in the docs directory.",
        "Run calc.py with python3 and tell me what it prints.",
        "Explain settings.py to me.",
        "Is the add function in calc.py correct?",
        "Where is the port set?",
        "Read calc.py and explain what add does",
        "Explain how to sort the list in utils.py.",
        "Tell me which files I should change, and why.",
        "Give me an overview of this project.",
        "Find the handler that exports the report.",
    ] {
        assert!(!intent(prompt).change, "{prompt}");
    }
}

#[test]
fn a_files_name_is_not_a_change_word() {
    assert!(!intent("Look at changelog.md and setup.py.").change);
    let entry = intent("Add a 1.1.0 entry above 1.0.0 in CHANGELOG.md saying: Added dark mode.");
    assert!(entry.change && entry.additive);
}

#[test]
fn a_request_about_a_file_in_other_words_asks_for_a_change() {
    for prompt in [
        "In loader.py, only load the file once it exists.",
        "app.py crashes with a ZeroDivisionError.",
        "Let retry.py wait two seconds between tries",
    ] {
        let read = intent(prompt);
        assert!(
            read.change && !read.additive && !read.subtractive,
            "{prompt}"
        );
    }
    for prompt in [
        // A question in the prompt: the statement sets it up.
        "NOTE.txt has a secret word. What is it?",
        // Words that ask to look.
        "Print the first line of data.csv.",
        "The output of report.py, please explain it.",
        "Show me cli.py",
        // No file named: nothing for a change to go to.
        "Only call main when the module is run directly.",
    ] {
        assert!(!intent(prompt).change, "{prompt}");
    }
}

#[test]
fn a_prepend_only_adds() {
    assert!(intent("Prepend a shebang line to run.sh.").additive);
}

#[test]
fn a_question_inside_a_request_hides_only_its_own_words() {
    for prompt in [
        "Find where the port is set, then change it to 80.",
        "Find where the port is set and change it to 80.",
        "Add a docstring that says what add does.",
        "Fix the bug where the total is wrong.",
    ] {
        assert!(intent(prompt).change, "{prompt}");
    }
    assert_eq!(without_embedded_questions("what add does"), "what add does");
    assert_eq!(
        without_embedded_questions("read calc.py and explain what add does, then run it"),
        "read calc.py and explain then run it"
    );
}

#[test]
fn requests_for_a_change_are_read_as_such_also_inside_a_question() {
    for prompt in [
        "The add function in calc.py gives the wrong result. Fix it.",
        "Can you fix the bug in calc.py?",
        "Could you add a test for parse_config?",
        "In config.json, change the port to 9090.",
        "Append the line '- buy milk' to TODO.md.",
        "Create a file hello.txt containing the text: hello world",
        "Why does the test fail? Make it pass.",
        "We stopped using the cache; take it out of config.toml.",
        "Scale the api to 5 replicas in deploy.yaml.",
        "Bump the version to 0.4.0",
        "Give connect in db.py a timeout parameter that defaults to 10.",
        "Reorder the imports in main.py.",
        "In run.sh, comment out the rm line.",
        "Please set DEBUG to False",
    ] {
        assert!(intent(prompt).change, "{prompt}");
    }
}

#[test]
fn short_stems_match_words_not_file_names() {
    assert!(!intent("Read settings.py and say what it holds.").change);
    assert!(intent("The settings are wrong; set PORT to 80.").change);
    assert!(intent("Move utils.py into lib/.").removal);
    assert!(
        !intent("Read address.txt").change,
        "`add` inside another word"
    );
}

#[test]
fn a_deletion_needs_words_that_ask_for_something_to_go() {
    assert!(intent("Delete the file tmp.log.").removal);
    assert!(intent("old_helpers.py is not used anymore, remove it.").removal);
    assert!(intent("Rename utils.py to helpers.py.").removal);
    assert!(!intent("Rename the function greet to welcome.").removal);
    assert!(intent("Get rid of the build directory").removal);
    assert!(intent("Discard tmp.log").change && intent("Discard tmp.log").removal);
    assert!(!intent("Change the port in config.json to 9090.").removal);
    assert!(!intent("Set replicas to 5 in deploy.yaml").removal);
    // A part of a file to go is not the file.
    assert!(!intent("Remove the DEBUG line from settings.py.").removal);
    assert!(!intent("Delete the unused import in app.py").removal);
    assert!(!intent("Remove the function helper from utils.py").removal);
    assert!(intent("Remove the DEBUG line from settings.py.").change);
    assert!(
        intent("Delete settings.yaml and rows.csv").removal,
        "names, not parts"
    );
    assert!(intent("Remove the file called line_numbers.txt").removal);
    // Ignoring something in git changes .gitignore.
    assert!(intent("Ignore the dist folder in git.").change);
    assert_eq!(
        ignore_file("Make git ignore *.log files"),
        Some(".gitignore")
    );
    assert_eq!(
        ignore_file("Ignore node_modules in the docker build."),
        Some(".dockerignore")
    );
    assert_eq!(ignore_file("Why does git ignore build?"), None);
    assert!(!intent("Ignore the warnings.").change);
    // A file the verb has for its object goes, whatever part of another file follows.
    assert!(intent("Rename helpers.py to utils.py and update the import in main.py.").removal);
    assert!(intent("Delete the file old.log and the TODO line in notes.md").removal);
    // A removal asked in a question is still a question.
    assert!(!intent("Should I delete tmp.log?").removal);
}

#[test]
fn only_file_changes_are_refused_and_only_when_unasked() {
    let question = intent("What does add in calc.py do?");
    for tool in ["write_file", "edit", "delete_file"] {
        assert!(ChangeGuard::refusal(question, tool).is_some(), "{tool}");
    }
    for tool in ["read_file", "grep", "ls", "glob", "shell"] {
        assert!(ChangeGuard::refusal(question, tool).is_none(), "{tool}");
    }
    let one_line = intent("Change the DEBUG line in settings.py to DEBUG = False.");
    assert!(ChangeGuard::refusal(one_line, "edit").is_none());
    assert!(ChangeGuard::refusal(one_line, "write_file").is_none());
    let why = ChangeGuard::refusal(one_line, "delete_file").unwrap();
    assert!(
        why.contains("edit"),
        "points to the tool that changes lines: {why}"
    );
    let delete = intent("Delete tmp.log");
    assert!(ChangeGuard::refusal(delete, "delete_file").is_none());
}

fn call(name: &str) -> ToolCallInfo {
    with_input(
        name,
        "c1",
        serde_json::json!({"path": "calc.py", "content": "x"}),
    )
}

#[tokio::test]
async fn the_guard_judges_each_turn_by_its_own_prompt() {
    let guard = ChangeGuard::new();
    // Before any prompt there is nothing to judge by.
    assert_eq!(
        guard.pre_tool_call(&call("write_file")).await,
        ToolAction::Allow
    );
    guard
        .on_prompt_submit(&Item::user("What does add in calc.py do?"))
        .await;
    assert!(matches!(
        guard.pre_tool_call(&call("write_file")).await,
        ToolAction::Deny(_)
    ));
    assert_eq!(
        guard.pre_tool_call(&call("read_file")).await,
        ToolAction::Allow
    );
    guard
        .on_prompt_submit(&Item::user("Now make add return a + b."))
        .await;
    assert_eq!(
        guard.pre_tool_call(&call("write_file")).await,
        ToolAction::Allow
    );
    assert!(matches!(
        guard.pre_tool_call(&call("delete_file")).await,
        ToolAction::Deny(_)
    ));
}

#[tokio::test]
async fn a_stopped_turn_is_asked_for_the_change_when_not_made_and_to_say_it_when_made() {
    let guard = ChangeGuard::new();
    let result = |name: &str, status| Item::ToolResult {
        name: name.into(),
        content: "x".into(),
        status,
        ctx: call(name).ctx,
    };
    let change = Item::user("Set PORT to 9090 in app.ini.");
    guard.on_prompt_submit(&change).await;
    let read = vec![
        change.clone(),
        result("read_file", ToolResultStatus::Success),
    ];
    match guard.on_loop_stop(&read).await {
        LoopStopAction::Call { tools, instruction } => {
            assert_eq!(tools, ["edit"]);
            assert_eq!(instruction, CHANGE_INSTRUCTION);
        }
        other => panic!("{other:?}"),
    }
    // A failed edit changed nothing; a successful one did.
    let failed = vec![change.clone(), result("edit", ToolResultStatus::Error)];
    assert!(matches!(
        guard.on_loop_stop(&failed).await,
        LoopStopAction::Call { .. }
    ));
    // A change made is to be told, not explained.
    let edited = vec![change, result("edit", ToolResultStatus::Success)];
    assert_eq!(
        guard.on_loop_stop(&edited).await,
        LoopStopAction::AnswerWith(MADE_INSTRUCTION.to_owned())
    );
    // A question is answered.
    let question = Item::user("What is PORT in app.ini?");
    guard.on_prompt_submit(&question).await;
    assert_eq!(
        guard.on_loop_stop(&[question]).await,
        LoopStopAction::Answer
    );
}

#[test]
fn a_prompt_that_asks_only_to_add_is_read_as_such() {
    for prompt in [
        "Add pyyaml to requirements.txt.",
        "Add a License section to README.md that says MIT.",
        "Append '*.log' to .gitignore",
        "Insert a blank line after the heading in NOTES.md.",
        "Give me a hand: add a docstring to parse in util.py.",
    ] {
        assert!(intent(prompt).additive, "{prompt}");
    }
    for prompt in [
        "Add 1 to the patch version in VERSION.",
        "Add pyyaml to requirements.txt and remove flask.",
        "Replace the port with 80 and add a comment.",
        "Set DEBUG to False.",
        "What does add in calc.py do?",
        "Add a test. Then fix the bug it finds.",
    ] {
        assert!(!intent(prompt).additive, "{prompt}");
    }
}

#[test]
fn an_addition_keeps_every_character_of_what_it_edits() {
    let add = intent("Add pyyaml to requirements.txt.");
    let edit = |old: &str, new: &str| serde_json::json!({"path": "r.txt", "old_string": old, "new_string": new});
    let why = ChangeGuard::removal_in_addition(add, &edit("flask==3.0.0", "flask==3.0.1"));
    assert!(why.unwrap().contains("flask==3.0.0"));
    assert!(ChangeGuard::removal_in_addition(add, &edit("Does things.", "MIT")).is_some());
    for (old, new) in [
        ("flask==3.0.0", "flask==3.0.0\npyyaml"),
        ("def greet(name):", "def greet(name='world'):"),
        ("", "pyyaml"),
        ("x = 1", "  x = 1  # one"),
    ] {
        assert!(
            ChangeGuard::removal_in_addition(add, &edit(old, new)).is_none(),
            "{old} -> {new}"
        );
    }
    let change = intent("Change flask to 3.0.1 in requirements.txt.");
    assert!(
        ChangeGuard::removal_in_addition(change, &edit("flask==3.0.0", "flask==3.0.1")).is_none()
    );
}

#[tokio::test]
async fn the_guard_refuses_an_edit_that_takes_text_out_of_an_addition() {
    let guard = ChangeGuard::new();
    guard
        .on_prompt_submit(&Item::user("Add pyyaml to requirements.txt."))
        .await;
    let mut edit = call("edit");
    edit.input = serde_json::json!({"path": "requirements.txt", "old_string": "flask==3.0.0", "new_string": "pyyaml"});
    assert!(matches!(
        guard.pre_tool_call(&edit).await,
        ToolAction::Deny(_)
    ));
    edit.input =
        serde_json::json!({"path": "requirements.txt", "old_string": "", "new_string": "pyyaml"});
    assert_eq!(guard.pre_tool_call(&edit).await, ToolAction::Allow);
}

fn with_input(name: &str, id: &str, input: serde_json::Value) -> ToolCallInfo {
    ToolCallInfo {
        name: name.into(),
        arguments: input.to_string(),
        input,
        ctx: ToolExecutionContext {
            call_id: id.into(),
            batch_id: "b1".into(),
            call_index: 0,
        },
    }
}

#[tokio::test]
async fn a_write_that_drops_text_read_is_refused_when_the_request_only_adds() {
    let guard = ChangeGuard::new();
    guard
        .on_prompt_submit(&Item::user("Add pyyaml to requirements.txt."))
        .await;
    let path = serde_json::json!({"path": "requirements.txt"});
    guard
        .post_tool_call(&ToolResultInfo {
            call: with_input("read_file", "r1", path),
            content: "flask==3.0.0\nrequests\n[2 lines in all]".into(),
            status: ToolResultStatus::Success,
        })
        .await;
    let write = |content: &str| {
        with_input(
            "write_file",
            "w1",
            serde_json::json!({"path": "requirements.txt", "content": content}),
        )
    };
    let dropped = guard.pre_tool_call(&write("pyyaml\n")).await;
    assert!(matches!(dropped, ToolAction::Deny(ref why) if why.contains("leaves out")));
    let kept = guard
        .pre_tool_call(&write("flask==3.0.0\nrequests\npyyaml\n"))
        .await;
    assert_eq!(kept, ToolAction::Allow);
    // A file the turn did not read is not judged; nor is a request that changes.
    let other = with_input(
        "write_file",
        "w2",
        serde_json::json!({"path": "new.txt", "content": "x"}),
    );
    assert_eq!(guard.pre_tool_call(&other).await, ToolAction::Allow);
    guard
        .on_prompt_submit(&Item::user("Replace requirements.txt with pyyaml."))
        .await;
    assert_eq!(
        guard.pre_tool_call(&write("pyyaml\n")).await,
        ToolAction::Allow
    );
}

#[test]
fn a_prompt_that_asks_only_to_take_out_is_read_as_such() {
    for prompt in [
        "Remove the DEBUG line from settings.py.",
        "We stopped using the cache; take it out of config.toml.",
        "Delete the unused import in app.py.",
        "Drop the last row of data.csv.",
    ] {
        assert!(intent(prompt).subtractive, "{prompt}");
    }
    for prompt in [
        "Remove flask and add pyyaml in requirements.txt.",
        "Move parse to util.py.",
        "Rename greet to welcome.",
        "Replace the port with 80.",
        "What does remove in list.py do?",
        "Add pyyaml to requirements.txt.",
    ] {
        assert!(!intent(prompt).subtractive, "{prompt}");
    }
}

#[tokio::test]
async fn a_change_that_takes_nothing_out_is_refused_when_the_request_only_takes_out() {
    let guard = ChangeGuard::new();
    guard
        .on_prompt_submit(&Item::user("Remove the DEBUG line from settings.py."))
        .await;
    let edit = |old: &str, new: &str| {
        with_input(
            "edit",
            "e1",
            serde_json::json!({"path": "settings.py", "old_string": old, "new_string": new}),
        )
    };
    // Appended after the line it was to remove, or the line kept with more around it.
    for (old, new) in [
        ("", "DEBUG = False"),
        ("DEBUG = True", "DEBUG = True\n# off"),
    ] {
        let refused = guard.pre_tool_call(&edit(old, new)).await;
        assert!(
            matches!(refused, ToolAction::Deny(ref why) if why.contains("takes nothing out")),
            "{old:?} -> {new:?}: {refused:?}"
        );
    }
    assert_eq!(
        guard.pre_tool_call(&edit("DEBUG = True\n", "")).await,
        ToolAction::Allow
    );
    // A whole text written over a file read must leave something out too.
    let path = serde_json::json!({"path": "settings.py"});
    guard
        .post_tool_call(&ToolResultInfo {
            call: with_input("read_file", "r1", path),
            content: "NAME = 'shop'\nDEBUG = True\n[2 lines in all]".into(),
            status: ToolResultStatus::Success,
        })
        .await;
    let write = |content: &str| {
        with_input(
            "write_file",
            "w1",
            serde_json::json!({"path": "settings.py", "content": content}),
        )
    };
    assert!(matches!(
        guard
            .pre_tool_call(&write("NAME = 'shop'\nDEBUG = True\nDEBUG = False\n"))
            .await,
        ToolAction::Deny(_)
    ));
    assert_eq!(
        guard.pre_tool_call(&write("NAME = 'shop'\n")).await,
        ToolAction::Allow
    );
}
