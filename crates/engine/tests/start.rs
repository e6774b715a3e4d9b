#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The session builder (`saki_engine::start`) with a front end's config and the mock
//! provider: the order it asks config in, a new session that answers, a resumed one that
//! hands config its recorded provider and model, and start errors with their exit codes.
//! One test: the builder reads the data directory from the environment, which this
//! process sets once.

use saki_engine::{
    start, Action, EngineEvent, ExitCode, LocalModel, Resume, ServerQuery, SessionConfig,
    SessionSpec, ShellSpec, Start, StartError,
};
use saki_llm_client::server_info::ServerInfo;
use saki_llm_client::{ClientConfig, WireApi};
use saki_llm_worker::hook::Hooks;
use saki_llm_worker::WorkerConfig;
use saki_pod::CompactionSettings;
use saki_testkit::{MockServer, Turn};
use saki_tools::{ApprovalMode, Workspace};
use std::sync::{Arc, Mutex};

/// A front end's config that records what the builder asked, in order.
struct Recording {
    base_url: String,
    workspace: std::path::PathBuf,
    asked: Arc<Mutex<Vec<String>>>,
    fail_resolve: bool,
}

impl Recording {
    fn note(&self, what: String) {
        self.asked.lock().unwrap().push(what);
    }
}

impl SessionConfig for Recording {
    fn resolve(&mut self, recorded: Option<(&str, &str)>) -> Result<(), StartError> {
        self.note(format!("resolve {recorded:?}"));
        if self.fail_resolve {
            return Err(StartError::config("no provider is configured"));
        }
        Ok(())
    }

    fn local_model(&self) -> Option<LocalModel> {
        self.note("local_model".into());
        None
    }

    fn serve_locally(&mut self, base_url: &str) {
        self.note(format!("serve_locally {base_url}"));
    }

    fn server_to_ask(&self) -> Option<ServerQuery> {
        self.note("server_to_ask".into());
        None
    }

    fn server_said(&mut self, facts: Option<ServerInfo>) {
        self.note(format!("server_said {}", facts.is_some()));
    }

    fn spec(&self) -> Result<SessionSpec, StartError> {
        self.note("spec".into());
        let mut worker = WorkerConfig::new("main");
        worker.max_turns = 4;
        let settings = saki_engine::Settings {
            provider: "openai-compatible".into(),
            worker,
            fast_model: "main".into(),
            context_window: None,
            tool_output_max_bytes: 16 * 1024,
            compaction: CompactionSettings::new("main", 0, 0),
            prewarm: false,
            prompt_cache_key_by_session: false,
        };
        Ok(SessionSpec {
            client: ClientConfig::new(WireApi::Chat, self.base_url.clone()),
            settings,
            hooks: Hooks::new(self.workspace.clone()),
            mode: ApprovalMode::Default,
            shell: ShellSpec {
                environment: Default::default(),
                key_names: Vec::new(),
                max_background: None,
                mode: saki_sandbox::SandboxMode::WorkspaceWrite,
                deny_read: Vec::new(),
                network: false,
                unix_sockets: None,
                home: None,
                output_cap: 16 * 1024,
                web: saki_tools::web_fetch::WebSettings::default(),
            },
            lean_tools: true,
            lsp: None,
            workspace_trusted: false,
            mcp_servers: Default::default(),
            config_dir: None,
            subagent_depth: 0,
            undo_limits: None,
            resolver: None,
            prompt_builder: Arc::new(|| "You are saki.".into()),
            suggestions: false,
            warnings: vec!["ignored model: untrusted".into()],
        })
    }
}

async fn answer(
    engine: saki_engine::Engine,
    mut events: tokio::sync::mpsc::UnboundedReceiver<EngineEvent>,
    prompt: &str,
) -> String {
    let (actions, action_rx) = tokio::sync::mpsc::unbounded_channel();
    let running = tokio::spawn(engine.run(action_rx));
    actions
        .send(Action::Submit {
            text: prompt.into(),
        })
        .unwrap();
    let mut text = String::new();
    while let Some(event) = events.recv().await {
        match event {
            EngineEvent::Text(saki_llm_worker::TextBlockEvent::Delta(d)) => text.push_str(&d),
            EngineEvent::TurnFinished { .. } => break,
            _ => {}
        }
    }
    drop(actions);
    running.await.unwrap();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_asks_config_in_order_starts_resumes_and_fails_with_exit_codes() {
    let data = tempfile::tempdir().unwrap();
    // Set before any thread reads it; this file holds one test, so one process.
    std::env::set_var("XDG_DATA_HOME", data.path());
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("first answer"));
    server.push(Turn::text("second answer"));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let config = |fail_resolve| Recording {
        base_url: server.openai_url(),
        workspace: ws.path().to_path_buf(),
        asked: asked.clone(),
        fail_resolve,
    };
    let request = |resume| Start {
        workspace: Workspace::new(ws.path()).unwrap(),
        resume,
        approver: None,
        note: &|_| {},
        extra_mcp: Vec::new(),
        session_id: None,
        shared_local: None,
    };

    // A new session: config is asked in order, and the engine answers.
    let started = start(&mut config(false), request(Resume::New))
        .await
        .unwrap();
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "resolve None",
            "local_model",
            "server_to_ask",
            "server_said false",
            "spec"
        ]
    );
    assert!(!started.resumed);
    assert!(
        started
            .alerts
            .iter()
            .any(|a| a.message == "ignored model: untrusted"),
        "config's warnings reach the person: {:?}",
        started.alerts
    );
    let _ = started.shell.background().limit();
    let text = answer(started.engine, started.events, "hello").await;
    assert_eq!(text, "first answer");

    // Resuming: config gets the session's recorded provider and model.
    asked.lock().unwrap().clear();
    let resumed = start(&mut config(false), request(Resume::Last))
        .await
        .unwrap();
    assert!(resumed.resumed);
    assert_eq!(
        asked.lock().unwrap().first().map(String::as_str),
        Some("resolve Some((\"openai-compatible\", \"main\"))")
    );
    let text = answer(resumed.engine, resumed.events, "again").await;
    assert_eq!(text, "second answer");
    let second = &server.requests()[1].body;
    assert!(
        second.to_string().contains("first answer"),
        "the resumed history was sent: {second}"
    );

    // A config error ends the start before anything else is asked, with exit code 3.
    asked.lock().unwrap().clear();
    let Err(e) = start(&mut config(true), request(Resume::New)).await else {
        panic!("started without config");
    };
    assert_eq!((e.kind, e.code), ("config", ExitCode::Config));
    assert_eq!(*asked.lock().unwrap(), ["resolve None"]);

    // A session that does not exist: a usage error, before config is read.
    asked.lock().unwrap().clear();
    let Err(e) = start(&mut config(false), request(Resume::Id("nope".into()))).await else {
        panic!("resumed a session that does not exist");
    };
    assert_eq!((e.kind, e.code), ("session", ExitCode::Usage));
    assert!(asked.lock().unwrap().is_empty());

    // `saki undo`'s first steps: the session log alone.
    let (_, loaded, _) = saki_engine::open_log(&Resume::Last, ws.path()).unwrap();
    assert_eq!(loaded.meta.model, "main");
    let e = saki_engine::open_log(&Resume::Id("nope".into()), ws.path()).unwrap_err();
    assert_eq!(e.code, ExitCode::Usage);
}
