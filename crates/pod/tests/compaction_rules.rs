#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The summary request and what survives it, over HTTP against the mock provider: its own
//! system prompt without tools, the snapshot's sections checked (one more request, then
//! discarded), `@path` files re-read, and a failed or paused summary that still prunes.

use saki_llm_client::{CancellationToken, Client, ClientConfig, ToolDefinition, WireApi};
use saki_llm_worker::*;
use saki_pod::compaction::{PRUNED_MARKER, SUMMARY_MARKER};
use saki_pod::summary::COMPACTION_SYSTEM_PROMPT;
use saki_pod::{CompactionSettings, Compactor, FsView};
use saki_testkit::{MockServer, Reply, Turn};

fn snapshot(goal: &str, plan: &str) -> String {
    format!(
        "<scratchpad>thinking it over</scratchpad>\n<state_snapshot>\n\
         <overall_goal>{goal}</overall_goal>\n<file_system_state>notes.md</file_system_state>\n\
         <current_plan>{plan}</current_plan>\n</state_snapshot>"
    )
}

fn compactor(server: &MockServer, settings: CompactionSettings) -> Compactor {
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    Compactor::new(client, settings)
}

async fn check(c: &Compactor, history: &[Item], trigger: CompactionTrigger) -> Option<Compaction> {
    let cancel = CancellationToken::new();
    let tools = [ToolDefinition {
        name: "read_file".into(),
        description: "reads a file".into(),
        input_schema: serde_json::json!({"type": "object"}),
    }];
    let view = ContextView {
        history,
        system_prompt: Some("You are the agent."),
        tools: &tools,
        last_report: None,
        cancel: &cancel,
    };
    c.check(view, trigger).await
}

fn long_history() -> Vec<Item> {
    let mut h = Vec::new();
    for i in 0..6 {
        h.push(Item::user(format!("step {i} {}", "u".repeat(400))));
        h.push(Item::AssistantText {
            text: "a".repeat(400),
        });
    }
    h
}

fn messages(request: &saki_testkit::RecordedRequest) -> Vec<serde_json::Value> {
    request.body["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_summary_request_has_its_own_prompt_and_no_tools_and_a_call_is_no_summary() {
    let server = MockServer::start().unwrap();
    let c = compactor(&server, CompactionSettings::new("m", 1_000, 0));
    // A model that answers with a call anyway: asked once more, as a continuation.
    server.push(Turn::new().with_tool_call("x", "read_file", "{\"path\":\"a\"}"));
    server.push(Turn::text(snapshot("finish the steps", "1. [TODO] step 6")));
    let done = check(&c, &long_history(), CompactionTrigger::Manual)
        .await
        .unwrap();
    assert_eq!(done.report.status, CompactionStatus::Compressed, "{done:?}");
    let prefix = &done.edit.unwrap().prefix;
    let Item::System { text } = &prefix[0] else {
        panic!("{prefix:?}")
    };
    assert!(text.starts_with(SUMMARY_MARKER));
    assert!(text.contains("<overall_goal>finish the steps</overall_goal>"));
    assert!(!text.contains("scratchpad"), "the scratchpad is left out");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert!(r.body.get("tools").is_none(), "no tools: {}", r.body);
        assert!(r.body.get("tool_choice").is_none());
        let m = messages(r);
        assert_eq!(m[0]["role"], "system");
        assert_eq!(m[0]["content"], COMPACTION_SYSTEM_PROMPT);
        assert!(!r.body.to_string().contains("You are the agent."));
        let asked = m[1]["content"].to_string();
        assert!(asked.contains("<conversation>") && asked.contains("step 0"));
        assert!(asked.contains("First, reason in your <scratchpad>"));
    }
    // The retry extends the first request, so its prefix is cached.
    let (first, second) = (messages(&requests[0]), messages(&requests[1]));
    assert_eq!(first[..], second[..first.len()]);
    assert!(second
        .last()
        .unwrap()
        .to_string()
        .contains("no <overall_goal> and <current_plan>"));
}

#[tokio::test]
async fn a_summary_without_its_plan_is_asked_for_again_then_discarded() {
    let server = MockServer::start().unwrap();
    let c = compactor(&server, CompactionSettings::new("m", 1_000, 0));
    server.push(Turn::text(snapshot("finish the steps", "")));
    server.push(Turn::text(
        "<state_snapshot><overall_goal>finish</overall_goal></state_snapshot>",
    ));
    let done = check(&c, &long_history(), CompactionTrigger::Auto)
        .await
        .unwrap();
    assert_eq!(
        done.report.status,
        CompactionStatus::FailedMissingSections,
        "{done:?}"
    );
    assert_eq!(done.edit, None);
    assert!(done.report.message.unwrap().contains("<current_plan>"));
    assert_eq!(server.requests().len(), 2);
    let second = messages(&server.requests()[1]);
    assert_eq!(second[second.len() - 2]["role"], "assistant");
    assert!(second
        .last()
        .unwrap()
        .to_string()
        .contains("no <current_plan>"));
}

#[tokio::test]
async fn files_attached_with_at_path_are_reread_after_a_summary() {
    let server = MockServer::start().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.md"), "the notes, as they are now\n").unwrap();
    std::fs::write(ws.path().join("other.md"), "not named by the snapshot\n").unwrap();
    let workspace = std::sync::Arc::new(saki_tools::Workspace::new(ws.path()).unwrap());
    let c =
        compactor(&server, CompactionSettings::new("m", 1_000, 0)).with_fs(FsView::new(workspace));
    let mut h = vec![
        Item::user("follow @notes.md and @other.md"),
        Item::system("[File: notes.md]\nthe notes, as they were"),
        Item::system("[File: other.md]\nother"),
    ];
    h.extend(long_history());
    server.push(Turn::text(snapshot("follow the notes", "1. [TODO] go on")));
    let done = check(&c, &h, CompactionTrigger::Manual).await.unwrap();
    assert_eq!(done.report.status, CompactionStatus::Compressed, "{done:?}");
    assert_eq!(done.report.auto_read, ["notes.md"]);
    let edit = done.edit.unwrap();
    assert!(edit.summarized > 3, "the attachments were summarized");
    assert_eq!(
        edit.prefix[2],
        Item::system("[Auto-read file: notes.md]\nthe notes, as they are now\n")
    );
}

/// Old turns whose tool output can be pruned (60k of 90k tokens), then two recent turns
/// whose output is protected and alone keeps the history over a 50k window.
fn prunable_history() -> Vec<Item> {
    let mut h = Vec::new();
    let mut n = 0;
    let mut round = |h: &mut Vec<Item>, tokens: usize| {
        n += 1;
        let ctx = ToolExecutionContext {
            call_id: format!("c{n}"),
            batch_id: format!("b{n}"),
            call_index: 0,
        };
        h.push(Item::user(format!("turn {n}")));
        h.push(Item::ToolCall {
            name: "read_file".into(),
            arguments: format!("{{\"path\":\"f{n}\"}}"),
            signature: None,
            ctx: ctx.clone(),
        });
        h.push(Item::ToolResult {
            name: "read_file".into(),
            content: "abcd".repeat(tokens),
            status: ToolResultStatus::Success,
            ctx,
        });
        h.push(Item::AssistantText { text: "ok".into() });
    };
    for _ in 0..6 {
        round(&mut h, 15_000);
    }
    round(&mut h, 30_000);
    round(&mut h, 1_000);
    h
}

#[tokio::test]
async fn a_failed_summary_keeps_its_prune_and_a_pause_stops_only_summaries() {
    let server = MockServer::start().unwrap();
    let c = compactor(&server, CompactionSettings::new("m", 50_000, 0));
    let h = prunable_history();
    for n in 1..=3 {
        server.push(Reply::status(400, "{\"error\":{\"message\":\"too long\"}}"));
        let done = check(&c, &h, CompactionTrigger::Auto).await.unwrap();
        let report = &done.report;
        assert_eq!(report.status, CompactionStatus::FailedRequest, "{report:?}");
        assert_eq!(report.pruned, 4, "{report:?}");
        assert!(report.tokens_after < report.tokens_before - 50_000);
        let message = report.message.as_deref().unwrap();
        assert!(message.contains("cleared all the same"), "{message}");
        assert_eq!(message.contains("paused"), n == 3, "{message}");
        let edit = done.edit.unwrap();
        assert_eq!((edit.pruned.len(), edit.summarized), (4, 0));
        assert!(edit
            .pruned
            .iter()
            .all(|(_, t)| t.starts_with(PRUNED_MARKER)));
    }
    assert!(c.auto_paused());
    // Paused: the prune still runs, and no summary is asked for.
    let requests = server.requests().len();
    let done = check(&c, &h, CompactionTrigger::Auto).await.unwrap();
    assert_eq!(done.report.status, CompactionStatus::Pruned, "{done:?}");
    assert_eq!(done.edit.unwrap().pruned.len(), 4);
    assert_eq!(server.requests().len(), requests);
    // Pruning off: nothing left to do while paused.
    let mut settings = CompactionSettings::new("m", 50_000, 0);
    settings.prune = false;
    let c = compactor(&server, settings);
    server.push(Turn::text(snapshot("g", "p")));
    let done = check(&c, &h, CompactionTrigger::Manual).await.unwrap();
    assert_eq!(done.report.status, CompactionStatus::Compressed);
    assert_eq!(done.report.pruned, 0, "prune = false: a summary only");
}

#[tokio::test]
async fn the_current_plan_survives_a_summary_word_for_word() {
    let server = MockServer::start().unwrap();
    let c = compactor(&server, CompactionSettings::new("m", 1_000, 0));
    let ctx = |id: &str| ToolExecutionContext {
        call_id: id.into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    };
    let plan = r#"{"plan":[{"step":"read the notes","status":"completed"},{"step":"fix the parser","status":"in_progress"},{"step":"run the tests","status":"pending"}]}"#;
    let mut h = vec![
        Item::user("fix the parser"),
        Item::ToolCall {
            name: "update_plan".into(),
            arguments: plan.into(),
            signature: None,
            ctx: ctx("p1"),
        },
        Item::ToolResult {
            name: "update_plan".into(),
            content: "Plan updated.".into(),
            status: ToolResultStatus::Success,
            ctx: ctx("p1"),
        },
    ];
    h.extend(long_history());
    server.push(Turn::text(snapshot("fix the parser", "1. [TODO] go on")));
    let done = check(&c, &h, CompactionTrigger::Manual).await.unwrap();
    assert_eq!(done.report.status, CompactionStatus::Compressed, "{done:?}");
    let edit = done.edit.unwrap();
    assert!(edit.summarized > 3, "the plan's call was summarized");
    let restated = Item::system(
        "[Current plan (update_plan), kept through the summary]\n\
         - [x] read the notes\n- [~] fix the parser\n- [ ] run the tests",
    );
    assert!(edit.prefix.contains(&restated), "{:?}", edit.prefix);
    // The compacted history still has it as the latest plan.
    let mut compacted = h.clone();
    edit.apply(&mut compacted).unwrap();
    let kept = saki_tools::plan::latest_plan(&compacted).unwrap();
    assert_eq!(kept, saki_tools::plan::Plan::from_arguments(plan).unwrap());
}
