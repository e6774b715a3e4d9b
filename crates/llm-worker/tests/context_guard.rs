#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Worker consults its context guard after every turn that ran, applies the edit and
//! announces it before `run_turn` returns, so the next request carries it.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Turn};
use std::sync::{Arc, Mutex};

/// Before requests: never acts. After a turn: replaces the first item's text, and counts.
#[derive(Default)]
struct AfterTurnOnly {
    after_turns: Mutex<usize>,
}

#[async_trait::async_trait]
impl ContextGuard for AfterTurnOnly {
    async fn check(&self, _: ContextView<'_>, _: CompactionTrigger) -> Option<Compaction> {
        None
    }

    async fn after_turn(&self, view: ContextView<'_>) -> Option<Compaction> {
        *self.after_turns.lock().unwrap() += 1;
        let edit = HistoryEdit {
            summarized: 1,
            prefix: vec![Item::system(format!(
                "upkeep after {} items",
                view.history.len()
            ))],
            ..HistoryEdit::default()
        };
        let report = CompactionReport {
            trigger: CompactionTrigger::Auto,
            status: CompactionStatus::Pruned,
            tokens_before: 10,
            tokens_after: 5,
            pruned: 0,
            summarized: 0,
            auto_read: Vec::new(),
            message: None,
        };
        Some(Compaction {
            report,
            edit: Some(edit),
        })
    }
}

/// Cancels every prompt.
struct Refuse;

#[async_trait::async_trait]
impl Interceptor for Refuse {
    async fn on_prompt_submit(&self, _: &Item) -> PromptAction {
        PromptAction::Cancel("no".into())
    }
}

#[tokio::test]
async fn the_guard_runs_after_each_turn_and_its_edit_is_committed_first() {
    let server = MockServer::start().unwrap();
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let mut worker = Worker::new(client, Arc::new(ToolServer::new()), WorkerConfig::new("m"));
    let guard = Arc::new(AfterTurnOnly::default());
    worker.set_context_guard(guard.clone());
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    worker.set_observer(Arc::new(move |e| seen.lock().unwrap().push(e.clone())));

    server.push(Turn::text("one"));
    worker
        .run_turn("first", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(*guard.after_turns.lock().unwrap(), 1);
    // Announced after the turn's items, and applied to history.
    let last = events.lock().unwrap().last().cloned().unwrap();
    assert!(matches!(
        last,
        WorkerEvent::Compacted(Compaction { edit: Some(_), .. })
    ));
    assert_eq!(worker.history()[0], Item::system("upkeep after 2 items"));

    // The next request carries the edited history.
    server.push(Turn::text("two"));
    worker
        .run_turn("second", CancellationToken::new())
        .await
        .unwrap();
    let body = server.requests().last().unwrap().body.to_string();
    assert!(body.contains("upkeep after 2 items") && !body.contains("\"first\""));
    assert_eq!(*guard.after_turns.lock().unwrap(), 2);

    // A refused prompt ran no turn: no upkeep.
    worker.add_interceptor(Arc::new(Refuse));
    let outcome = worker
        .run_turn("third", CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(outcome.status, TurnStatus::PromptCancelled { .. }));
    assert_eq!(*guard.after_turns.lock().unwrap(), 2);
}
