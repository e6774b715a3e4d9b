//! placeholder
use crate::theme::Theme;
use ratatui::text::Line;
pub fn tool_preview(
    _tool: &str,
    _arguments: &serde_json::Value,
    _result: Option<&str>,
    _theme: &Theme,
    _max_lines: usize,
) -> Option<Vec<Line<'static>>> {
    None
}
