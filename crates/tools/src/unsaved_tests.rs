use super::*;
use saki_llm_worker::tool::ToolExecutionContext;

fn ctx(id: &str) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: id.into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    }
}

fn call(id: &str, name: &str, path: &str) -> Item {
    Item::ToolCall {
        name: name.into(),
        arguments: serde_json::json!({ "path": path }).to_string(),
        signature: None,
        ctx: ctx(id),
    }
}

fn result(id: &str, name: &str, status: ToolResultStatus) -> Item {
    Item::ToolResult {
        name: name.into(),
        content: "…".into(),
        status,
        ctx: ctx(id),
    }
}

fn answer(text: &str) -> Item {
    Item::AssistantText { text: text.into() }
}

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn repaired_json_given_as_the_answer_is_the_new_text() {
    let broken = "{\n  \"name\": \"app\",\n  \"debug\": false,\n}\n";
    let found = new_file_text(
        "{\"name\": \"app\", \"debug\": false}",
        &files(&[("config.json", broken)]),
    );
    assert_eq!(
        found,
        Some((
            "config.json".into(),
            "{\"name\": \"app\", \"debug\": false}\n".into()
        ))
    );
}

#[test]
fn a_fenced_block_with_a_new_line_is_the_new_text_without_quoted_notes() {
    let answer = "Here it is:\n```text\nread_file {\"path\":\"requirements.txt\"} returned:\n\
                  flask==3.0.0\npyyaml==6.0\n[2 lines in all]\n```\nDone.";
    let found = new_file_text(answer, &files(&[("requirements.txt", "flask==3.0.0\n")]));
    assert_eq!(
        found,
        Some((
            "requirements.txt".into(),
            "flask==3.0.0\npyyaml==6.0\n".into()
        ))
    );
}

#[test]
fn the_same_words_in_another_layout_are_not_a_change() {
    // JSON for YAML with the same values: nothing the request asked for is in it.
    let yaml = "name: api\nreplicas: 2\nimage: api:1.4\n";
    let answer = "{\"name\": \"api\", \"replicas\": 2, \"image\": \"api:1.4\"}";
    assert_eq!(
        new_file_text(answer, &files(&[("deploy.yaml", yaml)])),
        None
    );
    // Nor is the file quoted as it is.
    assert_eq!(
        new_file_text(&format!("```\n{yaml}```"), &files(&[("deploy.yaml", yaml)])),
        None
    );
}

#[test]
fn a_snippet_of_a_file_is_not_its_new_text() {
    let file = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n\
                def mul(a, b):\n    return a * b\n";
    let answer = "```python\ndef add(a, b):\n    return a + b + 0\n```";
    assert_eq!(new_file_text(answer, &files(&[("calc.py", file)])), None);
}

#[test]
fn a_patch_of_a_file_is_not_its_new_text() {
    let file: String = (0..10).map(|i| format!("v{i} = {i}\n")).collect();
    let mut patch = String::from("```diff\n--- a/x.py\n+++ b/x.py\n@@ -1,10 +1,10 @@\n");
    for line in file.lines() {
        if line == "v4 = 4" {
            patch.push_str("-v4 = 4\n+v4 = 40\n");
        } else {
            patch.push_str(&format!(" {line}\n"));
        }
    }
    patch.push_str("```");
    assert_eq!(new_file_text(&patch, &files(&[("x.py", &file)])), None);
    // The same lines without the patch's marks are the new text.
    let plain = file.replace("v4 = 4", "v4 = 40");
    let answer = format!("```\n{plain}```");
    assert_eq!(
        new_file_text(&answer, &files(&[("x.py", &file)])),
        Some(("x.py".into(), plain))
    );
}

#[test]
fn prose_about_a_file_is_not_its_new_text() {
    let file = "x = 1\n";
    let answer = "To change x in the file, open it and set x to 2, then save the file and run \
                  the program again to see the new value printed.";
    assert_eq!(new_file_text(answer, &files(&[("a.py", file)])), None);
}

#[test]
fn two_files_that_fit_leave_the_answer_alone() {
    let answer = "```\nx = 2\ny = 3\n```";
    let both = files(&[("a.py", "x = 1\ny = 3\n"), ("b.py", "x = 1\ny = 3\n")]);
    assert_eq!(new_file_text(answer, &both), None);
}

#[test]
fn a_change_request_that_made_no_change_and_answered_is_an_unsaved_turn() {
    let history = vec![
        Item::user("Add pyyaml to requirements.txt"),
        call("c1", "read_file", "requirements.txt"),
        result("c1", "read_file", ToolResultStatus::Success),
        call("c2", "edit", "requirements.txt"),
        result("c2", "edit", ToolResultStatus::Error),
        answer("```\nflask\npyyaml\n```"),
    ];
    let turn = unsaved_turn(&history).expect("unsaved");
    assert_eq!(turn.paths, vec!["requirements.txt".to_string()]);
    assert!(turn.answer.contains("pyyaml"));
}

#[test]
fn questions_made_changes_and_saki_s_own_call_end_the_turn_as_it_is() {
    let question = vec![
        Item::user("What does requirements.txt hold?"),
        call("c1", "read_file", "requirements.txt"),
        result("c1", "read_file", ToolResultStatus::Success),
        answer("```\nflask\npyyaml\n```"),
    ];
    assert!(unsaved_turn(&question).is_none());
    let changed = vec![
        Item::user("Add pyyaml to requirements.txt"),
        call("c1", "edit", "requirements.txt"),
        result("c1", "edit", ToolResultStatus::Success),
        answer("```\nflask\npyyaml\n```"),
    ];
    assert!(unsaved_turn(&changed).is_none());
    let saved = vec![
        Item::user("Add pyyaml to requirements.txt"),
        call("c1", "read_file", "requirements.txt"),
        result("c1", "read_file", ToolResultStatus::Success),
        answer("```\nflask\npyyaml\n```"),
        call("saki_batch_2", "write_file", "requirements.txt"),
        result("saki_batch_2", "write_file", ToolResultStatus::Denied),
        answer("```\nflask\npyyaml\n```"),
    ];
    assert!(unsaved_turn(&saved).is_none());
    let nothing_read = vec![
        Item::user("Add pyyaml to requirements.txt"),
        answer("```\nflask\npyyaml\n```"),
    ];
    assert!(unsaved_turn(&nothing_read).is_none());
}

proptest::proptest! {
    #[test]
    fn any_answer_and_file_are_judged_without_a_panic(answer in "\\PC{0,200}", file in "\\PC{0,200}") {
        let _ = new_file_text(&answer, &files(&[("f", &file)]));
    }
}
