//! The UI state and what keys and engine events do to it. Drawing is in `view.rs`; the
//! terminal loop in `terminal.rs`. Everything here is synchronous and clock-injected,
//! so tests drive it key by key.

use crate::finder::{FileFinder, FileMatch};
use crate::input::InputEditor;
use crate::protocol::{Action, ApprovalRequest, SessionEntry, SpecState, Status};
use crate::theme::Theme;
use crate::transcript::Transcript;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use saki_engine::suggestion::{Accept, AcceptMethod, SuggestionState};
use saki_engine::Approval;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A second Ctrl+C within this time on an idle, empty prompt quits.
mod delegation;
mod events;
mod rewind;
mod slash;
pub use rewind::RewindPicker;
pub use slash::CommandEntry;

const QUIT_WINDOW: Duration = Duration::from_secs(2);
/// Files the `@` finder indexes at most.
const FINDER_LIMIT: usize = 50_000;
/// The finder re-walks the workspace when its list is older than this.
const FINDER_STALE: Duration = Duration::from_secs(10);
/// Rows in the `@` popup.
pub const POPUP_ROWS: usize = 8;

/// The `@` popup (the reference being typed starts at byte `start` of the input), or the
/// `/` popup of commands (`commands`).
pub struct Popup {
    pub start: usize,
    pub matches: Vec<FileMatch>,
    pub selected: usize,
    pub commands: bool,
}

/// The `/resume` picker.
#[derive(Debug)]
pub struct Picker {
    pub sessions: Vec<SessionEntry>,
    pub selected: usize,
}

pub struct App {
    pub theme: Theme,
    pub transcript: Transcript,
    pub input: InputEditor,
    pub status: Status,
    pub spec: SpecState,
    pub suggestion: SuggestionState,
    /// A turn (or compaction) is running.
    pub busy: bool,
    pub busy_since: Option<Instant>,
    /// The latest time the app was told (keys, events, ticks): the status line's clock.
    pub(crate) now: Option<Instant>,
    pub approvals: VecDeque<ApprovalRequest>,
    /// A question from the model (`ask_user`, leaving plan mode), waiting for an answer.
    pub question: Option<delegation::QuestionPicker>,
    /// Subagents running now (`agent` calls).
    pub subagents: delegation::Subagents,
    /// The reason being typed for a denial, when the person pressed `r`.
    pub deny_reason: Option<String>,
    pub picker: Option<Picker>,
    /// The `/rewind` picker.
    pub rewind: Option<RewindPicker>,
    /// `/rewind --force` was asked; the picker it opens carries it.
    rewind_force: bool,
    pub popup: Option<Popup>,
    /// Built-in and custom slash commands (the `/` popup, `/help`).
    pub commands: Vec<CommandEntry>,
    finder: Option<(FileFinder, Instant)>,
    root: PathBuf,
    pub quit_armed: Option<Instant>,
    /// Prompts sent while a turn runs, as the engine keeps them (it runs each when the
    /// turn before it ends, and hands them back on a cancel).
    pub queued: VecDeque<String>,
    /// The model's checklist (`update_plan`), pinned above the input.
    pub plan: Option<saki_engine::Plan>,
    /// Lines scrolled up from the bottom of the transcript.
    pub scroll: usize,
    /// Transcript rows on screen at the last draw (PgUp/PgDn move by half of it).
    pub(crate) page: u16,
    actions: Vec<Action>,
    pub quit: bool,
    /// `/export`, `/shells`, the cost, notifications, Ctrl+G (see `extras.rs`).
    pub extras: crate::extras::Extras,
}

impl App {
    pub fn new(status: Status, theme: Theme, root: PathBuf, suggestions: bool) -> Self {
        Self {
            theme,
            transcript: Transcript::new(theme),
            input: InputEditor::default(),
            status,
            spec: if suggestions {
                SpecState::Idle
            } else {
                SpecState::Off
            },
            suggestion: SuggestionState::new(),
            busy: false,
            busy_since: None,
            now: None,
            approvals: VecDeque::new(),
            question: None,
            subagents: delegation::Subagents::default(),
            deny_reason: None,
            picker: None,
            rewind: None,
            rewind_force: false,
            popup: None,
            commands: slash::built_in(),
            finder: None,
            root,
            quit_armed: None,
            queued: VecDeque::new(),
            plan: None,
            scroll: 0,
            page: 20,
            actions: Vec::new(),
            quit: false,
            extras: crate::extras::Extras::default(),
        }
    }

    /// Actions produced since the last call, for the engine.
    pub fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    fn act(&mut self, action: Action) {
        if action == Action::Quit {
            self.quit = true;
        }
        self.actions.push(action);
    }

    /// The suggestion shown as ghost text in the empty input.
    pub fn ghost(&self) -> Option<&str> {
        if self.input.is_empty() && !self.busy && self.approvals.is_empty() {
            self.suggestion.visible_text()
        } else {
            None
        }
    }

    /// When `tick` should run next.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let mut deadlines = vec![self.suggestion.deadline()];
        deadlines.push(self.quit_armed.map(|at| at + QUIT_WINDOW));
        if let Some(since) = self.busy_since.filter(|_| self.busy) {
            // The elapsed-seconds counter on the status line.
            let elapsed = now.saturating_duration_since(since).as_millis() as u64;
            deadlines.push(Some(now + Duration::from_millis(1000 - elapsed % 1000)));
        }
        deadlines.into_iter().flatten().min()
    }

    /// Time passed: shows a suggestion whose delay is over, expires the quit hint.
    /// Returns true when the screen changed.
    pub fn tick(&mut self, now: Instant) -> bool {
        self.now = Some(now);
        let mut changed = self.suggestion.tick(now);
        if changed {
            self.shown();
        }
        for outcome in self.suggestion.take_outcomes() {
            tracing::debug!(?outcome, "suggestion outcome");
        }
        if self
            .quit_armed
            .is_some_and(|at| now.saturating_duration_since(at) >= QUIT_WINDOW)
        {
            self.quit_armed = None;
            changed = true;
        }
        changed || self.busy
    }

    pub fn on_paste(&mut self, text: &str, now: Instant) {
        if let Some(reason) = &mut self.deny_reason {
            reason.push_str(&text.replace(['\r', '\n'], " "));
            return;
        }
        if !self.approvals.is_empty() || self.picker.is_some() || self.rewind.is_some() {
            return;
        }
        self.dismiss_suggestion(now);
        match crate::paste::image_reference(text, &self.root) {
            Some(reference) => self.input.insert_str(&reference),
            None => self.input.insert_str(text),
        }
        self.refresh_popup();
    }

    pub fn on_key(&mut self, key: KeyEvent, now: Instant) {
        self.now = Some(now);
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.on_ctrl_c(now);
            return;
        }
        if !self.approvals.is_empty() {
            self.on_approval_key(key);
            return;
        }
        if self.question.is_some() {
            self.on_question_key(key);
            return;
        }
        if ctrl && key.code == KeyCode::Char('g') {
            // The terminal loop opens the editor on the prompt.
            self.extras.edit_requested = true;
            return;
        }
        if ctrl && key.code == KeyCode::Char('o') {
            self.toggle_subagents();
            return;
        }
        if self.picker.is_some() {
            self.on_picker_key(key);
            return;
        }
        if self.rewind.is_some() {
            self.on_rewind_key(key);
            return;
        }
        if self.popup.is_some() && self.on_popup_key(key) {
            return;
        }
        self.on_editor_key(key, now);
    }

    fn on_ctrl_c(&mut self, now: Instant) {
        if let Some(request) = self.approvals.pop_front() {
            let _ = request
                .reply
                .send(Approval::Deny("the person cancelled the turn".into()));
            self.deny_reason = None;
            self.act(Action::Cancel);
        } else if let Some(picker) = self.question.take() {
            drop(picker);
            self.act(Action::Cancel);
        } else if self.busy {
            self.act(Action::Cancel);
        } else if self.picker.take().is_some()
            || self.rewind.take().is_some()
            || self.popup.take().is_some()
        {
        } else if !self.input.is_empty() {
            self.input.clear();
        } else if self
            .quit_armed
            .is_some_and(|at| now.saturating_duration_since(at) < QUIT_WINDOW)
        {
            self.act(Action::Quit);
        } else {
            self.quit_armed = Some(now);
        }
    }

    fn on_approval_key(&mut self, key: KeyEvent) {
        if let Some(reason) = &mut self.deny_reason {
            match key.code {
                KeyCode::Enter => {
                    let reason = reason.trim().to_owned();
                    self.deny_reason = None;
                    let message = if reason.is_empty() {
                        "the person denied this call".to_owned()
                    } else {
                        format!("the person denied this call: {reason}")
                    };
                    self.answer(Approval::Deny(message));
                }
                KeyCode::Esc => self.deny_reason = None,
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) => reason.push(c),
                _ => {}
            }
            return;
        }
        let can_grant = self
            .approvals
            .front()
            .is_some_and(|r| r.grant_label.is_some());
        match key.code {
            KeyCode::Char('y') | KeyCode::Enter => self.answer(Approval::Once),
            KeyCode::Char('a') if can_grant => self.answer(Approval::Session),
            KeyCode::Char('n') | KeyCode::Esc => {
                self.answer(Approval::Deny("the person denied this call".into()));
            }
            KeyCode::Char('r') => self.deny_reason = Some(String::new()),
            _ => {}
        }
    }

    fn answer(&mut self, approval: Approval) {
        if let Some(request) = self.approvals.pop_front() {
            // The turn may have been cancelled meanwhile; then nobody waits.
            let _ = request.reply.send(approval);
        }
    }

    fn on_picker_key(&mut self, key: KeyEvent) {
        let Some(picker) = &mut self.picker else {
            return;
        };
        match key.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => {
                picker.selected =
                    (picker.selected + 1).min(picker.sessions.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                let id = picker.sessions.get(picker.selected).map(|s| s.id.clone());
                self.picker = None;
                if let Some(id) = id {
                    self.act(Action::Resume { id });
                }
            }
            KeyCode::Esc => self.picker = None,
            _ => {}
        }
    }

    /// Keys the `@` popup takes; false lets the editor have the key.
    fn on_popup_key(&mut self, key: KeyEvent) -> bool {
        let Some(popup) = &mut self.popup else {
            return false;
        };
        match key.code {
            KeyCode::Up => popup.selected = popup.selected.saturating_sub(1),
            KeyCode::Down => {
                popup.selected = (popup.selected + 1).min(popup.matches.len().saturating_sub(1));
            }
            // Enter on a name typed in full runs it, as it would without the popup.
            KeyCode::Enter
                if popup.commands
                    && popup
                        .matches
                        .iter()
                        .any(|m| m.path == self.input.text().trim_end()) =>
            {
                self.popup = None;
                return false;
            }
            KeyCode::Tab | KeyCode::Enter if popup.commands && !popup.matches.is_empty() => {
                let name = popup.matches[popup.selected.min(popup.matches.len() - 1)]
                    .path
                    .clone();
                self.input.replace_before_cursor(0, &format!("{name} "));
                self.popup = None;
            }
            KeyCode::Tab | KeyCode::Enter if !popup.matches.is_empty() => {
                let start = popup.start;
                let path = popup.matches[popup.selected.min(popup.matches.len() - 1)]
                    .path
                    .clone();
                let reference = if path.contains(char::is_whitespace) {
                    format!("@\"{path}\" ")
                } else {
                    format!("@{path} ")
                };
                self.input.replace_before_cursor(start, &reference);
                self.popup = None;
            }
            KeyCode::Esc => self.popup = None,
            _ => return false,
        }
        true
    }

    fn on_editor_key(&mut self, key: KeyEvent, now: Instant) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift || alt || ctrl => self.edit(now, |i| i.insert_char('\n')),
            KeyCode::Char('j') if ctrl => self.edit(now, |i| i.insert_char('\n')),
            KeyCode::Enter => self.on_enter(),
            KeyCode::Tab | KeyCode::Right if self.ghost().is_some() => {
                let method = if key.code == KeyCode::Tab {
                    AcceptMethod::Tab
                } else {
                    AcceptMethod::Right
                };
                if let Accept::Accepted(text) = self.suggestion.accept(method, now) {
                    self.input.set_text(&text);
                }
            }
            KeyCode::BackTab => {
                let next = self
                    .status
                    .approval
                    .unwrap_or(saki_engine::ApprovalMode::Default)
                    .next();
                self.status.approval = Some(next);
                self.act(Action::SetApproval(next));
            }
            KeyCode::Esc => {
                if self.busy {
                    self.act(Action::Cancel);
                } else if self.suggestion.visible_text().is_some() {
                    self.dismiss_suggestion(now);
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.input.is_empty() {
                    self.act(Action::Quit);
                } else {
                    self.input.delete();
                }
            }
            KeyCode::Char('a') if ctrl => self.input.home(),
            KeyCode::Char('e') if ctrl => self.input.end(),
            KeyCode::Char('u') if ctrl => self.edit(now, InputEditor::kill_to_line_start),
            KeyCode::Char('k') if ctrl => self.edit(now, InputEditor::kill_to_line_end),
            KeyCode::Char('w') if ctrl => self.edit(now, InputEditor::delete_word_back),
            KeyCode::Backspace if alt => self.edit(now, InputEditor::delete_word_back),
            KeyCode::Char(c) if !ctrl => {
                let opens_popup = c == '@' && self.at_word_start();
                let opens_commands = c == '/' && self.input.is_empty();
                self.edit(now, |i| i.insert_char(c));
                if opens_popup {
                    self.open_popup(now);
                } else if opens_commands {
                    self.open_command_popup();
                }
            }
            KeyCode::Backspace => self.edit(now, InputEditor::backspace),
            KeyCode::Delete => self.edit(now, InputEditor::delete),
            KeyCode::Left => self.input.left(),
            KeyCode::Right => self.input.right(),
            KeyCode::Home => self.input.home(),
            KeyCode::End => self.input.end(),
            KeyCode::Up => self.input.up(),
            KeyCode::Down => self.input.down(),
            KeyCode::PageUp => self.scroll += usize::from(self.page / 2).max(1),
            KeyCode::PageDown => {
                self.scroll = self
                    .scroll
                    .saturating_sub(usize::from(self.page / 2).max(1));
            }
            _ => {}
        }
        self.refresh_popup();
    }

    /// A suggestion became visible: the engine may speculate it now, if it is on screen.
    pub(crate) fn shown(&mut self) {
        if let Some(text) = self.ghost().map(str::to_owned) {
            self.act(Action::SuggestionShown { text });
        }
    }

    /// An edit to the input: it dismisses the suggestion (and aborts its speculation).
    fn edit(&mut self, now: Instant, f: impl FnOnce(&mut InputEditor)) {
        self.dismiss_suggestion(now);
        f(&mut self.input);
    }

    fn dismiss_suggestion(&mut self, now: Instant) {
        let shown = !matches!(
            self.suggestion.phase(),
            saki_engine::suggestion::Phase::Hidden
        );
        if shown && self.input.is_empty() {
            self.suggestion.dismiss(now);
            if self.spec != SpecState::Off {
                self.spec = SpecState::Idle;
            }
            self.act(Action::Dismiss);
        }
    }

    fn at_word_start(&self) -> bool {
        let before = &self.input.text()[..self.input.cursor()];
        before.is_empty() || before.ends_with(char::is_whitespace)
    }

    fn open_popup(&mut self, now: Instant) {
        let stale = self
            .finder
            .as_ref()
            .is_none_or(|(_, at)| now.saturating_duration_since(*at) > FINDER_STALE);
        if stale {
            self.finder = Some((FileFinder::scan(&self.root, FINDER_LIMIT), now));
        }
        self.popup = Some(Popup {
            start: self.input.cursor().saturating_sub(1),
            matches: Vec::new(),
            selected: 0,
            commands: false,
        });
    }

    /// Re-runs the finder for the reference under the cursor; closes the popup when the
    /// cursor left it.
    fn refresh_popup(&mut self) {
        if self.popup.as_ref().is_some_and(|p| p.commands) {
            let text = self.input.text();
            let typed = text.get(..self.input.cursor()).unwrap_or("");
            let query = typed
                .strip_prefix('/')
                .filter(|q| !q.contains(char::is_whitespace));
            let matches = query.map(|q| self.command_matches(q));
            match (matches, &mut self.popup) {
                (Some(matches), Some(popup)) => {
                    popup.selected = popup.selected.min(matches.len().saturating_sub(1));
                    popup.matches = matches;
                }
                _ => self.popup = None,
            }
            return;
        }
        let Some(popup) = &mut self.popup else {
            return;
        };
        let text = self.input.text();
        let cursor = self.input.cursor();
        let query = text
            .get(popup.start..cursor)
            .and_then(|s| s.strip_prefix('@'))
            .filter(|q| !q.contains(char::is_whitespace));
        let (Some(query), Some((finder, _))) = (query, &mut self.finder) else {
            self.popup = None;
            return;
        };
        popup.matches = finder.search(query.trim_start_matches('"'), POPUP_ROWS);
        popup.selected = popup.selected.min(popup.matches.len().saturating_sub(1));
    }

    /// Enter sends what is in the input, and nothing else: on an empty prompt it does
    /// nothing, also while a suggestion shows (an Enter after a break, or one a terminal
    /// sends on focus, must not submit a prompt the person never chose). Tab or → put the
    /// suggestion in the input first.
    fn on_enter(&mut self) {
        if self.input.is_empty() {
            return;
        }
        if self.input.text().trim_start().starts_with('/') {
            let line = self.input.take();
            self.command(line.trim());
            return;
        }
        let text = self.input.take();
        self.submit(text);
    }

    /// A turn ended (the engine runs what was queued next, or handed it back on a cancel).
    fn turn_over(&mut self) {
        self.busy = false;
        self.busy_since = None;
    }

    fn submit(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        self.suggestion.clear();
        if self.spec != SpecState::Off {
            self.spec = SpecState::Idle;
        }
        self.scroll = 0;
        self.busy = true;
        self.act(Action::Submit { text });
    }
}
