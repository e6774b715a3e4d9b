//! Coloured diffs for tool rows and approval prompts: the edit tool's own unified diff,
//! or one computed from a call's arguments.

use crate::theme::Theme;
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::TextDiff;

/// A unified diff of `old` → `new` with `context` lines around changes, cut at
/// `max_lines` rows (the last saying how many more there were).
pub fn unified(
    old: &str,
    new: &str,
    context: usize,
    max_lines: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let diff = TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(context)
        .missing_newline_hint(false)
        .to_string();
    colorize(&text, max_lines, theme)
}

/// Colours text that already is a unified diff.
pub fn colorize(diff_text: &str, max_lines: usize, theme: &Theme) -> Vec<Line<'static>> {
    let all: Vec<&str> = diff_text
        .lines()
        .filter(|l| !l.starts_with("\\ No newline"))
        .collect();
    let mut lines: Vec<Line<'static>> = all
        .iter()
        .take(max_lines)
        .map(|line| {
            let style = if line.starts_with("+++") || line.starts_with("---") {
                theme.bold()
            } else if line.starts_with("@@") {
                theme.hunk()
            } else if line.starts_with('+') {
                theme.added()
            } else if line.starts_with('-') {
                theme.removed()
            } else {
                theme.dim()
            };
            Line::from(Span::styled((*line).to_owned(), style))
        })
        .collect();
    if all.len() > max_lines {
        lines.push(Line::styled(
            format!("… {} more lines", all.len() - max_lines),
            theme.dim(),
        ));
    }
    lines
}

/// Lines added and removed in a unified diff.
pub fn stats(diff_text: &str) -> (usize, usize) {
    diff_text.lines().fold((0, 0), |(a, r), line| {
        if line.starts_with("+++") || line.starts_with("---") {
            (a, r)
        } else if line.starts_with('+') {
            (a + 1, r)
        } else if line.starts_with('-') {
            (a, r + 1)
        } else {
            (a, r)
        }
    })
}

fn looks_like_diff(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("@@"))
}

/// What an edit or write does, for its tool row (with `result`) or its approval prompt
/// (without). `None` for other tools.
pub fn tool_preview(
    tool: &str,
    arguments: &Value,
    result: Option<&str>,
    theme: &Theme,
    max_lines: usize,
) -> Option<Vec<Line<'static>>> {
    let field = |k: &str| arguments.get(k).and_then(Value::as_str);
    match tool {
        "edit" => {
            if let Some(result) = result.filter(|r| looks_like_diff(r)) {
                // The tool's own diff has real line numbers; skip its file header.
                let body: String = result
                    .lines()
                    .skip_while(|l| !l.starts_with("@@"))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Some(colorize(&body, max_lines, theme));
            }
            let (old, new) = (field("old_string")?, field("new_string")?);
            let diff = unified(old, new, 3, max_lines + 1, theme);
            // The computed diff's hunk header counts from the snippet, not the file.
            Some(
                diff.into_iter()
                    .filter(|l| !is_header(l))
                    .take(max_lines + 1)
                    .collect(),
            )
        }
        "write_file" => {
            let content = field("content")?;
            let total = content.lines().count();
            let mut lines: Vec<Line<'static>> = content
                .lines()
                .take(max_lines)
                .map(|l| Line::from(Span::styled(format!("+{l}"), theme.added())))
                .collect();
            if total > max_lines {
                lines.push(Line::styled(
                    format!("… {} more lines", total - max_lines),
                    theme.dim(),
                ));
            }
            Some(lines)
        }
        _ => None,
    }
}

fn is_header(line: &Line<'_>) -> bool {
    let text = line.to_string();
    text.starts_with("@@") || text.starts_with("+++") || text.starts_with("---")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn unified_marks_changes_and_cuts_long_diffs() {
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\n";
        let lines = text(&unified(old, new, 1, 20, &Theme::plain()));
        let body: Vec<&str> = lines
            .iter()
            .map(String::as_str)
            .skip_while(|l| !l.starts_with("@@"))
            .collect();
        assert_eq!(body, vec!["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]);
        let cut = unified("", &"x\n".repeat(30), 0, 5, &Theme::plain());
        assert_eq!(cut.len(), 6);
        assert!(cut[5].to_string().contains("more lines"));
    }

    #[test]
    fn added_lines_are_green_with_colour() {
        let lines = colorize("@@ -1 +1 @@\n-x\n+y", 10, &Theme::colored());
        assert_eq!(
            lines[2].spans[0].style.fg,
            Some(ratatui::style::Color::Green)
        );
        assert_eq!(lines[1].spans[0].style.fg, Some(ratatui::style::Color::Red));
        assert_eq!(stats("--- a\n+++ b\n@@\n-x\n+y\n+z"), (2, 1));
    }

    #[test]
    fn previews_for_edits_and_writes() {
        let theme = Theme::plain();
        let args = json!({"path": "a", "old_string": "fn a() {}\n", "new_string": "fn b() {}\n"});
        let from_args = tool_preview("edit", &args, None, &theme, 10).unwrap();
        assert_eq!(text(&from_args), vec!["-fn a() {}", "+fn b() {}"]);
        let result = "--- a/x\n+++ b/x\n@@ -4,1 +4,1 @@\n-old\n+new\n\\ No newline at end of file";
        let from_result = tool_preview("edit", &args, Some(result), &theme, 10).unwrap();
        assert_eq!(text(&from_result), vec!["@@ -4,1 +4,1 @@", "-old", "+new"]);
        let write = json!({"path": "n", "content": "one\ntwo\nthree\n"});
        let lines = tool_preview("write_file", &write, None, &theme, 2).unwrap();
        assert_eq!(text(&lines), vec!["+one", "+two", "… 1 more lines"]);
        assert!(tool_preview("shell", &json!({}), None, &theme, 5).is_none());
    }
}
