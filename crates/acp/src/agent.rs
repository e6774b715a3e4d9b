//! The connection: one handler per ACP method. Handlers run in the SDK's dispatch loop,
//! which handles one message at a time, so none of them waits for a model or a server:
//! starting a session runs in a task of its own, and a prompt is handed to its session's
//! task, which answers it when the turn ends.

use crate::editor_fs::EditorFs;
use crate::session::{ClientFlags, Job, SessionTask};
use crate::updates;
use crate::{McpServerSpec, SessionFactory, SessionRequest, StartError, StartedSession};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, SessionCapabilities, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigOptionValue, SessionConfigSelectOption, SessionInfo,
    SessionListCapabilities, SessionNotification, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, ConnectTo, Error, LineDirection, Stdio};
use saki_engine::{Action, ApprovalMode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// A running session, as the connection reaches it.
struct Handle {
    actions: UnboundedSender<Action>,
    jobs: UnboundedSender<Job>,
    models: Arc<Mutex<(String, Vec<String>)>>,
}

/// What the handlers share.
struct State {
    factory: Arc<dyn SessionFactory>,
    sessions: Mutex<HashMap<String, Handle>>,
    flags: Arc<ClientFlags>,
}

impl State {
    fn session<T>(&self, id: &str, f: impl FnOnce(&Handle) -> T) -> Result<T, Error> {
        let sessions = self.sessions.lock().map_err(|_| Error::internal_error())?;
        match sessions.get(id) {
            Some(handle) => Ok(f(handle)),
            None => Err(not_found(id)),
        }
    }
}

/// Serves ACP on stdin and stdout until the client closes them.
pub async fn serve_stdio(factory: Arc<dyn SessionFactory>) -> Result<(), Error> {
    let flags = Arc::new(ClientFlags::default());
    let seen = flags.clone();
    // The client's `initialize` as it was sent: the SDK's schema drops capabilities it
    // does not know yet (prompt suggestions), which this reads off the line itself.
    let transport = Stdio::new().with_debug(move |line, direction| {
        if direction == LineDirection::Stdin {
            seen.observe_line(line);
        }
    });
    serve(transport, factory, flags).await
}

/// Serves ACP over `transport` (a test's in-memory pipe, or stdio).
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    factory: Arc<dyn SessionFactory>,
    flags: Arc<ClientFlags>,
) -> Result<(), Error> {
    let state = Arc::new(State {
        factory,
        sessions: Mutex::new(HashMap::new()),
        flags,
    });
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let served = Agent
        .v1()
        .name("saki")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx: ConnectionTo<Client>| {
                s1.flags.observe_capabilities(&request.client_capabilities);
                responder.respond(initialize_response())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: AuthenticateRequest, responder, _cx: ConnectionTo<Client>| {
                // Keys come from the environment or config; there is nothing to log in to.
                responder.respond(AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                let state = s2.clone();
                tokio::spawn(async move {
                    let id = saki_engine::new_session_id();
                    let started =
                        start(&state, &cx, request.cwd, &request.mcp_servers, id, false).await;
                    let _ = match started {
                        Ok(opened) => {
                            let response = NewSessionResponse::new(opened.id.clone())
                                .modes(updates::modes(opened.mode))
                                .config_options(opened.config.clone());
                            opened.run(&state, cx, || responder.respond(response))
                        }
                        Err(e) => responder.respond_with_error(start_error(e)),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let state = s3.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    let started =
                        start(&state, &cx, request.cwd, &request.mcp_servers, id, true).await;
                    let _ = match started {
                        Ok(mut opened) => {
                            // The history first, then the answer: the client shows the
                            // conversation before it takes the next prompt.
                            let replay = opened.replay();
                            for update in replay {
                                let _ = cx.send_notification(SessionNotification::new(
                                    opened.id.clone(),
                                    update,
                                ));
                            }
                            let response = LoadSessionResponse::new()
                                .modes(updates::modes(opened.mode))
                                .config_options(opened.config.clone());
                            opened.run(&state, cx, || responder.respond(response))
                        }
                        Err(e) => responder.respond_with_error(start_error(e)),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx: ConnectionTo<Client>| {
                let sessions = s4
                    .factory
                    .list(request.cwd.as_deref())
                    .into_iter()
                    .map(|s| {
                        SessionInfo::new(s.id, s.cwd)
                            .title(Some(s.title).filter(|t| !t.is_empty()))
                            .updated_at(s.updated_at)
                    })
                    .collect();
                responder.respond(ListSessionsResponse::new(sessions))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx: ConnectionTo<Client>| {
                let job = Job::Prompt {
                    blocks: request.prompt,
                    responder,
                };
                let id = request.session_id.0.to_string();
                let sessions = s5.sessions.lock().map_err(|_| Error::internal_error())?;
                match sessions.get(&id) {
                    Some(handle) => {
                        if let Err(unsent) = handle.jobs.send(job) {
                            let Job::Prompt { responder, .. } = unsent.0;
                            responder.respond_with_error(
                                Error::internal_error()
                                    .data(serde_json::json!("the session has ended")),
                            )?;
                        }
                    }
                    None => {
                        let Job::Prompt { responder, .. } = job;
                        responder.respond_with_error(not_found(&id))?;
                    }
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                let id = notification.session_id.0.to_string();
                // A cancel for a session that is gone has nothing left to stop.
                let _ = s6.session(&id, |h| h.actions.send(Action::Cancel));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx: ConnectionTo<Client>| {
                let mode: ApprovalMode = match request.mode_id.0.parse() {
                    Ok(mode) => mode,
                    Err(message) => {
                        return responder.respond_with_error(
                            Error::invalid_params().data(serde_json::json!(message)),
                        )
                    }
                };
                let id = request.session_id.0.to_string();
                match s7.session(&id, |h| h.actions.send(Action::SetApproval(mode))) {
                    Ok(_) => responder.respond(SetSessionModeResponse::new()),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder,
                        _cx: ConnectionTo<Client>| {
                let id = request.session_id.0.to_string();
                let model = match (&*request.config_id.0, &request.value) {
                    ("model", SessionConfigOptionValue::ValueId { value }) => value.0.to_string(),
                    _ => {
                        return responder.respond_with_error(Error::invalid_params().data(
                            serde_json::json!("the one option is `model`, set to a model's name"),
                        ))
                    }
                };
                let options = s8.session(&id, |h| {
                    let _ = h.actions.send(Action::SetModel {
                        model: model.clone(),
                        fast: false,
                    });
                    let mut models = h.models.lock().unwrap_or_else(|e| e.into_inner());
                    models.0 = model.clone();
                    if !models.1.contains(&model) {
                        models.1.push(model.clone());
                    }
                    model_option(&models.0, &models.1)
                });
                match options {
                    Ok(option) => {
                        responder.respond(SetSessionConfigOptionResponse::new(vec![option]))
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _cx: ConnectionTo<Client>| {
                let id = request.session_id.0.to_string();
                let removed = s9
                    .sessions
                    .lock()
                    .map_err(|_| Error::internal_error())?
                    .remove(&id);
                match removed {
                    Some(handle) => {
                        let _ = handle.actions.send(Action::Quit);
                        responder.respond(CloseSessionResponse::new())
                    }
                    None => responder.respond_with_error(not_found(&id)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport)
        .await;
    // The client went away: every session ends, its turn cancelled and its log kept.
    let handles: Vec<Handle> = match state.sessions.lock() {
        Ok(mut sessions) => sessions.drain().map(|(_, h)| h).collect(),
        Err(_) => Vec::new(),
    };
    for handle in handles {
        let _ = handle.actions.send(Action::Quit);
    }
    served
}

fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_info(Implementation::new("saki", env!("CARGO_PKG_VERSION")).title("saki".to_owned()))
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true))
                .session_capabilities(
                    SessionCapabilities::new().list(SessionListCapabilities::new()),
                ),
        )
        .auth_methods(Vec::new())
}

/// The model as a session config option.
fn model_option(current: &str, models: &[String]) -> SessionConfigOption {
    let options: Vec<SessionConfigSelectOption> = models
        .iter()
        .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
        .collect();
    SessionConfigOption::select("model", "Model", current.to_owned(), options)
        .category(SessionConfigOptionCategory::Model)
}

fn start_error(e: StartError) -> Error {
    let error = if e.auth {
        Error::auth_required()
    } else {
        Error::internal_error()
    };
    error.data(serde_json::json!(e.message))
}

fn mcp_specs(servers: &[McpServer]) -> Vec<McpServerSpec> {
    servers
        .iter()
        .filter_map(|server| match server {
            McpServer::Stdio(s) => Some(McpServerSpec::Stdio {
                name: s.name.clone(),
                command: s.command.display().to_string(),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
            }),
            McpServer::Http(s) => Some(McpServerSpec::Http {
                name: s.name.clone(),
                url: s.url.clone(),
                headers: s
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
            }),
            // SSE is not offered in the capabilities: a client that sends one anyway gets
            // the session without it.
            _ => {
                tracing::warn!("an MCP server of a transport saki does not speak was left out");
                None
            }
        })
        .collect()
}

/// A session started and not yet running.
struct Opened {
    id: String,
    mode: ApprovalMode,
    config: Vec<SessionConfigOption>,
    task: SessionTask,
    started: StartedSession,
    models: Arc<Mutex<(String, Vec<String>)>>,
}

impl Opened {
    /// The history a resumed engine reported, as updates.
    fn replay(&mut self) -> Vec<agent_client_protocol::v1::schema::SessionUpdate> {
        self.task.take_history(&mut self.started.events)
    }

    /// Makes the session reachable, gives the client its answer (`answer`: after the
    /// session is reachable, so a prompt sent at once finds it; before the session's own
    /// updates, which name it), then starts the engine and the session's task.
    fn run<R>(self, state: &Arc<State>, cx: ConnectionTo<Client>, answer: impl FnOnce() -> R) -> R {
        let (actions, action_rx) = unbounded_channel();
        let (jobs, job_rx) = unbounded_channel();
        if let Ok(mut sessions) = state.sessions.lock() {
            sessions.insert(
                self.id.clone(),
                Handle {
                    actions: actions.clone(),
                    jobs,
                    models: self.models.clone(),
                },
            );
        }
        let answered = answer();
        let StartedSession {
            engine,
            events,
            closer,
            ..
        } = self.started;
        let engine = tokio::spawn(engine.run(action_rx));
        let task = self.task;
        tokio::spawn(async move {
            task.run(cx, events, job_rx, actions).await;
            let _ = engine.await;
            closer.close().await;
        });
        answered
    }
}

/// Starts a session through the factory and prepares its task.
async fn start(
    state: &Arc<State>,
    cx: &ConnectionTo<Client>,
    cwd: std::path::PathBuf,
    mcp: &[McpServer],
    session_id: String,
    resume: bool,
) -> Result<Opened, StartError> {
    let (reads, writes) = state.flags.fs();
    let fs = (reads || writes).then(|| {
        Arc::new(EditorFs::new(cx.clone(), session_id.clone(), reads, writes))
            as Arc<dyn saki_engine::fs::Fs>
    });
    let request = SessionRequest {
        cwd: cwd.clone(),
        mcp_servers: mcp_specs(mcp),
        session_id,
        resume,
        fs,
    };
    let started = state.factory.start(request).await?;
    let id = started.engine.session_id().ok_or_else(|| StartError {
        message: "the session has no id: sessions cannot be saved here".into(),
        auth: false,
    })?;
    let status = started.engine.status();
    let models = Arc::new(Mutex::new((status.model.clone(), started.models.clone())));
    let config = vec![model_option(&status.model, &started.models)];
    let commands = started
        .engine
        .commands()
        .iter()
        .map(|c| (c.name.clone(), c.description.clone().unwrap_or_default()))
        .collect();
    let root = started.engine.workspace().root().to_path_buf();
    let task = SessionTask::new(id.clone(), root, status, commands, state.flags.clone());
    Ok(Opened {
        id,
        mode: started.mode,
        config,
        task,
        started,
        models,
    })
}

/// ACP's "resource not found", for a session id the agent does not hold.
fn not_found(id: &str) -> Error {
    Error::new(
        -32002,
        format!("no session {id} (it ended, or was never opened here)"),
    )
}
