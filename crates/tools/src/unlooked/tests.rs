use super::*;
use crate::test_support::workspace_with;
use saki_llm_worker::tool::ToolExecutionContext;

fn ctx(call_id: &str) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: call_id.into(),
        batch_id: "b".into(),
        call_index: 0,
    }
}

fn result(call_id: &str, status: ToolResultStatus) -> Item {
    Item::ToolResult {
        name: "read_file".into(),
        status,
        content: "x".into(),
        ctx: ctx(call_id),
    }
}

fn answered(prompt: &str, between: Vec<Item>) -> Vec<Item> {
    let mut history = vec![Item::user(prompt)];
    history.extend(between);
    history.push(Item::AssistantText { text: "2".into() });
    history
}

/// The file the turn end reads, if it reads one.
async fn read_at_end(files: &[(&str, &str)], history: &[Item]) -> Option<String> {
    let (_dir, workspace) = workspace_with(files);
    match UnlookedAnswer::new(workspace).on_turn_end(history).await {
        TurnEndAction::Call(call) => {
            assert_eq!(call.name, "read_file");
            let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
            Some(input["path"].as_str().unwrap().to_owned())
        }
        TurnEndAction::Finish => None,
        other => panic!("{other:?}"),
    }
}

#[test]
fn path_words_are_the_words_written_like_paths() {
    let words: Vec<&str> =
        path_words("How many functions are in `shapes.py`? See src/lib.rs, .env and e.g. 3.5.")
            .collect();
    assert_eq!(words, ["shapes.py", "src/lib.rs", ".env", "e.g", "3.5"]);
}

#[test]
fn a_question_s_own_words_are_searched_for() {
    assert_eq!(
        search_pattern("What is the timeout in the settings?"),
        Some(word_pattern(&["timeout".into(), "settings".into()]))
    );
    assert_eq!(search_pattern("What does this do?"), None);
}

#[test]
fn only_a_turn_with_no_call_that_succeeded_and_no_own_look_is_unlooked() {
    let q = "How many functions are in shapes.py?";
    assert_eq!(unlooked_prompt(&answered(q, vec![])), Some(q));
    let refused = vec![result("c1", ToolResultStatus::Denied)];
    assert_eq!(unlooked_prompt(&answered(q, refused)), Some(q));
    let read = vec![result("c1", ToolResultStatus::Success)];
    assert_eq!(unlooked_prompt(&answered(q, read)), None);
    let own = format!("{OWN_CALL_PREFIX}b1");
    let looked = vec![result(&own, ToolResultStatus::Error)];
    assert_eq!(unlooked_prompt(&answered(q, looked)), None);
    // A change's refused call is the change guard's and the rewrite's to answer.
    let change = "Fix shapes.py.";
    assert_eq!(unlooked_prompt(&answered(change, vec![])), Some(change));
    let refused = vec![result("c1", ToolResultStatus::Denied)];
    assert_eq!(unlooked_prompt(&answered(change, refused)), None);
}

#[tokio::test]
async fn an_unlooked_answer_reads_the_named_file_or_where_the_question_points() {
    let files = [
        ("shapes.py", "def a():\n    pass\n"),
        ("README.md", "# weather\n\nFetches forecasts.\n"),
        ("conf/app/settings.ini", "[net]\ntimeout = 30\n"),
        ("main.py", "print(0)\n"),
    ];
    let refused = || vec![result("c1", ToolResultStatus::Denied)];
    let named = answered("What does shapes.py do?", refused());
    assert_eq!(
        read_at_end(&files, &named).await.as_deref(),
        Some("shapes.py")
    );
    let deep = answered("What is the timeout in the settings?", refused());
    assert_eq!(
        read_at_end(&files, &deep).await.as_deref(),
        Some("conf/app/settings.ini")
    );
    let about = answered("What does this project do?", vec![]);
    assert_eq!(
        read_at_end(&files, &about).await.as_deref(),
        Some("README.md")
    );
    // A change with no file named is the change guard's and the rewrite's.
    let change = answered("Set the timeout to 60.", refused());
    assert_eq!(read_at_end(&files, &change).await, None);
    let run = answered("Run the tests.", vec![]);
    assert_eq!(read_at_end(&files, &run).await, None);
    let looked = answered(
        "What does this project do?",
        vec![result("c1", ToolResultStatus::Success)],
    );
    assert_eq!(read_at_end(&files, &looked).await, None);
}

#[tokio::test]
async fn a_question_about_functions_whose_words_match_nothing_lists_the_definitions() {
    let files = [
        (
            "utils/strings.py",
            "def shout(s):\n    return s.upper()\n\n\ndef backwards(s):\n    return s[::-1]\n",
        ),
        ("app.py", "print(1)\n"),
    ];
    let (_dir, workspace) = workspace_with(&files);
    let unlooked = UnlookedAnswer::new(workspace.clone());
    let history = answered("Which function reverses a string?", vec![]);
    let TurnEndAction::Call(call) = unlooked.on_turn_end(&history).await else {
        panic!("no call");
    };
    assert_eq!(call.name, "grep");
    let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    let pattern = regex::Regex::new(input["pattern"].as_str().unwrap()).unwrap();
    for line in [
        "def backwards(s):",
        "    async def f():",
        "export function go() {",
        "fn main() {",
    ] {
        assert!(pattern.is_match(line), "{line}");
    }
    for line in ["    return s[::-1]", "# define the class", "defaults = 1"] {
        assert!(!pattern.is_match(line), "{line}");
    }
    // A question about something else, with no README: nothing to read.
    let other = answered("What does this do?", vec![]);
    assert!(matches!(
        unlooked.on_turn_end(&other).await,
        TurnEndAction::Finish
    ));
}

#[tokio::test]
async fn a_question_that_asks_how_many_is_counted_once_in_the_place_it_names() {
    let files = [
        (
            "test_math.py",
            "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n",
        ),
        ("src/a.py", "# TODO: one\n"),
        ("README.md", "# x\n"),
    ];
    let (_dir, workspace) = workspace_with(&files);
    let unlooked = UnlookedAnswer::new(workspace);
    let searched = |action: TurnEndAction| match action {
        TurnEndAction::Call(call) if call.name == "grep" => {
            let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
            (
                input["pattern"].as_str().unwrap().to_owned(),
                input["path"].clone(),
            )
        }
        other => panic!("{other:?}"),
    };
    // Looked or not, the count is searched for.
    let read = vec![result("c1", ToolResultStatus::Success)];
    let (pattern, path) = searched(
        unlooked
            .on_turn_end(&answered("How many tests are in test_math.py?", read))
            .await,
    );
    assert!(pattern.contains("test"), "{pattern}");
    assert_eq!(path, "test_math.py");
    let (pattern, path) = searched(
        unlooked
            .on_turn_end(&answered(
                "How many TODO comments are in the src folder?",
                vec![],
            ))
            .await,
    );
    assert_eq!((pattern.as_str(), path), ("TODO", serde_json::json!("src")));
    // Once: after saki's own search, the answer stands.
    let own = format!("{OWN_CALL_PREFIX}b1");
    let counted = vec![Item::ToolResult {
        name: "grep".into(),
        status: ToolResultStatus::Success,
        content: "[2 matching lines in 1 file]".into(),
        ctx: ctx(&own),
    }];
    let again = unlooked
        .on_turn_end(&answered("How many tests are in test_math.py?", counted))
        .await;
    assert!(matches!(again, TurnEndAction::Finish), "{again:?}");
}

#[test]
fn questions_that_ask_for_a_place_are_known() {
    for q in [
        "Where is the port set?",
        "Tell me where the logger is configured.",
        "Which files import yaml?",
        "In what file is main defined?",
    ] {
        assert!(asks_where(q), "{q}");
    }
    for q in [
        "What is the port?",
        "Which function parses dates?",
        "How many files are there?",
    ] {
        assert!(!asks_where(q), "{q}");
    }
}

#[tokio::test]
async fn a_question_that_asks_which_files_searches_for_its_rarest_word() {
    let files = [
        ("a.py", "import yaml\nyaml.safe_load('x')\n"),
        ("b.py", "import json\n"),
        ("c.py", "import os\nimport yaml\n"),
    ];
    let (_dir, workspace) = workspace_with(&files);
    let history = answered("Which files import yaml?", vec![]);
    let TurnEndAction::Call(call) = UnlookedAnswer::new(workspace.clone())
        .on_turn_end(&history)
        .await
    else {
        panic!("no call");
    };
    assert_eq!(call.name, "grep");
    let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(input["pattern"], word_pattern(&["yaml".into()]));
    assert!(call.note.contains("naming the files"), "{}", call.note);
    // One file read does not answer which files: the search is made all the same,
    // unless the model searched, or saki did.
    let unlooked = UnlookedAnswer::new(workspace);
    let read = answered(
        "Which files import yaml?",
        vec![result("c1", ToolResultStatus::Success)],
    );
    let after_read = unlooked.on_turn_end(&read).await;
    assert!(
        matches!(&after_read, TurnEndAction::Call(call) if call.name == "grep"),
        "{after_read:?}"
    );
    for (name, id) in [
        ("grep", "c1".to_owned()),
        ("read_file", format!("{OWN_CALL_PREFIX}1")),
    ] {
        let searched = answered(
            "Which files import yaml?",
            vec![Item::ToolResult {
                name: name.into(),
                status: ToolResultStatus::Success,
                content: "a.py:1:import yaml".into(),
                ctx: ctx(&id),
            }],
        );
        let judged = unlooked.on_turn_end(&searched).await;
        assert!(
            !matches!(judged, TurnEndAction::Call(_)),
            "{name}: {judged:?}"
        );
    }
}

#[tokio::test]
async fn a_script_the_request_asks_to_run_is_run_when_the_model_ran_nothing() {
    let files = [("checks.py", "print('1 passed, 1 failed')\n")];
    let (_dir, workspace) = workspace_with(&files);
    let unlooked = UnlookedAnswer::new(workspace);
    let prompt = "Run checks.py and tell me how many checks fail.";
    let read = vec![result("c1", ToolResultStatus::Success)];
    let TurnEndAction::Call(call) = unlooked.on_turn_end(&answered(prompt, read)).await else {
        panic!("not run");
    };
    assert_eq!(call.name, "shell");
    assert_eq!(call.arguments, r#"{"command":"python3 checks.py"}"#);
    let shell = Item::ToolResult {
        name: "shell".into(),
        status: ToolResultStatus::Success,
        content: "1 passed, 1 failed".into(),
        ctx: ctx("c2"),
    };
    let ran = unlooked.on_turn_end(&answered(prompt, vec![shell])).await;
    assert!(matches!(ran, TurnEndAction::Finish), "{ran:?}");
    let missing = unlooked
        .on_turn_end(&answered(
            "Run other.py and tell me what it prints.",
            vec![],
        ))
        .await;
    assert!(
        !matches!(&missing, TurnEndAction::Call(c) if c.name == "shell"),
        "{missing:?}"
    );
    let change = unlooked
        .on_turn_end(&answered("Run checks.py and fix what fails.", vec![]))
        .await;
    assert!(
        !matches!(&change, TurnEndAction::Call(c) if c.name == "shell"),
        "{change:?}"
    );
}

#[tokio::test]
async fn a_where_answer_that_names_no_file_is_asked_for_again() {
    let files = [("conf/app.ini", "[db]\nurl = postgres://db/shop\n")];
    let (_dir, workspace) = workspace_with(&files);
    let unlooked = UnlookedAnswer::new(workspace);
    let looked = || vec![result("c1", ToolResultStatus::Success)];
    let with_answer = |prompt: &str, answer: &str| {
        let mut history = vec![Item::user(prompt)];
        history.extend(looked());
        history.push(Item::AssistantText {
            text: answer.into(),
        });
        history
    };
    let q = "Where is the database URL set?";
    for answer in ["url = postgres://db/shop", "It is set in the config."] {
        let judged = unlooked.on_turn_end(&with_answer(q, answer)).await;
        assert!(
            matches!(judged, TurnEndAction::AskAgain(_)),
            "{answer}: {judged:?}"
        );
    }
    let named = unlooked
        .on_turn_end(&with_answer(q, "In conf/app.ini, as url."))
        .await;
    assert!(matches!(named, TurnEndAction::Finish), "{named:?}");
    let not_where = unlooked
        .on_turn_end(&with_answer(
            "What is the database URL?",
            "postgres://db/shop",
        ))
        .await;
    assert!(matches!(not_where, TurnEndAction::Finish), "{not_where:?}");
}

#[tokio::test]
async fn a_request_for_a_directorys_files_lists_it_once_unless_the_model_listed_it() {
    let files = [
        ("src/a.py", "A = 1\n"),
        ("src/b.js", "let b;\n"),
        ("setup.py", "pass\n"),
    ];
    let (_dir, workspace) = workspace_with(&files);
    let unlooked = UnlookedAnswer::new(workspace);
    let read = vec![result("c1", ToolResultStatus::Success)];
    for (prompt, dir) in [("What files are in src?", "src"), ("List the files.", ".")] {
        let TurnEndAction::Call(call) = unlooked.on_turn_end(&answered(prompt, read.clone())).await
        else {
            panic!("no call for {prompt}");
        };
        assert_eq!(call.name, "ls", "{prompt}");
        let input: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(input["path"], dir, "{prompt}");
    }
    let listed = answered(
        "What files are in src?",
        vec![Item::ToolResult {
            name: "ls".into(),
            status: ToolResultStatus::Success,
            content: "a.py\nb.js".into(),
            ctx: ctx("c1"),
        }],
    );
    let judged = unlooked.on_turn_end(&listed).await;
    assert!(
        !matches!(&judged, TurnEndAction::Call(call) if call.name == "ls"),
        "{judged:?}"
    );
    // Words of its own ask for a search among the files, not for all of them.
    let searched = unlooked
        .on_turn_end(&answered("Which files in src import yaml?", read))
        .await;
    assert!(
        !matches!(&searched, TurnEndAction::Call(call) if call.name == "ls"),
        "{searched:?}"
    );
}
