#![allow(clippy::unwrap_used)]
use super::*;

fn ctx(call: &str) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: call.into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    }
}

fn call(id: &str, arguments: &str) -> Item {
    Item::ToolCall {
        name: TOOL_NAME.into(),
        arguments: arguments.into(),
        signature: None,
        ctx: ctx(id),
    }
}

fn result(id: &str, status: ToolResultStatus) -> Item {
    Item::ToolResult {
        name: TOOL_NAME.into(),
        content: "Plan updated.".into(),
        status,
        ctx: ctx(id),
    }
}

const TWO: &str = r#"{"explanation":"start","plan":[{"step":"read","status":"completed"},{"step":"fix","status":"in_progress"}]}"#;
const THREE: &str = r#"{"plan":[{"step":"a","status":"completed"},{"step":"b","status":"completed"},{"step":"c","status":"pending"}]}"#;

#[test]
fn the_tools_shape_is_read() {
    let plan = Plan::from_arguments(TWO).unwrap();
    assert_eq!(plan.explanation.as_deref(), Some("start"));
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(plan.steps[1].status, StepStatus::InProgress);
    assert_eq!(plan.progress(), (1, 2));
    assert_eq!(plan.current().unwrap().step, "fix");
    assert_eq!(plan.checklist(), "- [x] read\n- [~] fix");
    // And written back in the same shape.
    let back: Value = serde_json::to_value(&plan).unwrap();
    assert_eq!(back["plan"][0]["status"], "completed");
}

#[test]
fn statuses_as_small_models_write_them() {
    for (text, status) in [
        ("In Progress", StepStatus::InProgress),
        ("in-progress", StepStatus::InProgress),
        ("DONE", StepStatus::Completed),
        ("todo", StepStatus::Pending),
        ("complete", StepStatus::Completed),
    ] {
        assert_eq!(StepStatus::parse(text), Some(status), "{text}");
    }
    assert_eq!(StepStatus::parse("maybe"), None);
}

#[test]
fn malformed_plans_are_errors_that_name_the_problem() {
    let cases = [
        ("not json", "not JSON"),
        ("[1, 2]", "must be an object"),
        ("{}", "`plan` is missing"),
        (r#"{"plan": 3}"#, "must be an array"),
        (r#"{"plan": "not a list"}"#, "must be an array"),
        (
            r#"{"plan": [{"step": "a", "status": "doing it"}]}"#,
            "step 1: status `doing it` is not pending, in_progress or completed",
        ),
        (
            r#"{"plan": [{"step": "", "status": "pending"}]}"#,
            "`step` is empty",
        ),
        (r#"{"plan": ["just text"]}"#, "step 1: must be an object"),
        (
            r#"{"plan": [{"step": 4, "status": "pending"}]}"#,
            "`step` must be a string",
        ),
        (
            r#"{"plan": [{"step": "a", "status": 1}]}"#,
            "must be a string",
        ),
    ];
    for (input, expected) in cases {
        let err = Plan::from_arguments(input).unwrap_err();
        assert!(err.contains(expected), "{input}: {err}");
        assert!(err.contains("\"plan\""), "the shape is said: {err}");
    }
    let long: Vec<Value> = (0..=MAX_STEPS)
        .map(|i| json!({"step": format!("s{i}"), "status": "pending"}))
        .collect();
    let err = Plan::from_value(&json!({ "plan": long })).unwrap_err();
    assert!(err.contains("at most 30"), "{err}");
}

#[test]
fn lenient_where_nothing_is_guessed() {
    // A list given as a JSON string, a missing status, newlines in a step.
    let plan = Plan::from_value(&json!({
        "plan": "[{\"step\": \"one\\ntwo\"}]"
    }))
    .unwrap();
    assert_eq!(
        plan.steps,
        vec![PlanStep {
            step: "one two".into(),
            status: StepStatus::Pending
        }]
    );
    let long = "x".repeat(500);
    let plan = Plan::from_value(&json!({"plan": [{"step": long, "status": "pending"}]})).unwrap();
    assert_eq!(plan.steps[0].step.chars().count(), 200);
    assert!(plan.steps[0].step.ends_with('…'));
    // An empty plan clears it.
    assert!(Plan::from_arguments(r#"{"plan": []}"#).unwrap().is_empty());
}

#[test]
fn the_latest_successful_call_is_the_plan() {
    let items = vec![
        Item::user("go"),
        call("c1", TWO),
        result("c1", ToolResultStatus::Success),
        call("c2", THREE),
        result("c2", ToolResultStatus::Success),
        // Denied, and one whose arguments were bad: neither is the plan.
        call("c3", r#"{"plan":[{"step":"x","status":"pending"}]}"#),
        result("c3", ToolResultStatus::Denied),
        call("c4", "{broken"),
        result("c4", ToolResultStatus::Success),
        Item::AssistantText {
            text: "done".into(),
        },
    ];
    let plan = latest_plan(&items).unwrap();
    assert_eq!(plan.progress(), (2, 3));
    assert_eq!(latest_plan(&items[..3]).unwrap().progress(), (1, 2));
    assert_eq!(latest_plan(&items[..1]), None);
}

#[test]
fn a_compaction_restates_the_plan_it_summarizes() {
    let summarized = vec![
        Item::user("go"),
        call("c1", TWO),
        result("c1", ToolResultStatus::Success),
    ];
    let kept = vec![Item::user("next")];
    let restated = restatement(&summarized, &kept).unwrap();
    let Item::System { text } = &restated else {
        panic!("{restated:?}")
    };
    assert_eq!(
        text,
        "[Current plan (update_plan), kept through the summary]\n- [x] read\n- [~] fix"
    );
    // Read back, also after a second compaction.
    let compacted = vec![Item::user("summary"), restated.clone(), Item::user("next")];
    let plan = latest_plan(&compacted).unwrap();
    assert_eq!(plan.checklist(), "- [x] read\n- [~] fix");
    assert_eq!(restatement(&compacted, &[]), Some(restated));
    // Not restated when the kept part has a newer plan, or there is none.
    let newer = vec![call("c2", THREE), result("c2", ToolResultStatus::Success)];
    assert_eq!(restatement(&summarized, &newer), None);
    assert_eq!(restatement(&[Item::user("go")], &kept), None);
    // A file that looks like a plan is not one: the tag must be the first line.
    let file = Item::system(format!("[File: x.md]\n{RESTATED_TAG}\n- [x] a"));
    assert_eq!(latest_plan(&[file]), None);
}

#[tokio::test]
async fn the_tool_checks_and_answers_briefly() {
    let out = UpdatePlan.execute(TWO, ctx("c1")).await.unwrap();
    assert_eq!(out.content, "Plan updated.");
    assert_eq!(out.summary.as_deref(), Some("1/2 done"));
    let err = UpdatePlan
        .execute(r#"{"plan":[{"step":"a","status":"bogus"}]}"#, ctx("c2"))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput(ref m) if m.contains("bogus")));
}
