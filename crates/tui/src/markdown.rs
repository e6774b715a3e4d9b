//! placeholder
use crate::theme::Theme;
use ratatui::text::Line;
pub fn render(text: &str, _theme: &Theme) -> Vec<Line<'static>> {
    text.lines().map(|l| Line::from(l.to_owned())).collect()
}
