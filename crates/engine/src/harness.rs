//! Test support: an engine against the mock provider, driven like a front end drives it
//! (used by this crate's tests and, with the `test-support` feature, by front ends').
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

use crate::{Action, Engine, EngineEvent, Parts, Settings, SpecState};
use saki_llm_client::{Client, ClientConfig, WireApi};
use saki_llm_worker::{BackgroundUsage, Item, WorkerConfig, WorkerEvent};
use saki_pod::CompactionSettings;
use saki_read_ahead::ReadAheadStats;
use saki_testkit::{MockServer, Turn};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

pub struct Harness {
    pub actions: UnboundedSender<Action>,
    pub events: UnboundedReceiver<EngineEvent>,
    /// The background tokens a front end reports (`Engine::background_usage`).
    pub background: BackgroundUsage,
    pub ws: tempfile::TempDir,
    _data: tempfile::TempDir,
}

pub fn start(server: &MockServer, mode: ApprovalMode, suggestions: bool) -> Harness {
    start_with(server, mode, suggestions, |_| {})
}

pub fn start_with(
    server: &MockServer,
    mode: ApprovalMode,
    suggestions: bool,
    adjust: impl FnOnce(&mut Settings),
) -> Harness {
    start_hooked(server, mode, suggestions, adjust, |_| {})
}

/// Settings as config gives an OpenAI-compatible server: model `main`, `fast` reading
/// ahead, calls written as text recovered.
pub fn settings() -> Settings {
    let mut worker = WorkerConfig::new("main");
    worker.max_turns = 10;
    worker.tool_call_recovery = true;
    Settings {
        provider: "openai-compatible".into(),
        worker,
        fast_model: "fast".into(),
        context_window: None,
        tool_output_max_bytes: saki_tools::common::TOOL_OUTPUT_MAX_BYTES,
        compaction: CompactionSettings::new("fast", 0, 0),
        prewarm: false,
        prompt_cache_key_by_session: false,
    }
}

/// Like `start_with`, with the person's hooks (`add_hooks` gets the workspace's hooks).
pub fn start_hooked(
    server: &MockServer,
    mode: ApprovalMode,
    suggestions: bool,
    adjust: impl FnOnce(&mut Settings),
    add_hooks: impl FnOnce(&mut saki_llm_worker::hook::Hooks),
) -> Harness {
    start_with_commands(server, mode, suggestions, adjust, add_hooks, Vec::new())
}

/// Like `start_hooked`, with the person's custom slash commands.
pub fn start_with_commands(
    server: &MockServer,
    mode: ApprovalMode,
    suggestions: bool,
    adjust: impl FnOnce(&mut Settings),
    add_hooks: impl FnOnce(&mut saki_llm_worker::hook::Hooks),
    commands: Vec<saki_pod::commands::CustomCommand>,
) -> Harness {
    let (engine, action_rx, harness) =
        unstarted(server, mode, suggestions, adjust, add_hooks, commands);
    tokio::spawn(engine.run(action_rx));
    harness
}

/// The engine of `start_with_commands` before it runs, with the actions it is to run on
/// (`Engine::run(actions)`) and the harness that sends them: for tests of what the engine
/// does before its first action.
pub fn unstarted(
    server: &MockServer,
    mode: ApprovalMode,
    suggestions: bool,
    adjust: impl FnOnce(&mut Settings),
    add_hooks: impl FnOnce(&mut saki_llm_worker::hook::Hooks),
    commands: Vec<saki_pod::commands::CustomCommand>,
) -> (Engine, UnboundedReceiver<Action>, Harness) {
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut settings = settings();
    adjust(&mut settings);
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (actions, action_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut hooks = saki_llm_worker::hook::Hooks::new(ws.path().to_path_buf());
    add_hooks(&mut hooks);
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let tools = saki_tools::builtin_server(workspace.clone()).unwrap();
    let engine = Engine::new(Parts {
        client,
        tools: Arc::new(tools),
        workspace,
        settings,
        hooks,
        mode,
        approver: None,
        store: Some(saki_pod::SessionStore::new(data.path().to_path_buf())),
        sandbox: saki_sandbox::SandboxStatus {
            mode: saki_sandbox::SandboxMode::Off,
            enforced: false,
            network: true,
            detail: "tests".into(),
            read_only_unasked: false,
            speculation_overlay: false,
        },
        system_prompt: "You are saki.".into(),
        prompt_builder: Arc::new(|| "You are saki.".into()),
        suggestions,
        resolver: None,
        shared_tools: None,
        mcp: None,
        mcp_report: None,
        commands,
        events: events_tx,
    });
    let harness = Harness {
        actions,
        events,
        background: engine.background_usage(),
        ws,
        _data: data,
    };
    (engine, action_rx, harness)
}

impl Harness {
    pub fn send(&self, action: Action) {
        self.actions.send(action).unwrap();
    }

    /// Waits for the next suggestion and tells the engine it is on screen, as the UI does
    /// once it shows it (only then is it speculated). The events seen, and its text.
    pub async fn show_suggestion(&mut self) -> (Vec<EngineEvent>, String) {
        let events = self
            .until(|e| matches!(e, EngineEvent::Suggestion(_)))
            .await;
        let Some(EngineEvent::Suggestion(text)) = events.last() else {
            unreachable!()
        };
        let text = text.clone();
        self.send(Action::SuggestionShown { text: text.clone() });
        (events, text)
    }

    /// The suggestion after an accept, shown: the pipelined one the accept carried, or
    /// the one that arrives after it (its request may finish on either side of it).
    pub async fn next_suggestion(&mut self, pipelined: Option<String>) -> String {
        match pipelined {
            Some(text) => {
                self.send(Action::SuggestionShown { text: text.clone() });
                text
            }
            None => self.show_suggestion().await.1,
        }
    }

    /// What `/stats` says, asked again every 10 ms until `done` holds: for what the engine
    /// announces with no event (a background request that ended). Fails the test naming
    /// `what` after 30 s (long: the machine may be busy).
    pub async fn stats_when(
        &mut self,
        what: &str,
        done: impl Fn(&ReadAheadStats) -> bool,
    ) -> ReadAheadStats {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            self.send(Action::Stats);
            let answer = self.until(|e| matches!(e, EngineEvent::Stats(_))).await;
            if let Some(EngineEvent::Stats(stats)) = answer.last() {
                if done(stats) {
                    return *stats;
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never happened within 30 s: {what}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Events up to and including the first that `stop` accepts.
    pub async fn until(&mut self, stop: impl Fn(&EngineEvent) -> bool) -> Vec<EngineEvent> {
        let mut seen = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(20), self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for an engine event after {seen:?}"))
                .expect("the engine stopped");
            let done = stop(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

/// Adds the person's hook `command` for `event`.
pub fn hook(
    hooks: &mut saki_llm_worker::hook::Hooks,
    event: saki_llm_worker::hook::HookEvent,
    matcher: Option<&str>,
    command: String,
) {
    hooks.add(
        event,
        saki_llm_worker::hook::HookConfig {
            command,
            matcher: matcher.map(str::to_owned),
            timeout_secs: Some(10),
        },
    );
}

pub fn turn_finished(e: &EngineEvent) -> bool {
    matches!(e, EngineEvent::TurnFinished { .. })
}

pub fn call(id: &str, name: &str, args: serde_json::Value) -> Turn {
    Turn::new().with_tool_call(id, name, args.to_string())
}

pub fn ready(e: &EngineEvent) -> bool {
    matches!(e, EngineEvent::Speculation(SpecState::Ready))
}

pub fn accepted(e: &EngineEvent) -> bool {
    matches!(e, EngineEvent::Accepted { .. })
}

/// A first turn (a tool call and an answer: a suggestion is allowed after it), its
/// suggestion "add notes.txt", and the speculation that writes notes.txt.
pub fn push_notes_plan(server: &MockServer) {
    server.push(call("c1", "ls", json!({"path": "."})));
    server.push(Turn::text("The folder is empty. Shall I add notes.txt?"));
    server.push(Turn::text("add notes.txt"));
    server.push(call(
        "s1",
        "write_file",
        json!({"path": "notes.txt", "content": "hi\n"}),
    ));
    server.push(Turn::text("Added notes.txt."));
}

/// A first turn with a tool call, then two suggestions whose speculations each write a
/// file, each followed by the next (pipelined) suggestion.
pub fn two_step_plan() -> MockServer {
    let server = MockServer::start().unwrap();
    push_notes_plan(&server);
    server.push(Turn::text("add todo.txt"));
    server.push(call(
        "s2",
        "write_file",
        json!({"path": "todo.txt", "content": "- test\n"}),
    ));
    server.push(Turn::text("Added todo.txt."));
    server.push(Turn::text("show both files"));
    server
}

/// The batch ids of the tool calls among `events`, in order.
pub fn batch_ids(events: &[EngineEvent]) -> Vec<String> {
    let items = events.iter().flat_map(|e| match e {
        EngineEvent::Worker(WorkerEvent::Committed(item)) => std::slice::from_ref(item).to_vec(),
        EngineEvent::Accepted { items, .. } => items.clone(),
        _ => Vec::new(),
    });
    let mut ids: Vec<String> = items
        .filter_map(|i| match i {
            Item::ToolCall { ctx, .. } => Some(ctx.batch_id),
            _ => None,
        })
        .collect();
    ids.dedup();
    ids
}

/// Runs the plan to two accepted speculations; every engine event, in order.
pub async fn two_accepts(h: &mut Harness) -> Vec<EngineEvent> {
    let mut events = Vec::new();
    h.send(Action::Submit {
        text: "hello".into(),
    });
    events.extend(h.until(turn_finished).await);
    events.extend(h.show_suggestion().await.0);
    events.extend(h.until(ready).await);
    h.send(Action::Submit {
        text: "add notes.txt".into(),
    });
    events.extend(h.until(accepted).await);
    let pipelined = match events.last() {
        Some(EngineEvent::Accepted { pipelined, .. }) => pipelined.clone(),
        _ => unreachable!(),
    };
    assert_eq!(h.next_suggestion(pipelined).await, "add todo.txt");
    events.extend(h.until(ready).await);
    h.send(Action::Submit {
        text: "add todo.txt".into(),
    });
    events.extend(h.until(accepted).await);
    events
}
