//! Desktop notifications: when a turn ends or an approval waits while the terminal does
//! not have focus (focus reporting, where the terminal supports it), saki writes OSC 9
//! (iTerm2, WezTerm, kitty, Ghostty, Windows Terminal) or OSC 777 (foot, urxvt, Konsole,
//! VTE terminals) where the terminal is known to show it, else the bell. `notify = "off"`
//! turns them off; the `Notification` hook runs either way (through [`Notifier`]).

use crate::protocol::EngineEvent;
use std::sync::Arc;

/// `notify` in config.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NotifyMode {
    #[default]
    Auto,
    Off,
}

/// How this terminal shows a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Osc9,
    Osc777,
    Bell,
}

/// Runs when a notification is due: `(kind, message)`, kind `turn_finished` or
/// `approval` (the front end runs the `Notification` hook with it).
pub type Notifier = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The style for the terminal the environment describes. Inside tmux or screen an OSC
/// would need passthrough the person may not have set up; the bell always arrives.
pub fn style(env: &dyn Fn(&str) -> Option<String>) -> Style {
    let has = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    if has("TMUX") || env("TERM").is_some_and(|t| t.starts_with("screen")) {
        return Style::Bell;
    }
    let program = env("TERM_PROGRAM").unwrap_or_default();
    let term = env("TERM").unwrap_or_default();
    if matches!(
        program.as_str(),
        "iTerm.app" | "WezTerm" | "ghostty" | "WarpTerminal"
    ) || term.contains("kitty")
        || term.contains("ghostty")
        || has("WT_SESSION")
    {
        Style::Osc9
    } else if term.starts_with("foot")
        || term.starts_with("rxvt")
        || has("KONSOLE_VERSION")
        || has("VTE_VERSION")
    {
        Style::Osc777
    } else {
        Style::Bell
    }
}

/// What is written to the terminal for `message`; text that could end the sequence is
/// left out.
pub fn sequence(style: Style, message: &str) -> String {
    let clean: String = message
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .take(200)
        .collect();
    match style {
        Style::Osc9 => format!("\x1b]9;{clean}\x07"),
        Style::Osc777 => format!("\x1b]777;notify;saki;{clean}\x07"),
        Style::Bell => "\x07".to_owned(),
    }
}

pub struct Notify {
    pub mode: NotifyMode,
    pub style: Style,
    /// The terminal has focus (assumed until it says otherwise).
    pub focused: bool,
    pub hook: Option<Notifier>,
    /// Bytes for the terminal, written by the terminal loop.
    pending: String,
}

impl Default for Notify {
    fn default() -> Self {
        Self {
            mode: NotifyMode::Off,
            style: Style::Bell,
            focused: true,
            hook: None,
            pending: String::new(),
        }
    }
}

impl Notify {
    pub fn observe(&mut self, event: &EngineEvent) {
        let (kind, message) = match event {
            EngineEvent::TurnFinished { .. } => {
                ("turn_finished", "saki: the turn finished".to_owned())
            }
            EngineEvent::Approval(request) => {
                ("approval", format!("saki: approve {}?", request.call.name))
            }
            _ => return,
        };
        if self.focused {
            return;
        }
        if let Some(hook) = &self.hook {
            hook(kind, &message);
        }
        if self.mode == NotifyMode::Auto {
            self.pending.push_str(&sequence(self.style, &message));
        }
    }

    /// What the terminal loop writes now.
    pub fn take_output(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn each_terminal_gets_what_it_shows() {
        assert_eq!(style(&env(&[("TERM_PROGRAM", "iTerm.app")])), Style::Osc9);
        assert_eq!(style(&env(&[("TERM", "xterm-kitty")])), Style::Osc9);
        assert_eq!(style(&env(&[("TERM", "foot")])), Style::Osc777);
        assert_eq!(style(&env(&[("VTE_VERSION", "7600")])), Style::Osc777);
        assert_eq!(style(&env(&[("TERM", "xterm-256color")])), Style::Bell);
        assert_eq!(
            style(&env(&[("TERM_PROGRAM", "iTerm.app"), ("TMUX", "/tmp/x")])),
            Style::Bell
        );
        assert_eq!(sequence(Style::Osc9, "a\x1b]b;c"), "\x1b]9;a]bc\x07");
        assert_eq!(
            sequence(Style::Osc777, "done"),
            "\x1b]777;notify;saki;done\x07"
        );
    }

    #[test]
    fn only_an_unfocused_terminal_is_notified_and_the_hook_runs_even_when_off() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let mut notify = Notify {
            mode: NotifyMode::Auto,
            style: Style::Osc9,
            hook: Some(Arc::new(move |kind: &str, _: &str| {
                log.lock().unwrap().push(kind.to_owned());
            })),
            ..Notify::default()
        };
        let finished = || EngineEvent::TurnFinished {
            note: None,
            end: crate::protocol::TurnEnd::Compacted,
        };
        notify.observe(&finished());
        assert_eq!(notify.take_output(), "");
        notify.focused = false;
        notify.observe(&finished());
        assert_eq!(notify.take_output(), "\x1b]9;saki: the turn finished\x07");
        notify.mode = NotifyMode::Off;
        notify.observe(&finished());
        assert_eq!(notify.take_output(), "");
        assert_eq!(*seen.lock().unwrap(), ["turn_finished", "turn_finished"]);
    }
}
