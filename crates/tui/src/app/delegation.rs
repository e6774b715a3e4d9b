//! What the delegation tools bring to the UI: a question from the model (`ask_user`, or
//! `exit_plan_mode` asking whether to leave plan mode) as a picker with free text, and
//! subagents (`agent` calls) as a live group above the input: one line per running
//! subagent with its latest call, Ctrl+O to show each of its calls. When the `agent`
//! call's result is in, the group folds into one transcript line.

use super::App;
use crate::protocol::{EngineEvent, QuestionKind, QuestionRequest, SubagentEvent};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::Line;
use saki_engine::ApprovalMode;
use saki_engine::{Item, WorkerEvent};
use std::collections::BTreeMap;

/// A question on screen: its options (and a free-text row when allowed).
pub struct QuestionPicker {
    pub request: QuestionRequest,
    pub selected: usize,
    pub text: String,
}

/// One subagent's progress.
#[derive(Debug, Default, Clone)]
pub struct SubagentView {
    pub agent: String,
    /// Its tool calls: name, and the result's status once in.
    pub calls: Vec<(String, String, Option<String>)>,
}

/// Running subagents by parent call id, and whether they are shown expanded.
#[derive(Debug, Default)]
pub struct Subagents {
    pub running: BTreeMap<String, SubagentView>,
    pub expanded: bool,
}

impl App {
    /// A question arrived (the engine waits for the reply).
    pub(super) fn question(&mut self, request: QuestionRequest) {
        if let QuestionKind::LeavePlan { plan } = &request.kind {
            self.transcript.info(format!("plan:\n{plan}"));
        }
        self.question = Some(QuestionPicker {
            request,
            selected: 0,
            text: String::new(),
        });
    }

    fn answer_question(&mut self, answer: String) {
        let Some(picker) = self.question.take() else {
            return;
        };
        if matches!(picker.request.kind, QuestionKind::LeavePlan { .. }) {
            // The engine switches the mode; the status line shows it at once.
            if let Ok(mode) = answer.parse::<ApprovalMode>() {
                self.status.approval = Some(mode);
                self.transcript.info(format!("approval mode: {mode}"));
            }
        }
        let _ = picker.request.reply.send(Some(answer));
    }

    pub(super) fn on_question_key(&mut self, key: KeyEvent) {
        let Some(picker) = &mut self.question else {
            return;
        };
        let options = picker.request.options.len();
        match key.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => picker.selected = (picker.selected + 1).min(options.saturating_sub(1)),
            KeyCode::Enter => {
                let answer = if !picker.text.trim().is_empty() {
                    picker.text.trim().to_owned()
                } else if let Some(option) = picker.request.options.get(picker.selected) {
                    option.clone()
                } else {
                    return;
                };
                self.answer_question(answer);
            }
            KeyCode::Esc => {
                let answer = match picker.request.kind {
                    QuestionKind::LeavePlan { .. } => "stay in plan mode".to_owned(),
                    QuestionKind::Ask => "(the person dismissed the question)".to_owned(),
                };
                self.answer_question(answer);
            }
            KeyCode::Backspace => {
                picker.text.pop();
            }
            KeyCode::Char(c) if picker.request.free_text => picker.text.push(c),
            KeyCode::Char(c) => {
                // Without free text, a digit picks an option.
                if let Some(n) = c.to_digit(10).filter(|n| (1..=options as u32).contains(n)) {
                    picker.selected = n as usize - 1;
                }
            }
            _ => {}
        }
    }

    /// The picker's lines (under the transcript, where the input is).
    pub(crate) fn question_lines(&self, picker: &QuestionPicker, width: u16) -> Vec<Line<'static>> {
        let hint = if picker.request.free_text {
            "↑↓ pick, or type an answer; Enter sends, Esc dismisses"
        } else {
            "↑↓ pick, Enter sends, Esc stays"
        };
        let mut lines = vec![self.rule_line(width, hint)];
        for line in picker.request.question.lines().take(6) {
            lines.push(Line::styled(format!("  {line}"), self.theme.bold()));
        }
        for (i, option) in picker.request.options.iter().enumerate() {
            let style = if i == picker.selected && picker.text.is_empty() {
                self.theme.selected()
            } else {
                self.theme.text()
            };
            lines.push(Line::styled(format!("  {}. {option}", i + 1), style));
        }
        if picker.request.free_text {
            lines.push(Line::styled(
                format!("  › {}", picker.text),
                self.theme.accent(),
            ));
        }
        lines
    }

    fn rule_line(&self, width: u16, title: &str) -> Line<'static> {
        let fill = usize::from(width).saturating_sub(title.chars().count() + 3);
        Line::styled(
            format!("─ {title} {}", "─".repeat(fill)),
            self.theme.border(),
        )
    }

    /// A subagent's event: live while its `agent` call runs; a resumed session's
    /// (replayed while idle) go straight to the transcript.
    pub(super) fn subagent(&mut self, event: SubagentEvent) {
        let items: Vec<Item> = match event.event {
            WorkerEvent::Committed(item) => vec![item],
            WorkerEvent::CommittedMany(items) => items,
            _ => return,
        };
        if !self.busy {
            for item in items {
                if let Item::ToolResult { name, status, .. } = item {
                    self.transcript.info(format!(
                        "  ↳ agent {}: {name} {}",
                        event.agent,
                        status_word(&status)
                    ));
                }
            }
            return;
        }
        let view = self
            .subagents
            .running
            .entry(event.parent_call_id)
            .or_default();
        view.agent = event.agent;
        for item in items {
            match item {
                Item::ToolCall { name, ctx, .. } => view.calls.push((ctx.call_id, name, None)),
                Item::ToolResult { status, ctx, .. } => {
                    if let Some(call) = view.calls.iter_mut().find(|c| c.0 == ctx.call_id) {
                        call.2 = Some(status_word(&status));
                    }
                }
                _ => {}
            }
        }
    }

    /// The main loop's events that end a subagent: its `agent` call's result.
    pub(super) fn subagent_parent(&mut self, event: &EngineEvent) {
        let EngineEvent::Worker(WorkerEvent::Committed(Item::ToolResult {
            name, ctx, status, ..
        })) = event
        else {
            return;
        };
        if name != "agent" {
            return;
        }
        if let Some(view) = self.subagents.running.remove(&ctx.call_id) {
            self.transcript.info(format!(
                "agent {}: {} tool calls, {}",
                view.agent,
                view.calls.len(),
                status_word(status)
            ));
        }
    }

    /// Ctrl+O: each subagent's calls, or one line each.
    pub(super) fn toggle_subagents(&mut self) {
        self.subagents.expanded = !self.subagents.expanded;
    }

    /// Lines above the input while subagents run.
    pub(crate) fn subagent_lines(&self) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for view in self.subagents.running.values() {
            let last = view
                .calls
                .last()
                .map(|(_, name, status)| match status {
                    Some(s) => format!(" · {name} {s}"),
                    None => format!(" · {name} running"),
                })
                .unwrap_or_default();
            let toggle = if self.subagents.expanded {
                "▾"
            } else {
                "▸"
            };
            lines.push(Line::styled(
                format!(
                    "  {toggle} agent {}: {} calls{last}  (ctrl+o)",
                    view.agent,
                    view.calls.len()
                ),
                self.theme.dim(),
            ));
            if self.subagents.expanded {
                for (_, name, status) in &view.calls {
                    lines.push(Line::styled(
                        format!("      {name} {}", status.as_deref().unwrap_or("running")),
                        self.theme.dim(),
                    ));
                }
            }
        }
        lines
    }
}

fn status_word(status: &saki_engine::ToolResultStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
