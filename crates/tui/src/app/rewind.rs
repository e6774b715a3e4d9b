//! `/undo`, `/redo` and `/rewind` in the UI. `/rewind` asks the engine for the turns
//! and shows them in a picker; the chosen turn's files and every later turn's go back,
//! the conversation is cut before its prompt, and the prompt comes back into the input
//! to be edited and sent again.

use super::App;
use crate::protocol::{Action, Level, TurnEntry};
use crossterm::event::{KeyCode, KeyEvent};

/// The `/rewind` picker: turns newest first.
#[derive(Debug)]
pub struct RewindPicker {
    pub turns: Vec<TurnEntry>,
    pub selected: usize,
    /// `/rewind --force`: files changed since are overwritten.
    pub force: bool,
}

impl App {
    pub(super) fn undo_command(&mut self, turns: usize, force: bool) {
        self.act(Action::Undo { turns, force });
    }

    pub(super) fn redo_command(&mut self, force: bool) {
        self.act(Action::Redo { force });
    }

    pub(super) fn rewind_command(&mut self, force: bool) {
        self.rewind_force = force;
        self.act(Action::ListTurns);
    }

    /// The engine listed the turns: the picker opens.
    pub(super) fn show_turns(&mut self, turns: Vec<TurnEntry>) {
        self.rewind = Some(RewindPicker {
            turns,
            selected: 0,
            force: std::mem::take(&mut self.rewind_force),
        });
    }

    /// A rewind cut the conversation before `prompt`: it comes back into the input
    /// (unless the person is typing something else).
    pub(super) fn rewound(&mut self, prompt: String) {
        self.suggestion.clear();
        self.scroll = 0;
        if self.input.is_empty() {
            self.input.set_text(&prompt);
        } else {
            self.transcript.alert(
                Level::Info,
                "the rewound prompt was not put in the input: it is not empty",
            );
        }
    }

    pub(super) fn on_rewind_key(&mut self, key: KeyEvent) {
        let Some(picker) = &mut self.rewind else {
            return;
        };
        match key.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => {
                picker.selected = (picker.selected + 1).min(picker.turns.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                let chosen = picker
                    .turns
                    .get(picker.selected)
                    .map(|t| (t.turn, picker.force));
                self.rewind = None;
                if let Some((turn, force)) = chosen {
                    self.act(Action::Rewind { turn, force });
                }
            }
            KeyCode::Esc => self.rewind = None,
            _ => {}
        }
    }
}
