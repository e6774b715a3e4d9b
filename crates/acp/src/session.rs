//! One ACP session's task: it takes the session's prompts one at a time, sends each to
//! the engine, streams what the engine reports as `session/update`s, asks the client
//! about approvals, and answers the prompt when its turn (or command) is over.

use crate::content::prompt_of;
pub(crate) use crate::flags::ClientFlags;
use crate::updates;
use agent_client_protocol::v1::schema::{
    ContentBlock, CurrentModeUpdate, PermissionOption, PermissionOptionKind, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, ToolCallUpdate, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, UntypedMessage};
use saki_engine::slash::{self, Command};
use saki_engine::{
    Action, Approval, ApprovalMode, ApprovalRequest, EngineEvent, Item, Level, Status,
    TextBlockEvent, ThinkingBlockEvent, TurnEnd, TurnStatus, WorkerEvent,
};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Work for a session's task.
pub(crate) enum Job {
    Prompt {
        blocks: Vec<ContentBlock>,
        responder: Responder<PromptResponse>,
    },
}

/// What the prompt being answered is waiting for.
enum Waiting {
    /// A model turn: `TurnFinished` or `Accepted` ends it.
    Turn,
    /// A command: its events are in once `Synced(n)` comes.
    Command(u64),
}

struct Current {
    responder: Responder<PromptResponse>,
    waiting: Waiting,
}

pub(crate) struct SessionTask {
    id: String,
    root: PathBuf,
    status: Status,
    commands: Vec<(String, String)>,
    flags: std::sync::Arc<ClientFlags>,
    /// Tool names by call id (results name their call).
    names: HashMap<String, String>,
    next_sync: u64,
}

impl SessionTask {
    pub(crate) fn new(
        id: String,
        root: PathBuf,
        status: Status,
        commands: Vec<(String, String)>,
        flags: std::sync::Arc<ClientFlags>,
    ) -> Self {
        Self {
            id,
            root,
            status,
            commands,
            flags,
            names: HashMap::new(),
            next_sync: 0,
        }
    }

    /// The history a resumed engine has reported (before it runs), as updates; other
    /// events waiting then are notes of the start.
    pub(crate) fn take_history(
        &mut self,
        events: &mut UnboundedReceiver<EngineEvent>,
    ) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        while let Ok(event) = events.try_recv() {
            match event {
                EngineEvent::History(items) => out.extend(updates::history(&items, &self.root)),
                EngineEvent::Alert { level, message } => log(level, &message),
                _ => {}
            }
        }
        out
    }

    pub(crate) async fn run(
        mut self,
        cx: ConnectionTo<Client>,
        mut events: UnboundedReceiver<EngineEvent>,
        mut jobs: UnboundedReceiver<Job>,
        actions: UnboundedSender<Action>,
    ) {
        self.send(&cx, crate::commands::available_commands(&self.commands));
        let mut current: Option<Current> = None;
        let mut queue: VecDeque<Job> = VecDeque::new();
        loop {
            if current.is_none() {
                if let Some(job) = queue.pop_front() {
                    current = self.begin(job, &cx, &actions);
                    continue;
                }
            }
            tokio::select! {
                job = jobs.recv() => match job {
                    Some(job) => queue.push_back(job),
                    // The connection dropped the session: it ends.
                    None => break,
                },
                event = events.recv() => match event {
                    Some(event) => self.on_event(event, &cx, &actions, &mut current),
                    None => break,
                },
            }
        }
        let _ = actions.send(Action::Quit);
        if let Some(current) = current {
            let _ = current
                .responder
                .respond(PromptResponse::new(StopReason::Cancelled));
        }
    }

    fn send(&self, cx: &ConnectionTo<Client>, update: SessionUpdate) {
        if let Err(e) = cx.send_notification(SessionNotification::new(self.id.clone(), update)) {
            tracing::debug!(error = %e, "a session update was not sent");
        }
    }

    /// Starts a prompt: a built-in command becomes its action, anything else a turn.
    fn begin(
        &mut self,
        job: Job,
        cx: &ConnectionTo<Client>,
        actions: &UnboundedSender<Action>,
    ) -> Option<Current> {
        let Job::Prompt { blocks, responder } = job;
        let parts = prompt_of(&blocks);
        for what in &parts.refused {
            self.send(cx, updates::thought(format!("not attached: {what}")));
        }
        let text = parts.text.trim();
        if text.starts_with('/') && parts.attachments.is_empty() {
            match slash::parse(text) {
                Ok(command) => return self.command(command, responder, cx, actions),
                // Not built in: a custom command, which the engine expands.
                Err(e) if e.starts_with("unknown command") => {}
                Err(e) => {
                    self.send(cx, updates::message(e));
                    let _ = responder.respond(PromptResponse::new(StopReason::EndTurn));
                    return None;
                }
            }
        }
        let action = if parts.attachments.is_empty() {
            Action::Submit { text: parts.text }
        } else {
            Action::SubmitParts {
                text: parts.text,
                attachments: parts.attachments,
            }
        };
        if actions.send(action).is_err() {
            let _ = responder.respond_with_error(Error::internal_error());
            return None;
        }
        Some(Current {
            responder,
            waiting: Waiting::Turn,
        })
    }

    fn command(
        &mut self,
        command: Command,
        responder: Responder<PromptResponse>,
        cx: &ConnectionTo<Client>,
        actions: &UnboundedSender<Action>,
    ) -> Option<Current> {
        let action = match command {
            Command::Help => {
                let lines = slash::help_lines(|b| b.place == slash::Place::Everywhere);
                self.send(
                    cx,
                    updates::message(format!("```\n{}\n```", lines.join("\n"))),
                );
                None
            }
            Command::Quit => {
                self.send(cx, updates::message("the editor closes the session"));
                None
            }
            Command::Compress => {
                let _ = actions.send(Action::Compress);
                return Some(Current {
                    responder,
                    waiting: Waiting::Turn,
                });
            }
            Command::Model { name: None, .. } => {
                self.send(
                    cx,
                    updates::message(format!("model: {}", self.status.model)),
                );
                None
            }
            Command::Model {
                name: Some(model),
                fast,
            } => Some(Action::SetModel { model, fast }),
            Command::Approval(None) => {
                let mode = self.status.approval.map_or("default", ApprovalMode::as_str);
                self.send(cx, updates::message(format!("approval: {mode}")));
                None
            }
            Command::Approval(Some(mode)) => Some(Action::SetApproval(mode)),
            Command::New => Some(Action::NewSession),
            Command::Resume(None) => Some(Action::ListSessions),
            Command::Resume(Some(id)) => Some(Action::Resume { id }),
            Command::Stats => Some(Action::Stats),
            Command::Undo { turns, force } => Some(Action::Undo { turns, force }),
            Command::Redo { force } => Some(Action::Redo { force }),
            Command::Rewind { .. } => Some(Action::ListTurns),
            Command::Mcp => Some(Action::ListMcp),
            Command::Lsp => Some(Action::ListLsp),
            Command::Skills => Some(Action::ListSkills),
            Command::Memory => Some(Action::ListMemory),
        };
        let Some(action) = action else {
            let _ = responder.respond(PromptResponse::new(StopReason::EndTurn));
            return None;
        };
        self.next_sync += 1;
        let sync = self.next_sync;
        if actions.send(action).is_err() || actions.send(Action::Sync(sync)).is_err() {
            let _ = responder.respond_with_error(Error::internal_error());
            return None;
        }
        Some(Current {
            responder,
            waiting: Waiting::Command(sync),
        })
    }

    fn on_event(
        &mut self,
        event: EngineEvent,
        cx: &ConnectionTo<Client>,
        actions: &UnboundedSender<Action>,
        current: &mut Option<Current>,
    ) {
        match event {
            EngineEvent::Text(TextBlockEvent::Delta(text)) => self.send(cx, updates::message(text)),
            EngineEvent::Thinking(ThinkingBlockEvent::Delta(text)) => {
                self.send(cx, updates::thought(text))
            }
            EngineEvent::Worker(WorkerEvent::Committed(item)) => self.on_item(&item, cx),
            EngineEvent::Worker(WorkerEvent::ToolStarted { ctx, .. }) => {
                self.send(cx, updates::started(&ctx.call_id))
            }
            EngineEvent::Worker(_) => {}
            EngineEvent::Tokens(used) => {
                if let Some(size) = self.status.context_window {
                    self.send(cx, SessionUpdate::UsageUpdate(UsageUpdate::new(used, size)));
                }
            }
            EngineEvent::Status(status) => {
                if status.approval != self.status.approval {
                    if let Some(mode) = status.approval {
                        self.send(
                            cx,
                            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())),
                        );
                    }
                }
                self.status = status;
            }
            EngineEvent::Plan { plan, .. } => self.send(cx, updates::plan(&plan)),
            EngineEvent::Approval(request) => self.ask(request, cx),
            EngineEvent::Question(request) => {
                crate::question::put(request, &self.id, self.flags.elicitation(), cx)
            }
            EngineEvent::Alert { level, message } => {
                log(level, &message);
                match current {
                    // A command's output is its answer.
                    Some(Current {
                        waiting: Waiting::Command(_),
                        ..
                    }) => self.send(cx, updates::message(format!("{message}\n"))),
                    Some(_) if level != Level::Info => self.send(cx, updates::thought(message)),
                    _ => {}
                }
            }
            EngineEvent::Undone { message, .. } | EngineEvent::Rewound { prompt: message } => {
                self.send(cx, updates::message(format!("{message}\n")))
            }
            EngineEvent::Stats(stats) => self.send(cx, updates::message(stats.details())),
            EngineEvent::Sessions(list) => {
                let lines: Vec<String> = list
                    .iter()
                    .map(|s| format!("- `{}` {} ({}, {})", s.id, s.title, s.model, s.age))
                    .collect();
                self.send(cx, updates::message(lines.join("\n")));
            }
            EngineEvent::Turns(turns) => {
                let lines: Vec<String> = turns
                    .iter()
                    .map(|t| format!("- turn {}: {} ({} files)", t.turn, t.prompt, t.files))
                    .collect();
                self.send(cx, updates::message(lines.join("\n")));
            }
            EngineEvent::History(items) => {
                for update in updates::history(&items, &self.root) {
                    self.send(cx, update);
                }
            }
            EngineEvent::Suggestion(text) => self.suggest(text, cx, actions),
            EngineEvent::Accepted {
                items, pipelined, ..
            } => {
                for update in updates::history(&items, &self.root) {
                    self.send(cx, update);
                }
                if let Some(current) = current.take() {
                    let _ = current
                        .responder
                        .respond(PromptResponse::new(StopReason::EndTurn));
                }
                if let Some(next) = pipelined {
                    self.suggest(next, cx, actions);
                }
            }
            EngineEvent::TurnFinished { note, end } => {
                if let Some((level, text)) = note.filter(|(l, _)| *l != Level::Info) {
                    log(level, &text);
                    self.send(cx, updates::thought(text));
                }
                if let Some(current) = current.take() {
                    let _ = match stop_reason(end) {
                        Ok(reason) => current.responder.respond(PromptResponse::new(reason)),
                        Err(message) => current.responder.respond_with_error(
                            Error::internal_error().data(serde_json::json!(message)),
                        ),
                    };
                }
            }
            EngineEvent::Synced(n) => {
                if matches!(current, Some(Current { waiting: Waiting::Command(m), .. }) if *m == n)
                {
                    if let Some(current) = current.take() {
                        let _ = current
                            .responder
                            .respond(PromptResponse::new(StopReason::EndTurn));
                    }
                }
            }
            _ => {}
        }
    }

    fn on_item(&mut self, item: &Item, cx: &ConnectionTo<Client>) {
        match item {
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } => {
                let input = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
                self.names.insert(ctx.call_id.clone(), name.clone());
                self.send(
                    cx,
                    SessionUpdate::ToolCall(updates::tool_call(
                        &ctx.call_id,
                        name,
                        &input,
                        &self.root,
                    )),
                );
            }
            Item::ToolResult {
                name,
                content,
                status,
                ctx,
            } => {
                let name = self.names.get(&ctx.call_id).unwrap_or(name).clone();
                self.send(cx, updates::finished(&ctx.call_id, &name, *status, content));
            }
            _ => {}
        }
    }

    /// Offers the suggestion to a client that shows them, and only then speculates it:
    /// a suggestion nobody sees is not worth a request.
    fn suggest(&self, text: String, cx: &ConnectionTo<Client>, actions: &UnboundedSender<Action>) {
        if !self.flags.suggestions() {
            return;
        }
        // The schema's `prompt_suggestions_update`, newer than the SDK's: sent as raw JSON.
        let params = serde_json::json!({
            "sessionId": self.id,
            "update": {
                "sessionUpdate": "prompt_suggestions_update",
                "suggestions": [{"prompt": [{"type": "text", "text": text}]}],
            },
        });
        match UntypedMessage::new("session/update", params) {
            Ok(message) => {
                if cx.send_notification(message).is_ok() {
                    let _ = actions.send(Action::SuggestionShown { text });
                }
            }
            Err(e) => tracing::debug!(error = %e, "the suggestion was not sent"),
        }
    }

    /// Asks the client about a call, in a task of its own: the answer may take as long
    /// as the person does, and events keep streaming meanwhile.
    fn ask(&self, request: ApprovalRequest, cx: &ConnectionTo<Client>) {
        let ApprovalRequest {
            call,
            grant_label,
            reply,
            ..
        } = request;
        let mut options = vec![PermissionOption::new(
            "allow_once",
            "Allow once",
            PermissionOptionKind::AllowOnce,
        )];
        if let Some(label) = &grant_label {
            options.push(PermissionOption::new(
                "allow_session",
                format!("Allow for this session: {label}"),
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.push(PermissionOption::new(
            "reject",
            "Reject",
            PermissionOptionKind::RejectOnce,
        ));
        let fields = updates::tool_call_fields(&call.name, &call.input, &self.root);
        let asked = RequestPermissionRequest::new(
            self.id.clone(),
            ToolCallUpdate::new(call.ctx.call_id.clone(), fields),
            options,
        );
        let cx = cx.clone();
        tokio::spawn(async move {
            let answer = match cx.send_request(asked).block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(chosen) => match &*chosen.option_id.0 {
                        "allow_once" => Approval::Once,
                        "allow_session" if grant_label.is_some() => Approval::Session,
                        _ => Approval::Deny("the person rejected this call".into()),
                    },
                    _ => Approval::Deny("the prompt was cancelled".into()),
                },
                Err(e) => Approval::Deny(format!("the editor did not answer: {e}")),
            };
            let _ = reply.send(answer);
        });
    }
}

/// How a turn's end reads as ACP's stop reason; `Err` for a turn that failed.
fn stop_reason(end: TurnEnd) -> Result<StopReason, String> {
    match end {
        TurnEnd::Turn(Ok(outcome)) => Ok(match outcome.status {
            TurnStatus::MaxTurns => StopReason::MaxTurnRequests,
            TurnStatus::Cancelled => StopReason::Cancelled,
            TurnStatus::PromptCancelled { .. } => StopReason::Refusal,
            TurnStatus::Failed { error } => return Err(error.message),
            _ => StopReason::EndTurn,
        }),
        TurnEnd::Turn(Err(saki_engine::ClientError::Cancelled)) => Ok(StopReason::Cancelled),
        TurnEnd::Turn(Err(e)) => Err(e.to_string()),
        TurnEnd::AcceptRefused { .. } => Ok(StopReason::Refusal),
        TurnEnd::Compacted | TurnEnd::NotApplied { .. } => Ok(StopReason::EndTurn),
    }
}

fn log(level: Level, message: &str) {
    match level {
        Level::Error => tracing::error!("{message}"),
        Level::Warn => tracing::warn!("{message}"),
        Level::Info => tracing::info!("{message}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_failed_turn_is_an_error_and_a_cancelled_one_a_stop_reason() {
        assert_eq!(
            stop_reason(TurnEnd::Turn(Err(saki_engine::ClientError::Cancelled))),
            Ok(StopReason::Cancelled)
        );
        assert_eq!(stop_reason(TurnEnd::Compacted), Ok(StopReason::EndTurn));
    }
}
