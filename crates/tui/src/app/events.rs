//! What slash commands and engine events do to the app.

use super::{App, Picker};
use crate::commands::{self, Command};
use crate::protocol::{Action, EngineEvent, Level, SpecState};
use saki_engine::{TextBlockEvent, ThinkingBlockEvent, WorkerEvent};
use std::time::Instant;

/// The keys, under `/help`'s commands.
const KEYS: &str = "\
keys: Enter send the input · Shift+Enter, Alt+Enter or Ctrl+J newline ·
      Up/Down history · Tab/→ put the suggestion in the input · @ find a file ·
      Esc or Ctrl+C cancel a turn · PgUp/PgDn scroll";

impl App {
    pub(super) fn command(&mut self, line: &str) {
        if let Some(reply) = self.extras.slash(line, self.status.session_id.as_deref()) {
            match reply {
                Ok(message) => self.transcript.info(message),
                Err(message) => self.transcript.alert(Level::Warn, message),
            }
            return;
        }
        if self.is_custom(line) {
            // The engine expands it; it queues like any prompt while a turn runs.
            self.submit(line.to_owned());
            return;
        }
        let command = match commands::parse(line) {
            Ok(c) => c,
            Err(message) => {
                self.transcript.alert(Level::Warn, message);
                return;
            }
        };
        let needs_idle = matches!(
            command,
            Command::Compress
                | Command::Stats
                | Command::New
                | Command::Resume(_)
                | Command::Model { name: Some(_), .. }
                | Command::Undo { .. }
                | Command::Redo { .. }
                | Command::Rewind { .. }
        );
        if needs_idle && self.busy {
            self.transcript
                .alert(Level::Info, "wait for the turn to finish (Esc cancels it)");
            return;
        }
        match command {
            Command::Help => {
                let mut help = format!("{}\n{KEYS}", commands::help());
                let custom = self.custom_help();
                if !custom.is_empty() {
                    help = format!("{help}\n{custom}");
                }
                self.transcript.info(help);
            }
            Command::Quit => self.act(Action::Quit),
            Command::Compress => self.act(Action::Compress),
            Command::New => self.act(Action::NewSession),
            Command::Stats => self.act(Action::Stats),
            Command::Undo { turns, force } => self.undo_command(turns, force),
            Command::Redo { force } => self.redo_command(force),
            Command::Rewind { force } => self.rewind_command(force),
            Command::Mcp => self.act(Action::ListMcp),
            Command::Lsp => self.act(Action::ListLsp),
            Command::Skills => self.act(Action::ListSkills),
            Command::Memory => self.act(Action::ListMemory),
            Command::Resume(None) => self.act(Action::ListSessions),
            Command::Resume(Some(id)) => self.act(Action::Resume { id }),
            Command::Model { name: None, .. } => {
                let fast = self.status.fast_model.as_deref().unwrap_or("(same)");
                self.transcript
                    .info(format!("model: {} · fast model: {fast}", self.status.model));
            }
            Command::Model {
                name: Some(model),
                fast,
            } => self.act(Action::SetModel { model, fast }),
            Command::Approval(None) => {
                let mode = self.status.approval.map_or("default", |m| m.as_str());
                self.transcript.info(format!(
                    "approval mode: {mode} (plan, default, auto-edit, yolo; Shift+Tab cycles)"
                ));
            }
            Command::Approval(Some(mode)) => {
                self.status.approval = Some(mode);
                self.transcript.info(format!("approval mode: {mode}"));
                self.act(Action::SetApproval(mode));
            }
        }
    }

    /// Applies what the engine reports.
    pub fn apply(&mut self, event: EngineEvent, now: Instant) {
        self.now = Some(now);
        let event = crate::untrusted::sanitized(event);
        self.extras.observe(&event);
        self.subagent_parent(&event);
        match event {
            EngineEvent::Status(status) => self.status = status,
            EngineEvent::Tokens(tokens) => self.status.tokens_used = tokens,
            EngineEvent::TurnStarted => {
                self.busy = true;
                self.busy_since = Some(now);
            }
            // The engine keeps the prompts sent during a turn; the UI shows them.
            EngineEvent::Queued(prompts) => self.queued = prompts.into(),
            EngineEvent::Unqueued(prompts) => {
                if self.input.is_empty() {
                    self.input.set_text(&prompts.join("\n"));
                }
            }
            EngineEvent::Text(TextBlockEvent::Delta(delta)) => self.transcript.text_delta(&delta),
            EngineEvent::Thinking(ThinkingBlockEvent::Delta(delta)) => {
                self.transcript.thinking_delta(&delta)
            }
            EngineEvent::Text(_) | EngineEvent::Thinking(_) => {}
            EngineEvent::Worker(event) => self.worker_event(event),
            EngineEvent::TurnFinished { note, .. } => {
                self.transcript.end_turn();
                if let Some((level, message)) = note {
                    self.transcript.alert(level, message);
                }
                self.turn_over();
            }
            EngineEvent::Alert { level, message } => self.transcript.alert(level, message),
            EngineEvent::Approval(request) => self.approvals.push_back(request),
            EngineEvent::Question(request) => self.question(request),
            EngineEvent::Subagent(event) => self.subagent(event),
            EngineEvent::Suggestion(text) => {
                if self.input.is_empty() && !self.busy {
                    let _ = self.suggestion.offer(&text, now);
                }
            }
            // Reading ahead is shown by its state; why a suggestion or speculation did not
            // come to anything is for the log.
            EngineEvent::NoSuggestion(_) | EngineEvent::SpeculationEnded(_) => {}
            EngineEvent::Speculation(state) => {
                if self.spec != SpecState::Off {
                    self.spec = state;
                }
            }
            EngineEvent::Accepted {
                items,
                files,
                saved_ms,
                pipelined,
                ..
            } => {
                for item in &items {
                    self.transcript.commit(item);
                }
                self.transcript.end_turn();
                let files = if files.is_empty() {
                    "no files changed".to_owned()
                } else {
                    format!("applied {}", files.join(", "))
                };
                self.transcript.info(format!(
                    "speculated ahead: {files}; {:.1} s saved",
                    saved_ms as f64 / 1000.0
                ));
                self.scroll = 0;
                self.turn_over();
                if let Some(text) = pipelined {
                    if self.input.is_empty()
                        && !self.busy
                        && self.suggestion.offer_now(&text, now).is_ok()
                    {
                        self.shown();
                    }
                }
            }
            EngineEvent::Undone { level, message } => self.transcript.alert(level, message),
            EngineEvent::Turns(turns) => self.show_turns(turns),
            EngineEvent::Rewound { prompt } => self.rewound(prompt),
            EngineEvent::History(items) => {
                self.transcript.replace_with_history(&items);
                self.suggestion.clear();
                self.scroll = 0;
            }
            EngineEvent::Stats(stats) => {
                let cost = self.extras.cost_line().map(|c| format!("\n{c}"));
                self.transcript
                    .info(format!("{}{}", stats.details(), cost.unwrap_or_default()));
            }
            // The UI sends no Sync: it renders each event as it comes.
            EngineEvent::Synced(_) => {}
            EngineEvent::Plan { plan, .. } => self.plan = Some(plan).filter(|p| !p.is_empty()),
            EngineEvent::Sessions(sessions) => {
                if sessions.is_empty() {
                    self.transcript.info("no saved sessions yet");
                } else {
                    self.picker = Some(Picker {
                        sessions,
                        selected: 0,
                    });
                }
            }
        }
    }

    /// What the Worker reported. Accepted speculations are shown whole by `Accepted`, so
    /// their `CommittedMany` is not drawn again.
    fn worker_event(&mut self, event: WorkerEvent) {
        match event {
            WorkerEvent::Committed(item) => self.transcript.commit(&item),
            WorkerEvent::ToolStarted { ctx, .. } => self.transcript.tool_started(&ctx),
            WorkerEvent::Compacted(compaction) => {
                let level = if compaction.report.status.is_failure() {
                    Level::Warn
                } else {
                    Level::Info
                };
                let line = saki_engine::describe::compaction_line(&compaction.report);
                self.transcript.alert(level, line);
            }
            WorkerEvent::LoopDetected { reason } => self.transcript.alert(
                Level::Warn,
                format!("{reason}; the model is asked to answer in text"),
            ),
            WorkerEvent::Retrying { reason } => self
                .transcript
                .alert(Level::Warn, format!("{reason}; trying again")),
            WorkerEvent::CommittedMany(_)
            | WorkerEvent::RequestStarted { .. }
            | WorkerEvent::Usage(_)
            | WorkerEvent::CallsRecovered(_) => {}
        }
    }
}
