//! Drawing: transcript above, the input (or an approval / session picker) below, the
//! status line at the bottom, and the `@` popup over the transcript's last rows.

use crate::app::{App, POPUP_ROWS};
use crate::diff;
use crate::tool_row::{truncate, ToolRow};
use crate::untrusted::printable;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

/// Most rows the input grows to before it scrolls.
const MAX_INPUT_ROWS: usize = 8;
const PROMPT: &str = "› ";

impl App {
    pub fn draw(&mut self, frame: &mut Frame) {
        let area = frame.area();
        let bottom = self.bottom_lines(area.width);
        let bottom_height = (bottom.len() as u16).min(area.height.saturating_sub(2));
        let [transcript_area, bottom_area, status_area] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(bottom_height),
            Constraint::Length(1),
        ])
        .areas(area);
        self.draw_transcript(frame, transcript_area);
        frame.render_widget(Paragraph::new(printable(bottom)), bottom_area);
        if self.approvals.is_empty() && self.picker.is_none() && self.rewind.is_none() {
            self.place_cursor(frame, bottom_area);
        }
        frame.render_widget(
            Paragraph::new(printable(vec![self.status_line()])),
            status_area,
        );
        self.draw_popup(frame, transcript_area);
    }

    fn draw_transcript(&mut self, frame: &mut Frame, area: Rect) {
        self.page = area.height;
        let (lines, scroll) = self.transcript.window(area.width, area.height, self.scroll);
        self.scroll = scroll;
        frame.render_widget(Paragraph::new(printable(lines)), area);
    }

    fn rule(&self, width: u16, title: &str) -> Line<'static> {
        let fill = usize::from(width).saturating_sub(title.chars().count() + 2);
        Line::from(vec![
            Span::styled("─ ", self.theme.border()),
            Span::styled(title.to_owned(), self.theme.bold()),
            Span::styled(
                format!(" {}", "─".repeat(fill.saturating_sub(1))),
                self.theme.border(),
            ),
        ])
    }

    /// The `/rewind` picker: newest turn first, with how many files its checkpoint holds.
    fn rewind_lines(&self, picker: &crate::app::RewindPicker, width: u16) -> Vec<Line<'static>> {
        let title = "rewind to before a turn: its files and later ones go back (↑↓, Enter, Esc)";
        let mut lines = vec![self.rule(width, title)];
        let start = picker.selected.saturating_sub(9);
        for (i, t) in picker.turns.iter().enumerate().skip(start).take(10) {
            let prompt = t.prompt.lines().next().unwrap_or("");
            let files = match t.files {
                0 => String::new(),
                1 => "  (1 file)".to_owned(),
                n => format!("  ({n} files)"),
            };
            let text = truncate(
                &format!("{:>4}  {prompt}{files}", t.turn),
                usize::from(width),
            );
            let style = if i == picker.selected {
                self.theme.selected()
            } else {
                self.theme.text()
            };
            lines.push(Line::styled(text, style));
        }
        lines
    }

    /// The area under the transcript: an approval prompt, the session picker, or the input.
    fn bottom_lines(&self, width: u16) -> Vec<Line<'static>> {
        if let Some(request) = self.approvals.front() {
            return self.approval_lines(request, width);
        }
        if let Some(question) = &self.question {
            return self.question_lines(question, width);
        }
        if let Some(picker) = &self.picker {
            let mut lines = vec![self.rule(width, "resume a session (↑↓, Enter, Esc)")];
            let start = picker.selected.saturating_sub(9);
            for (i, s) in picker.sessions.iter().enumerate().skip(start).take(10) {
                let text = format!("{}  {:>8}  {:<20}  {}", s.id, s.age, s.model, s.title);
                let text = truncate(&text, usize::from(width));
                let style = if i == picker.selected {
                    self.theme.selected()
                } else {
                    self.theme.text()
                };
                lines.push(Line::styled(text, style));
            }
            return lines;
        }
        if let Some(picker) = &self.rewind {
            return self.rewind_lines(picker, width);
        }
        let mut lines: Vec<Line<'static>> = self
            .queued
            .iter()
            .take(3)
            .map(|q| {
                let first = q.lines().next().unwrap_or("");
                let room = usize::from(width).saturating_sub(10);
                Line::styled(
                    format!("  queued: {}", truncate(first, room)),
                    self.theme.dim(),
                )
            })
            .collect();
        lines.extend(self.subagent_lines());
        lines.extend(self.plan_lines(width));
        lines.push(Line::styled(
            "─".repeat(usize::from(width)),
            self.theme.border(),
        ));
        if let Some(ghost) = self.ghost() {
            let room = usize::from(width).saturating_sub(PROMPT.len() + 8);
            lines.push(Line::from(vec![
                Span::styled(PROMPT, self.theme.accent()),
                Span::styled(truncate(ghost, room), self.theme.ghost()),
                Span::styled("  ⇥ tab", self.theme.dim()),
            ]));
            return lines;
        }
        let (rows, (cursor_row, _)) = self.input.layout(input_width(width));
        let first = input_first_row(rows.len(), cursor_row);
        for (i, row) in rows.iter().enumerate().skip(first).take(MAX_INPUT_ROWS) {
            let prefix = if i == 0 { PROMPT } else { "  " };
            lines.push(Line::from(vec![
                Span::styled(prefix, self.theme.accent()),
                Span::raw(row.clone()),
            ]));
        }
        lines
    }

    fn place_cursor(&self, frame: &mut Frame, area: Rect) {
        let (rows, (row, col)) = self.input.layout(input_width(area.width));
        let first = input_first_row(rows.len(), row) as u16;
        let above = (self.queued.len().min(3) + self.plan_lines(area.width).len()) as u16 + 1;
        let y = area.y + above + row.saturating_sub(first);
        let x = area.x + PROMPT.chars().count() as u16 + col;
        if y < area.y + area.height {
            frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), y));
        }
    }

    fn approval_lines(
        &self,
        request: &crate::protocol::ApprovalRequest,
        width: u16,
    ) -> Vec<Line<'static>> {
        let theme = &self.theme;
        let title = format!("approve {}? ({} mode)", request.call.name, request.mode);
        let mut lines = vec![self.rule(width, &title)];
        let row = ToolRow::new(&request.call.name, &request.call.arguments, "");
        let command = request.call.input.get("command").and_then(|c| c.as_str());
        match command {
            Some(command) if request.call.name == "shell" => {
                for line in command.lines().take(6) {
                    lines.push(Line::from(vec![
                        Span::styled("  $ ", theme.dim()),
                        Span::styled(line.to_owned(), theme.bold()),
                    ]));
                }
            }
            _ => lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(row.name.clone(), theme.bold()),
                Span::raw(format!(" {}", row.summary())),
            ])),
        }
        if let Some(why) = &request.why {
            lines.push(Line::from(vec![
                Span::styled("  why: ", theme.warn()),
                Span::raw(why.clone()),
            ]));
        }
        if let Some(preview) = diff::tool_preview(&row.name, &row.input, None, theme, 10) {
            for line in preview {
                let mut spans = vec![Span::raw("    ")];
                spans.extend(line.spans);
                lines.push(Line::from(spans));
            }
        }
        if let Some(reason) = &self.deny_reason {
            lines.push(Line::from(vec![
                Span::styled("  reason: ", theme.warn()),
                Span::raw(reason.clone()),
                Span::styled("█", theme.dim()),
                Span::styled("  (Enter sends, Esc goes back)", theme.dim()),
            ]));
            return lines;
        }
        let key = |k: &str| Span::styled(format!("[{k}]"), theme.accent().patch(theme.bold()));
        let mut choices = vec![Span::raw("  "), key("y"), Span::raw(" allow once  ")];
        if let Some(label) = &request.grant_label {
            choices.extend([
                key("a"),
                Span::raw(format!(" allow {label} for this session  ")),
            ]);
        }
        choices.extend([
            key("n"),
            Span::raw(" deny  "),
            key("r"),
            Span::raw(" deny with a reason"),
        ]);
        lines.push(Line::from(choices));
        lines
    }

    fn status_line(&self) -> Line<'static> {
        let theme = &self.theme;
        let s = &self.status;
        // What needs attention comes first, so a narrow terminal never hides it.
        let mut spans = Vec::new();
        if self.quit_armed.is_some() {
            spans.push(Span::styled(" press Ctrl+C again to quit ·", theme.warn()));
        } else if self.busy {
            let secs = match (self.busy_since, self.now) {
                (Some(since), Some(now)) => now.saturating_duration_since(since).as_secs(),
                _ => 0,
            };
            spans.push(Span::styled(
                format!(" working {secs}s · Esc cancels ·"),
                theme.running(),
            ));
        }
        spans.push(Span::styled(
            format!(" {}/{}", s.provider, s.model),
            theme.bold(),
        ));
        if let Some(window) = s.context_window.filter(|w| *w > 0) {
            let percent = s.tokens_used.saturating_mul(100) / window;
            spans.push(Span::raw(format!(
                " · {} / {} tokens ({percent}%)",
                short_count(s.tokens_used),
                short_count(window)
            )));
        } else if s.tokens_used > 0 {
            spans.push(Span::raw(format!(
                " · {} tokens",
                short_count(s.tokens_used)
            )));
        }
        if let Some(cost) = self.extras.cost.as_ref().and_then(|m| m.label()) {
            spans.push(Span::raw(format!(" · {cost}")));
        }
        let mode = s.approval.map_or("default", |m| m.as_str());
        spans.push(Span::styled(format!(" · {mode}"), theme.accent()));
        if let Some(sandbox) = &s.sandbox {
            let style = if s.sandboxed {
                theme.dim()
            } else {
                theme.warn()
            };
            spans.push(Span::styled(format!(" · {sandbox}"), style));
        }
        if let Some(label) = self.spec.label() {
            let style = match self.spec {
                crate::protocol::SpecState::Ready => theme.ok(),
                crate::protocol::SpecState::Boundary => theme.warn(),
                _ => theme.running(),
            };
            spans.push(Span::styled(format!(" · {label}"), style));
        }
        if let Some(fast) = &s.fast_model {
            spans.push(Span::styled(format!(" · fast {fast}"), theme.dim()));
        }
        Line::from(spans)
    }

    fn draw_popup(&self, frame: &mut Frame, above: Rect) {
        let Some(popup) = &self.popup else {
            return;
        };
        let rows = popup.matches.len().clamp(1, POPUP_ROWS) as u16;
        let height = (rows + 2).min(above.height);
        let width = above.width.min(72);
        let area = Rect::new(
            above.x,
            above.bottom().saturating_sub(height),
            width,
            height,
        );
        let lines: Vec<Line<'static>> = if popup.matches.is_empty() {
            let what = if popup.commands { "commands" } else { "files" };
            vec![Line::styled(
                format!(" no matching {what}"),
                self.theme.dim(),
            )]
        } else {
            popup
                .matches
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let base = if i == popup.selected {
                        self.theme.selected()
                    } else {
                        self.theme.text()
                    };
                    let mut spans = vec![Span::styled(" ", base)];
                    for (n, c) in m.path.chars().enumerate() {
                        let style = if m.indices.contains(&n) {
                            base.patch(self.theme.matched())
                        } else {
                            base
                        };
                        spans.push(Span::styled(c.to_string(), style));
                    }
                    let about = self.command_description(&m.path).filter(|_| popup.commands);
                    if let Some(about) = about {
                        spans.push(Span::styled(format!("  {about}"), self.theme.dim()));
                    }
                    Line::from(spans)
                })
                .collect()
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(printable(lines)).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(self.theme.border())
                    .title(if popup.commands {
                        " / command (↑↓, Tab) "
                    } else {
                        " @ file (↑↓, Tab) "
                    }),
            ),
            area,
        );
    }
}

fn input_width(width: u16) -> u16 {
    width
        .saturating_sub(PROMPT.chars().count() as u16 + 1)
        .max(1)
}

/// The first input row shown, so the cursor's row stays visible.
fn input_first_row(rows: usize, cursor_row: u16) -> usize {
    let cursor_row = usize::from(cursor_row);
    if rows <= MAX_INPUT_ROWS {
        0
    } else {
        (cursor_row + 1).saturating_sub(MAX_INPUT_ROWS)
    }
}

/// 1234 → "1.2k", 128000 → "128k".
fn short_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=9_999 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}
