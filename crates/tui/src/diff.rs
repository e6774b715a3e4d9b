//! Coloured diffs for tool rows and approval prompts: the edit tool's own unified diff,
//! or one computed from a call's arguments.
//!
//! Every function here returns at most `max_lines` lines; when a diff is longer, the
//! last of them is a dim `… N more lines`. "\ No newline at end of file" markers are
//! never shown.

use crate::theme::Theme;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// What one line of a unified diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--- a/file`, `+++ b/file`, `diff --git …`.
    Header,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    Added,
    Removed,
    Context,
    /// Anything else: a summary line, `index …`, a note.
    Other,
}

struct Row {
    kind: Kind,
    text: String,
}

impl Row {
    fn new(kind: Kind, text: impl Into<String>) -> Self {
        Self {
            kind,
            text: text.into(),
        }
    }
}

/// A unified diff of `old` → `new` with `context` lines around changes: `@@` hunk
/// headers, then `+`, `-` and ` ` lines (no file header).
pub fn unified(
    old: &str,
    new: &str,
    context: usize,
    max_lines: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    render(diff_rows(old, new, context), max_lines, theme)
}

/// Colours text that already is a unified diff (such as `git diff` or the edit tool's
/// output). Inside a hunk, lines are told apart by the hunk header's line counts, so a
/// removed line that reads `-- x` is not taken for a `---` file header.
pub fn colorize(diff_text: &str, max_lines: usize, theme: &Theme) -> Vec<Line<'static>> {
    render(parse(diff_text), max_lines, theme)
}

/// `(added, removed)`: how many lines a unified diff adds and removes (file headers
/// are not counted).
pub fn stats(diff_text: &str) -> (usize, usize) {
    parse(diff_text)
        .iter()
        .fold((0, 0), |(added, removed), row| match row.kind {
            Kind::Added => (added + 1, removed),
            Kind::Removed => (added, removed + 1),
            _ => (added, removed),
        })
}

/// What an `edit` or `write_file` call does, for its tool row (with the tool's
/// `result`) or its approval prompt (without). `None` for other tools, or when the
/// arguments lack the fields these tools need.
///
/// - `edit`: the tool's own diff (it has the file's real line numbers; the summary line
///   and file header are skipped) when `result` holds one, else a diff of `old_string`
///   → `new_string` without hunk headers (their numbers would count from the snippet);
///   separate hunks are divided by a dim `⋮`.
/// - `write_file`: the tool's one-line report (`created x (12 bytes)`) when there is a
///   result, then the content as added lines.
pub fn tool_preview(
    tool: &str,
    arguments: &Value,
    result: Option<&str>,
    theme: &Theme,
    max_lines: usize,
) -> Option<Vec<Line<'static>>> {
    let field = |k: &str| arguments.get(k).and_then(Value::as_str);
    let rows = match tool {
        "edit" => match result.and_then(result_diff) {
            Some(rows) => rows,
            None => snippet_diff(field("old_string")?, field("new_string")?),
        },
        "write_file" => {
            let content = field("content")?;
            let report = result.and_then(|r| r.lines().map(str::trim).find(|l| !l.is_empty()));
            let mut rows: Vec<Row> = report
                .map(|r| Row::new(Kind::Other, r))
                .into_iter()
                .collect();
            rows.extend(
                content
                    .lines()
                    .map(|l| Row::new(Kind::Added, format!("+{l}"))),
            );
            if content.is_empty() && report.is_none() {
                rows.push(Row::new(Kind::Other, "(empty file)"));
            }
            rows
        }
        _ => return None,
    };
    Some(render(rows, max_lines, theme))
}

fn style(kind: Kind, theme: &Theme) -> Style {
    match kind {
        Kind::Header => theme.bold(),
        Kind::Hunk => theme.hunk(),
        Kind::Added => theme.added(),
        Kind::Removed => theme.removed(),
        Kind::Context | Kind::Other => theme.dim(),
    }
}

/// At most `max_lines` lines: when `rows` do not fit, the last line says how many more
/// there were.
fn render(rows: Vec<Row>, max_lines: usize, theme: &Theme) -> Vec<Line<'static>> {
    let total = rows.len();
    let keep = if total > max_lines {
        max_lines.saturating_sub(1)
    } else {
        total
    };
    let mut lines: Vec<Line<'static>> = rows
        .into_iter()
        .take(keep)
        .map(|row| Line::from(Span::styled(row.text, style(row.kind, theme))))
        .collect();
    if total > max_lines && max_lines > 0 {
        lines.push(Line::from(Span::styled(
            format!("… {} more lines", total - keep),
            theme.dim(),
        )));
    }
    lines
}

/// A line's text without its line ending.
fn without_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

fn diff_rows(old: &str, new: &str, context: usize) -> Vec<Row> {
    let diff = TextDiff::from_lines(old, new);
    let mut rows = Vec::new();
    for hunk in diff.unified_diff().context_radius(context).iter_hunks() {
        rows.push(Row::new(Kind::Hunk, hunk.header().to_string()));
        for change in hunk.iter_changes() {
            let (kind, sign) = match change.tag() {
                ChangeTag::Insert => (Kind::Added, '+'),
                ChangeTag::Delete => (Kind::Removed, '-'),
                ChangeTag::Equal => (Kind::Context, ' '),
            };
            rows.push(Row::new(
                kind,
                format!("{sign}{}", without_eol(change.value())),
            ));
        }
    }
    rows
}

/// `(old, new)` line counts from `@@ -a,b +c,d @@` (a missing count is 1).
fn hunk_counts(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let count = |range: &str| match range.split_once(',') {
        Some((start, n)) => start.parse::<usize>().ok().and(n.parse().ok()),
        None => range.parse::<usize>().ok().map(|_| 1),
    };
    Some((count(old)?, count(new)?))
}

fn parse(diff_text: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    // Lines still expected in the current hunk, from its header.
    let (mut old_left, mut new_left) = (0usize, 0usize);
    for line in diff_text.lines() {
        if line.starts_with('\\') {
            // "\ No newline at end of file" (possibly translated) after a diff line.
            let after_change = rows
                .last()
                .is_some_and(|r| matches!(r.kind, Kind::Added | Kind::Removed | Kind::Context));
            if after_change || line.starts_with("\\ No newline") {
                continue;
            }
        }
        if old_left > 0 || new_left > 0 {
            let kind = match line.as_bytes().first() {
                Some(b'+') => Some(Kind::Added),
                Some(b'-') => Some(Kind::Removed),
                // Some tools strip the space from empty context lines.
                Some(b' ') | None => Some(Kind::Context),
                _ => None,
            };
            match kind {
                Some(kind) => {
                    if kind != Kind::Added {
                        old_left = old_left.saturating_sub(1);
                    }
                    if kind != Kind::Removed {
                        new_left = new_left.saturating_sub(1);
                    }
                    rows.push(Row::new(kind, line));
                    continue;
                }
                // A cut or malformed hunk: read on as if it had ended.
                None => (old_left, new_left) = (0, 0),
            }
        }
        let kind = if line.starts_with("@@") {
            if let Some(counts) = hunk_counts(line) {
                (old_left, new_left) = counts;
            }
            Kind::Hunk
        } else if line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff ") {
            Kind::Header
        } else if line.starts_with('+') {
            Kind::Added
        } else if line.starts_with('-') {
            Kind::Removed
        } else if line.starts_with(' ') {
            Kind::Context
        } else {
            Kind::Other
        };
        rows.push(Row::new(kind, line));
    }
    rows
}

/// The hunks of the edit tool's result (`N replacements in x`, then a unified diff),
/// or `None` when it holds no diff.
fn result_diff(result: &str) -> Option<Vec<Row>> {
    let rows: Vec<Row> = parse(result)
        .into_iter()
        .skip_while(|r| r.kind != Kind::Hunk)
        .filter(|r| r.kind != Kind::Header)
        .collect();
    let changes = rows
        .iter()
        .any(|r| matches!(r.kind, Kind::Added | Kind::Removed));
    changes.then_some(rows)
}

/// A diff of an edit's `old_string` → `new_string`. Both are snippets from the middle
/// of a file, so a missing final newline means nothing and is not diffed, and hunk
/// headers (counting from the snippet's first line) become `⋮` between hunks.
fn snippet_diff(old: &str, new: &str) -> Vec<Row> {
    let terminated = |s: &str| {
        if s.is_empty() || s.ends_with('\n') {
            s.to_owned()
        } else {
            format!("{s}\n")
        }
    };
    let mut rows = diff_rows(&terminated(old), &terminated(new), 3);
    if rows.first().is_some_and(|r| r.kind == Kind::Hunk) {
        rows.remove(0);
    }
    for row in &mut rows {
        if row.kind == Kind::Hunk {
            *row = Row::new(Kind::Other, "⋮");
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};
    use serde_json::json;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    /// Lines "1" to "n", with some replaced.
    fn numbered(n: usize, changes: &[(usize, &str)]) -> String {
        (1..=n)
            .map(|i| match changes.iter().find(|(at, _)| *at == i) {
                Some((_, s)) => format!("{s}\n"),
                None => format!("{i}\n"),
            })
            .collect()
    }

    fn plain_colorize(diff: &str, max: usize) -> Vec<String> {
        text(&colorize(diff, max, &Theme::plain()))
    }

    #[test]
    fn unified_shows_hunks_with_headers_and_styles() {
        let theme = Theme::plain();
        let lines = unified("a\nb\nc\n", "a\nB\nc\n", 1, 20, &theme);
        assert_eq!(
            text(&lines),
            vec!["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]
        );
        assert_eq!(lines[0].spans[0].style, theme.hunk());
        assert_eq!(lines[1].spans[0].style, theme.dim());
        assert!(lines[1].spans[0].style.add_modifier.contains(Modifier::DIM));
        assert_eq!(lines[2].spans[0].style, theme.removed());
        assert_eq!(lines[3].spans[0].style, theme.added());
        assert!(unified("same\n", "same\n", 3, 20, &theme).is_empty());
    }

    #[test]
    fn unified_separates_distant_changes_into_hunks() {
        let old = numbered(20, &[]);
        let new = numbered(20, &[(2, "two"), (19, "nineteen")]);
        let lines = text(&unified(&old, &new, 1, 50, &Theme::plain()));
        assert_eq!(
            lines,
            vec![
                "@@ -1,3 +1,3 @@",
                " 1",
                "-2",
                "+two",
                " 3",
                "@@ -18,3 +18,3 @@",
                " 18",
                "-19",
                "+nineteen",
                " 20",
            ]
        );
    }

    #[test]
    fn unified_never_shows_missing_newline_noise() {
        let lines = text(&unified("a", "b", 3, 20, &Theme::plain()));
        assert_eq!(lines, vec!["@@ -1 +1 @@", "-a", "+b"]);
        let crlf = text(&unified("x\r\ny\r\n", "x\r\nz\r\n", 0, 20, &Theme::plain()));
        assert_eq!(crlf, vec!["@@ -2 +2 @@", "-y", "+z"]);
    }

    #[test]
    fn long_diffs_are_cut_to_max_lines_with_a_count_of_the_rest() {
        let theme = Theme::plain();
        let cut = unified("", &"x\n".repeat(30), 0, 5, &theme);
        // 31 rows (a hunk header and 30 added lines): 4 shown, 27 more.
        assert_eq!(
            text(&cut),
            vec!["@@ -0,0 +1,30 @@", "+x", "+x", "+x", "… 27 more lines"]
        );
        assert_eq!(cut[4].spans[0].style, theme.dim());
        let exact = unified("", &"x\n".repeat(4), 0, 5, &theme);
        assert_eq!(exact.len(), 5);
        assert!(!exact[4].to_string().contains("more"));
        assert!(unified("", "x\n", 0, 0, &theme).is_empty());
        assert_eq!(
            text(&unified("", "x\ny\n", 0, 1, &theme)),
            vec!["… 3 more lines"]
        );
    }

    #[test]
    fn colorize_styles_headers_hunks_and_changes() {
        let theme = Theme::plain();
        let diff = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@ fn f\n-old\n+new\n same\n\\ No newline at end of file\n";
        let lines = colorize(diff, 20, &theme);
        assert_eq!(
            text(&lines),
            vec![
                "diff --git a/x b/x",
                "index 1..2 100644",
                "--- a/x",
                "+++ b/x",
                "@@ -1,2 +1,2 @@ fn f",
                "-old",
                "+new",
                " same",
            ]
        );
        let styles: Vec<Style> = lines.iter().map(|l| l.spans[0].style).collect();
        assert_eq!(
            styles,
            vec![
                theme.bold(),
                theme.dim(),
                theme.bold(),
                theme.bold(),
                theme.hunk(),
                theme.removed(),
                theme.added(),
                theme.dim(),
            ]
        );
    }

    #[test]
    fn colorize_reads_hunk_counts_so_changed_dashes_are_not_headers() {
        let theme = Theme::plain();
        // A removed SQL comment "-- x" and an added "++ y" look like file headers.
        let diff = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n keep\n--- a/r.sql\n+++ b/r.sql\n@@ -3 +3,0 @@\n-gone\n";
        let lines = colorize(diff, 20, &theme);
        let styles: Vec<Style> = lines.iter().map(|l| l.spans[0].style).collect();
        assert_eq!(
            styles,
            vec![
                theme.bold(),
                theme.bold(),
                theme.hunk(),
                theme.removed(),
                theme.added(),
                theme.dim(),
                theme.bold(),
                theme.bold(),
                theme.hunk(),
                theme.removed(),
            ]
        );
        assert_eq!(stats(diff), (1, 2));
        assert_eq!(
            plain_colorize(diff, 4),
            vec![
                "--- a/q.sql",
                "+++ b/q.sql",
                "@@ -1,2 +1,2 @@",
                "… 7 more lines"
            ]
        );
    }

    #[test]
    fn added_lines_are_green_and_removed_red_with_colour() {
        let lines = colorize("@@ -1 +1 @@\n-x\n+y", 10, &Theme::colored());
        assert_eq!(lines[2].spans[0].style.fg, Some(Color::Green));
        assert_eq!(lines[1].spans[0].style.fg, Some(Color::Red));
        assert_eq!(lines[0].spans[0].style.fg, Some(Color::Cyan));
        let plain = colorize("@@ -1 +1 @@\n-x\n+y", 10, &Theme::plain());
        assert!(plain.iter().all(|l| l.spans[0].style.fg.is_none()));
    }

    #[test]
    fn stats_count_changed_lines_but_not_headers() {
        assert_eq!(stats("--- a\n+++ b\n@@\n-x\n+y\n+z"), (2, 1));
        assert_eq!(
            stats("--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n a\n-b\n-c\n+C\n"),
            (1, 2)
        );
        assert_eq!(stats("1 replacement in f"), (0, 0));
        assert_eq!(stats(""), (0, 0));
    }

    #[test]
    fn edit_previews_use_the_tools_diff_when_the_result_has_one() {
        let theme = Theme::plain();
        let args = json!({"path": "x", "old_string": "old", "new_string": "new"});
        // As the edit tool returns it: a summary line, then the diff with a file header.
        let result = "1 replacement in x\n--- a/x\n+++ b/x\n@@ -4,2 +4,2 @@\n ctx\n-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n";
        let lines = tool_preview("edit", &args, Some(result), &theme, 10).unwrap();
        assert_eq!(
            text(&lines),
            vec!["@@ -4,2 +4,2 @@", " ctx", "-old", "+new"]
        );
        assert_eq!(lines[0].spans[0].style, theme.hunk());
        // A result without a diff: the arguments are diffed instead.
        let lines = tool_preview("edit", &args, Some("edited x"), &theme, 10).unwrap();
        assert_eq!(text(&lines), vec!["-old", "+new"]);
    }

    #[test]
    fn edit_previews_from_arguments_hide_snippet_line_numbers_and_newline_noise() {
        let theme = Theme::plain();
        let args = json!({"path": "a", "old_string": "fn a() {}\n", "new_string": "fn b() {}\n"});
        let lines = tool_preview("edit", &args, None, &theme, 10).unwrap();
        assert_eq!(text(&lines), vec!["-fn a() {}", "+fn b() {}"]);
        // Without final newlines, and where only one side has one.
        let args = json!({"path": "a", "old_string": "x {\n  y", "new_string": "x {\n  y\n  z\n"});
        let lines = tool_preview("edit", &args, None, &theme, 10).unwrap();
        assert_eq!(text(&lines), vec![" x {", "   y", "+  z"]);
        // A deletion.
        let args = json!({"path": "a", "old_string": "gone", "new_string": ""});
        let lines = tool_preview("edit", &args, None, &theme, 10).unwrap();
        assert_eq!(text(&lines), vec!["-gone"]);
        // Far-apart changes in one snippet.
        let old = numbered(12, &[]);
        let new = numbered(12, &[(1, "one"), (12, "twelve")]);
        let args = json!({"path": "a", "old_string": old, "new_string": new});
        let lines = text(&tool_preview("edit", &args, None, &theme, 20).unwrap());
        assert_eq!(lines[0], "-1");
        assert!(lines.contains(&"⋮".to_owned()), "{lines:?}");
        assert_eq!(lines.last().map(String::as_str), Some("+twelve"));
        // Cut to max_lines.
        let lines = tool_preview("edit", &args, None, &theme, 3).unwrap();
        assert_eq!(lines.len(), 3);
        assert!(lines[2].to_string().ends_with("more lines"));
        // Arguments that are not an edit's.
        assert!(tool_preview("edit", &json!({"path": "a"}), None, &theme, 5).is_none());
        assert!(tool_preview("edit", &json!("raw"), None, &theme, 5).is_none());
    }

    #[test]
    fn write_previews_show_the_content_as_added_lines() {
        let theme = Theme::plain();
        let write = json!({"path": "n", "content": "one\ntwo\nthree\n"});
        let lines = tool_preview("write_file", &write, None, &theme, 10).unwrap();
        assert_eq!(text(&lines), vec!["+one", "+two", "+three"]);
        assert_eq!(lines[0].spans[0].style, theme.added());
        let lines = tool_preview("write_file", &write, None, &theme, 2).unwrap();
        assert_eq!(text(&lines), vec!["+one", "… 2 more lines"]);
        // After the call, the tool's report comes first.
        let report = "overwrote n (14 bytes)";
        let lines = tool_preview("write_file", &write, Some(report), &theme, 10).unwrap();
        assert_eq!(text(&lines), vec![report, "+one", "+two", "+three"]);
        assert_eq!(lines[0].spans[0].style, theme.dim());
        let empty = json!({"path": "e", "content": ""});
        let lines = tool_preview("write_file", &empty, None, &theme, 10).unwrap();
        assert_eq!(text(&lines), vec!["(empty file)"]);
        let lines = tool_preview(
            "write_file",
            &empty,
            Some("created e (0 bytes)"),
            &theme,
            10,
        );
        assert_eq!(text(&lines.unwrap()), vec!["created e (0 bytes)"]);
        assert!(tool_preview("write_file", &json!({"path": "n"}), None, &theme, 5).is_none());
        assert!(tool_preview("shell", &json!({"command": "ls"}), None, &theme, 5).is_none());
    }
}
