//! placeholder
use ratatui::text::Line;
pub fn wrap(line: &Line<'static>, _width: u16) -> Vec<Line<'static>> {
    vec![line.clone()]
}
pub fn wrap_all(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap(l, width)).collect()
}
