//! One row of a `tool_group`: a tool call with a short argument summary, its status,
//! and a preview of its result (a coloured diff for edits).

use crate::diff;
use crate::theme::Theme;
use ratatui::text::{Line, Span};
use saki_engine::ToolResultStatus;
use serde_json::Value;

/// Most preview lines under a row (a diff, or the first lines of output).
const PREVIEW_LINES: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolRowStatus {
    Pending,
    Running,
    Done,
    Error,
    Denied,
    Cancelled,
    Skipped,
}

impl ToolRowStatus {
    pub fn label(self) -> &'static str {
        match self {
            ToolRowStatus::Pending => "pending",
            ToolRowStatus::Running => "running",
            ToolRowStatus::Done => "done",
            ToolRowStatus::Error => "error",
            ToolRowStatus::Denied => "denied",
            ToolRowStatus::Cancelled => "cancelled",
            ToolRowStatus::Skipped => "skipped",
        }
    }
}

impl From<ToolResultStatus> for ToolRowStatus {
    fn from(status: ToolResultStatus) -> Self {
        match status {
            ToolResultStatus::Success => ToolRowStatus::Done,
            ToolResultStatus::Error => ToolRowStatus::Error,
            ToolResultStatus::Denied => ToolRowStatus::Denied,
            ToolResultStatus::Cancelled => ToolRowStatus::Cancelled,
            ToolResultStatus::Skipped => ToolRowStatus::Skipped,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolRow {
    pub call_id: String,
    pub name: String,
    pub input: Value,
    pub status: ToolRowStatus,
    pub result: Option<String>,
    /// The errors a language server reported for the file an `edit` or `write_file`
    /// wrote; `None` when no server checked it.
    pub errors: Option<usize>,
}

impl ToolRow {
    pub fn new(name: &str, arguments: &str, call_id: &str) -> Self {
        Self {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            input: serde_json::from_str(arguments).unwrap_or(Value::String(arguments.to_owned())),
            status: ToolRowStatus::Pending,
            result: None,
            errors: None,
        }
    }

    pub fn finish(&mut self, status: ToolRowStatus, content: &str) {
        self.status = status;
        self.result = Some(content.to_owned());
        // Only the writers append the block; another tool's output may quote one.
        self.errors = match self.name.as_str() {
            "edit" | "write_file" if status == ToolRowStatus::Done => {
                saki_engine::describe::error_count(content)
            }
            _ => None,
        };
    }

    /// The argument that says what the call is about.
    pub fn summary(&self) -> String {
        let field = |k: &str| self.input.get(k).and_then(Value::as_str);
        let text = match self.name.as_str() {
            "read_file" | "write_file" | "edit" | "ls" => field("path").map(str::to_owned),
            "glob" => field("pattern").map(str::to_owned),
            "grep" => field("pattern").map(|p| match field("path") {
                Some(path) => format!("{p} in {path}"),
                None => p.to_owned(),
            }),
            "shell" => field("command").map(|c| c.lines().next().unwrap_or("").to_owned()),
            "update_plan" => saki_engine::Plan::from_value(&self.input)
                .ok()
                .map(|p| p.summary()),
            _ => None,
        };
        let text = text.unwrap_or_else(|| match &self.input {
            Value::Object(map) if map.is_empty() => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        truncate(&text, 80)
    }

    pub fn render(&self, theme: &Theme, width: u16) -> Vec<Line<'static>> {
        let (icon, style) = match self.status {
            ToolRowStatus::Pending => ("○", theme.dim()),
            ToolRowStatus::Running => ("◐", theme.running()),
            ToolRowStatus::Done => ("●", theme.ok()),
            ToolRowStatus::Error => ("✗", theme.error()),
            ToolRowStatus::Denied => ("⊘", theme.warn()),
            ToolRowStatus::Cancelled | ToolRowStatus::Skipped => ("○", theme.dim()),
        };
        let mut head = vec![
            Span::styled(format!("{icon} "), style),
            Span::styled(self.name.clone(), theme.bold()),
            Span::raw(" "),
            Span::raw(self.summary()),
            Span::raw("  "),
            Span::styled(self.status.label(), style),
        ];
        if let Some(errors) = self.errors {
            let count = format!(" · {errors} error{}", if errors == 1 { "" } else { "s" });
            head.push(Span::styled(
                count,
                if errors > 0 {
                    theme.error()
                } else {
                    theme.dim()
                },
            ));
        }
        let mut lines = vec![Line::from(head)];
        let indent = "    ";
        let preview = match (self.status, self.result.as_deref()) {
            (ToolRowStatus::Done, result) => {
                diff::tool_preview(&self.name, &self.input, result, theme, PREVIEW_LINES)
            }
            (ToolRowStatus::Pending | ToolRowStatus::Running, _) => None,
            _ => None,
        };
        if let Some(diff_lines) = preview {
            for line in diff_lines {
                let mut spans = vec![Span::raw(indent)];
                spans.extend(line.spans);
                lines.push(Line::from(spans).style(line.style));
            }
            return lines;
        }
        if let Some(result) = &self.result {
            let room = usize::from(width).saturating_sub(indent.len() + 2).max(8);
            let mut shown = result.lines().filter(|l| !l.trim().is_empty());
            if let Some(first) = shown.next() {
                let more = shown.count();
                let style = match self.status {
                    ToolRowStatus::Done => theme.dim(),
                    ToolRowStatus::Error => theme.error(),
                    _ => theme.warn(),
                };
                let mut spans = vec![
                    Span::styled("  ⎿ ", theme.dim()),
                    Span::styled(truncate(first, room), style),
                ];
                if more > 0 {
                    spans.push(Span::styled(format!(" (+{more} lines)"), theme.dim()));
                }
                lines.push(Line::from(spans));
            }
        }
        lines
    }
}

/// The first `max` characters, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_name_the_argument_that_matters() {
        let row = |name: &str, args: &str| ToolRow::new(name, args, "c").summary();
        assert_eq!(row("read_file", r#"{"path":"src/a.rs"}"#), "src/a.rs");
        assert_eq!(
            row("grep", r#"{"pattern":"fn main","path":"src"}"#),
            "fn main in src"
        );
        assert_eq!(
            row("shell", r#"{"command":"cargo test\necho hi"}"#),
            "cargo test"
        );
        assert_eq!(row("mcp_x", r#"{"q":1}"#), r#"{"q":1}"#);
        assert_eq!(row("ls", "not json"), "not json");
    }

    #[test]
    fn a_checked_write_shows_its_error_count() {
        let text = |row: &ToolRow| {
            row.render(&Theme::plain(), 80)[0]
                .spans
                .iter()
                .map(|s| s.content.to_string())
                .collect::<String>()
        };
        let mut edit = ToolRow::new("edit", r#"{"path":"a.py"}"#, "c");
        edit.finish(
            ToolRowStatus::Done,
            "1 replacement in a.py\n[lsp pyright: 2 errors and 1 warning in a.py, new since the edit]\na.py:1:1 error: x\na.py:2:1 error: y\na.py:3:1 warning: z",
        );
        assert_eq!(edit.errors, Some(2));
        assert_eq!(text(&edit), "● edit a.py  done · 2 errors");
        let mut clean = ToolRow::new("write_file", r#"{"path":"a.py"}"#, "c");
        clean.finish(
            ToolRowStatus::Done,
            "created a.py (3 bytes)\n[lsp pyright: no new errors or warnings in a.py]",
        );
        assert_eq!(text(&clean), "● write_file a.py  done · 0 errors");
        // No server checked it, or it said nothing in time: no count at all.
        let mut silent = ToolRow::new("write_file", r#"{"path":"a.py"}"#, "c");
        silent.finish(
            ToolRowStatus::Done,
            "created a.py (3 bytes)\n[lsp pyright: no diagnostics for a.py within 5 s (the lsp tool's diagnostics asks again)]",
        );
        assert_eq!(silent.errors, None);
        let mut read = ToolRow::new("read_file", r#"{"path":"a.txt"}"#, "c");
        read.finish(ToolRowStatus::Done, "[lsp x: 1 error and 0 warnings in a]");
        assert_eq!(read.errors, None);
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
