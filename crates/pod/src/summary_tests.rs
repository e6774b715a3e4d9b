use super::*;
use saki_llm_worker::ToolExecutionContext;

fn snapshot(goal: &str, plan: &str) -> String {
    format!(
        "<state_snapshot>\n<overall_goal>{goal}</overall_goal>\n<key_knowledge>k</key_knowledge>\n\
         <current_plan>{plan}</current_plan>\n</state_snapshot>"
    )
}

#[test]
fn the_system_prompt_asks_for_every_section_and_a_scratchpad() {
    for tag in SECTIONS {
        assert!(
            COMPACTION_SYSTEM_PROMPT.contains(&format!("<{tag}>")),
            "{tag}"
        );
    }
    assert!(COMPACTION_SYSTEM_PROMPT.contains("<scratchpad>"));
    assert!(COMPACTION_SYSTEM_PROMPT.contains("cannot call tools"));
}

#[test]
fn the_transcript_writes_tool_traffic_as_text() {
    let ctx = ToolExecutionContext {
        call_id: "c1".into(),
        batch_id: "b1".into(),
        call_index: 0,
    };
    let head = [
        Item::user("fix @a.rs"),
        Item::system("[File: a.rs]\nfn a() {}"),
        Item::Thinking {
            text: "private".into(),
            signature: Some("sig".into()),
        },
        Item::ToolCall {
            name: "read_file".into(),
            arguments: "{\"path\":\"b.rs\"}".into(),
            signature: None,
            ctx: ctx.clone(),
        },
        Item::ToolResult {
            name: "read_file".into(),
            content: "fn b() {}".into(),
            status: ToolResultStatus::Error,
            ctx,
        },
        Item::AssistantText {
            text: "done".into(),
        },
    ];
    let text = summary_prompt(&head);
    assert!(text.starts_with("<conversation>\n<user>\nfix @a.rs\n</user>\n"));
    assert!(text.contains("<context>\n[File: a.rs]\nfn a() {}\n</context>"));
    assert!(text.contains("<tool_call name=\"read_file\">\n{\"path\":\"b.rs\"}\n</tool_call>"));
    assert!(text.contains("<tool_result name=\"read_file\" status=\"error\">\nfn b() {}\n"));
    assert!(text.contains("<assistant>\ndone\n</assistant>"));
    assert!(!text.contains("private"), "thinking stays out");
    assert!(text.ends_with("Then, generate the <state_snapshot>."));
    assert!(!text.contains("earlier_snapshot"));
}

#[test]
fn an_earlier_snapshot_is_shown_as_such_and_merged() {
    let [summary, ack] = summary_items(&snapshot("fix", "1. [TODO] it"));
    let head = [summary, ack, Item::user("next")];
    let text = summary_prompt(&head);
    assert!(text.contains("<earlier_snapshot>\n<state_snapshot>"));
    assert!(!text.contains(SUMMARY_MARKER));
    assert!(text.contains("newer facts win"));
}

#[test]
fn the_snapshot_is_cut_out_of_the_scratchpad_and_chatter() {
    let good = snapshot("fix", "1. [TODO] it");
    let reply = format!("<scratchpad>goal: state_snapshot soon</scratchpad>\n{good}\nDone.");
    assert_eq!(snapshot_of(&reply), good);
    let reply = format!("<scratchpad>then the <state_snapshot> tag</scratchpad>{good}");
    assert_eq!(snapshot_of(&reply), good, "the tag named in the scratchpad");
    let reply = format!("<scratchpad>{good}</scratchpad>");
    assert_eq!(
        snapshot_of(&reply),
        good,
        "a snapshot left inside the scratchpad"
    );
    assert_eq!(
        snapshot_of("<scratchpad>x</scratchpad>\n plain summary "),
        "plain summary"
    );
    assert_eq!(snapshot_of("  plain summary "), "plain summary");
}

#[test]
fn a_snapshot_needs_its_goal_and_plan() {
    assert!(missing_sections(&snapshot("fix the bug", "1. [TODO] test")).is_empty());
    assert_eq!(
        missing_sections(&snapshot("fix the bug", "  ")),
        ["current_plan"]
    );
    assert_eq!(
        missing_sections("<state_snapshot>goal: fix</state_snapshot>"),
        ["overall_goal", "current_plan"]
    );
    assert_eq!(missing_sections(""), ["overall_goal", "current_plan"]);
    let ask = retry_prompt(&["current_plan"]);
    assert!(ask.contains("no <current_plan>"), "{ask}");
}

#[test]
fn summaries_are_verified() {
    let tail = vec![Item::user("u"), Item::AssistantText { text: "a".into() }];
    let before = 10_000;
    assert_eq!(
        compacted_history("  ", &[], &tail, before),
        Err(CompactionStatus::FailedEmptySummary)
    );
    assert_eq!(
        compacted_history(&"x".repeat(100_000), &[], &tail, before),
        Err(CompactionStatus::FailedInflated)
    );
    let carried = [Item::user("the request")];
    let (h, after) = compacted_history(&snapshot("fix", "p"), &carried, &tail, before).unwrap();
    assert!(after < before);
    assert_eq!(after, current_tokens(&h, None));
    let (head, checked) = checked_summary(&snapshot("fix", "p"), &carried, &tail, before).unwrap();
    assert_eq!((&head[..], checked), (&h[..2], after));
    assert_eq!(h[2], carried[0]);
    assert_eq!(&h[3..], &tail[..]);
    assert_eq!(previous_snapshot(&h), Some(snapshot("fix", "p").as_str()));
}
