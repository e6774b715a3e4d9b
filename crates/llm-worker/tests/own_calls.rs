#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A call an interceptor makes on the model's behalf at turn end (`TurnEndAction::Call`):
//! recorded as a call of its own batch, judged by every interceptor like the model's
//! calls, followed by its note, and then the model is asked again.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Records the arguments of each call it runs.
struct Save(Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl Tool for Save {
    fn name(&self) -> &str {
        "save"
    }
    fn description(&self) -> &str {
        "Save text"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn execute(&self, input: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(input.to_owned());
        Ok(ToolOutput::new("saved"))
    }
}

/// Saves the first answer of a turn; refuses calls whose text is "no".
struct SaveTheAnswer;

#[async_trait::async_trait]
impl Interceptor for SaveTheAnswer {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        if call.input["text"] == "no" {
            ToolAction::Deny("not that".into())
        } else {
            ToolAction::Allow
        }
    }
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        if history
            .iter()
            .any(|i| matches!(i, Item::ToolCall { name, .. } if name == "save"))
        {
            return TurnEndAction::Finish;
        }
        let Some(Item::AssistantText { text }) = history.last() else {
            return TurnEndAction::Finish;
        };
        TurnEndAction::Call(OwnCall {
            name: "save".into(),
            arguments: json!({ "text": text }).to_string(),
            note: "[saved for you]".into(),
        })
    }
}

fn worker(server: &MockServer, saved: Arc<Mutex<Vec<String>>>) -> Worker {
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Save(saved))).unwrap();
    let mut worker = Worker::new(client, Arc::new(tools), WorkerConfig::new("m"));
    worker.add_interceptor(Arc::new(SaveTheAnswer));
    worker
}

#[tokio::test]
async fn a_call_made_at_turn_end_runs_as_its_own_batch_and_the_model_answers_after_it() {
    let server = MockServer::start().unwrap();
    let saved = Arc::new(Mutex::new(Vec::new()));
    let mut worker = worker(&server, saved.clone());
    server.push(Turn::text("the text"));
    server.push(Turn::text("Saved."));
    let outcome = worker
        .run_turn("write it", CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    assert_eq!(outcome.requests, 2);
    assert_eq!(*saved.lock().unwrap(), [r#"{"text":"the text"}"#]);
    let h = worker.history();
    let Item::ToolCall { name, ctx, .. } = &h[2] else {
        panic!("{h:?}")
    };
    assert_eq!(name, "save");
    assert!(ctx.batch_id.starts_with("batch_"), "{ctx:?}");
    assert_eq!(ctx.call_id, format!("saki_{}", ctx.batch_id));
    assert!(matches!(
        &h[3],
        Item::ToolResult {
            status: ToolResultStatus::Success,
            ..
        }
    ));
    assert_eq!(h[4], Item::system("[saved for you]"));
    assert_eq!(
        h[5],
        Item::AssistantText {
            text: "Saved.".into()
        }
    );
    // The model saw the call, its result and the note.
    let sent = server.requests()[1].body["messages"].to_string();
    assert!(sent.contains("[saved for you]"), "{sent}");
    assert!(sent.contains("\"save\""), "{sent}");
}

#[tokio::test]
async fn a_call_made_at_turn_end_is_refused_like_any_other() {
    let server = MockServer::start().unwrap();
    let saved = Arc::new(Mutex::new(Vec::new()));
    let mut worker = worker(&server, saved.clone());
    server.push(Turn::text("no"));
    server.push(Turn::text("Not saved."));
    worker
        .run_turn("write it", CancellationToken::new())
        .await
        .unwrap();
    assert!(saved.lock().unwrap().is_empty());
    let h = worker.history();
    assert!(
        matches!(&h[3], Item::ToolResult { status: ToolResultStatus::Denied, content, .. }
            if content.contains("not that")),
        "{h:?}"
    );
}

/// At a loop stop, asks for a `save` call; at turn end, saves "second" once a call
/// saved "first" (a change the turn still owes after the one it was asked for).
struct SaveTheSecond;

#[async_trait::async_trait]
impl Interceptor for SaveTheSecond {
    async fn on_loop_stop(&self, _: &[Item]) -> LoopStopAction {
        LoopStopAction::Call {
            tools: vec!["save".into()],
            instruction: "Save it now.".into(),
        }
    }
    async fn on_turn_end(&self, history: &[Item]) -> TurnEndAction {
        let saved = |text: &str| {
            history.iter().any(|i| {
                matches!(i, Item::ToolCall { name, arguments, .. }
                    if name == "save" && arguments.contains(text))
            })
        };
        if !saved("first") || saved("second") {
            return TurnEndAction::Finish;
        }
        TurnEndAction::Call(OwnCall {
            name: "save".into(),
            arguments: json!({ "text": "second" }).to_string(),
            note: "[saved the second]".into(),
        })
    }
}

#[tokio::test]
async fn a_call_owed_at_turn_end_is_made_after_the_call_a_stopped_turn_was_asked_for() {
    let server = MockServer::start().unwrap();
    let saved = Arc::new(Mutex::new(Vec::new()));
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Save(saved.clone()))).unwrap();
    let mut config = WorkerConfig::new("m");
    config.tool_call_recovery = true;
    let mut worker = Worker::new(client, Arc::new(tools), config);
    worker.add_interceptor(Arc::new(SaveTheSecond));
    let again = || Turn::new().with_tool_call("c", "save", r#"{"text":"a"}"#);
    server.push(again());
    server.push(again());
    server.push(Turn::new().with_tool_call("d", "save", r#"{"text":"first"}"#));
    server.push(Turn::text("Saved both."));
    let outcome = worker
        .run_turn("save first and second", CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    assert_eq!(
        *saved.lock().unwrap(),
        [
            r#"{"text":"a"}"#,
            r#"{"text":"first"}"#,
            r#"{"text":"second"}"#
        ]
    );
    assert_eq!(outcome.requests, 4);
    let h = worker.history();
    assert_eq!(
        h.last(),
        Some(&Item::AssistantText {
            text: "Saved both.".into()
        })
    );
}
