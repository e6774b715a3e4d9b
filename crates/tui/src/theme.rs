//! Colours and emphasis. With `NO_COLOR` set (any value), only modifiers remain: bold,
//! dim, italic, reversed; no foreground or background colour is ever sent.

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// The theme for this process: colour unless `NO_COLOR` is set to a non-empty value.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { color: !no_color }
    }

    pub fn colored() -> Self {
        Self { color: true }
    }

    pub fn plain() -> Self {
        Self { color: false }
    }

    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    pub fn text(&self) -> Style {
        Style::new()
    }
    pub fn dim(&self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
    pub fn bold(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub fn italic(&self) -> Style {
        Style::new().add_modifier(Modifier::ITALIC)
    }
    pub fn user(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn heading(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }
    pub fn inline_code(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn code_block(&self) -> Style {
        self.fg(Color::Gray)
    }
    pub fn code_lang(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::DIM)
    }
    pub fn link(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::UNDERLINED)
    }
    pub fn added(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn removed(&self) -> Style {
        self.fg(Color::Red)
    }
    pub fn hunk(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::DIM)
    }
    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn running(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn info(&self) -> Style {
        self.fg(Color::Blue)
    }
    pub fn ghost(&self) -> Style {
        Style::new().add_modifier(Modifier::DIM | Modifier::ITALIC)
    }
    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    pub fn matched(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }
    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_theme_sends_no_colour_only_modifiers() {
        let plain = Theme::plain();
        for style in [
            plain.added(),
            plain.removed(),
            plain.user(),
            plain.error(),
            plain.link(),
        ] {
            assert_eq!((style.fg, style.bg), (None, None));
        }
        assert!(plain.error().add_modifier.contains(Modifier::BOLD));
        assert_eq!(Theme::colored().added().fg, Some(Color::Green));
    }
}
