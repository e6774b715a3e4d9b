//! Word wrap for styled lines, by display width. Ratatui's own wrapping cannot report how
//! many rows a paragraph takes, and the transcript needs exact row counts to render
//! bottom-up and to scroll, so lines are wrapped here once and cached.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Markers after which continuation rows indent (list bullets, quote bars).
const BULLETS: [&str; 4] = ["• ", "- ", "* ", "│ "];

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Display width of `text` (tabs count as four).
pub fn width(text: &str) -> usize {
    text.chars()
        .map(|c| if c == '\t' { 4 } else { char_width(c) })
        .sum()
}

/// The indent continuation rows get: leading spaces plus a list or quote marker.
fn hanging_indent(text: &str, max: usize) -> usize {
    let rest = text.trim_start_matches(' ');
    let mut indent = text.len() - rest.len();
    if let Some(bullet) = BULLETS.iter().find(|b| rest.starts_with(**b)) {
        indent += width(bullet);
    } else {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(". ") {
            indent += digits + 2;
        }
    }
    indent.min(max)
}

/// One styled character run being laid out.
struct Row {
    spans: Vec<Span<'static>>,
    width: usize,
}

impl Row {
    fn new(indent: usize) -> Self {
        let spans = if indent > 0 {
            vec![Span::raw(" ".repeat(indent))]
        } else {
            Vec::new()
        };
        Self {
            spans,
            width: indent,
        }
    }

    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        self.width += width(text);
        match self.spans.last_mut() {
            Some(last) if last.style == style => last.content.to_mut().push_str(text),
            _ => self.spans.push(Span::styled(text.to_owned(), style)),
        }
    }

    /// Drops trailing spaces beyond `max` columns (spaces after a word that just fits).
    fn trim_overflow(&mut self, max: usize) {
        while self.width > max {
            let Some(last) = self.spans.last_mut() else {
                return;
            };
            if !last.content.ends_with(' ') {
                return;
            }
            last.content.to_mut().pop();
            self.width -= 1;
            if last.content.is_empty() {
                self.spans.pop();
            }
        }
    }

    /// Drops trailing spaces (a break point never starts or ends a row with them).
    fn trim_end(&mut self) {
        while let Some(last) = self.spans.last_mut() {
            let trimmed = last.content.trim_end_matches(' ').len();
            let removed = last.content.len() - trimmed;
            self.width -= removed;
            if trimmed == 0 {
                self.spans.pop();
            } else {
                last.content.to_mut().truncate(trimmed);
                break;
            }
        }
    }
}

/// Splits styled text into words: each is a run of non-spaces followed by its spaces,
/// possibly crossing span boundaries, as (text, style) pieces.
fn words(line: &Line<'static>) -> Vec<Vec<(String, Style)>> {
    let mut words: Vec<Vec<(String, Style)>> = Vec::new();
    let mut current: Vec<(String, Style)> = Vec::new();
    let mut in_spaces = false;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for c in span.content.chars() {
            if c == ' ' {
                in_spaces = true;
            } else if in_spaces {
                words.push(std::mem::take(&mut current));
                in_spaces = false;
            }
            match current.last_mut() {
                Some((text, s)) if *s == style => text.push(c),
                _ => current.push((c.to_string(), style)),
            }
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Wraps one line to `width` columns. Continuation rows get the hanging indent of a list
/// item or quote; words wider than a row are broken; an empty line stays one row.
pub fn wrap(line: &Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let plain: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let plain = plain.replace('\t', "    ");
    if width == 0 || self::width(&plain) <= width {
        if line.spans.iter().any(|s| s.content.contains('\t')) {
            let spans = line
                .spans
                .iter()
                .map(|s| Span::styled(s.content.replace('\t', "    "), s.style))
                .collect::<Vec<_>>();
            return vec![Line::from(spans).style(line.style)];
        }
        return vec![line.clone()];
    }
    // Continuation rows keep room for at least one double-width character.
    let indent = hanging_indent(&plain, (width / 2).min(width.saturating_sub(2)));
    let expanded = Line::from(
        line.spans
            .iter()
            .map(|s| Span::styled(s.content.replace('\t', "    "), s.style))
            .collect::<Vec<_>>(),
    )
    .style(line.style);
    let mut rows: Vec<Row> = vec![Row::new(0)];
    for word in words(&expanded) {
        let word_width: usize = word.iter().map(|(t, _)| self::width(t)).sum();
        let word_trimmed: usize = word
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<String>()
            .trim_end_matches(' ')
            .chars()
            .map(char_width)
            .sum();
        let fits = |row: &Row| row.width + word_trimmed <= width;
        let row_has_text = rows
            .last()
            .is_some_and(|r| r.width > indent_of(rows.len(), indent));
        if rows.last().is_some_and(|r| !fits(r)) && row_has_text {
            if let Some(row) = rows.last_mut() {
                row.trim_end();
            }
            rows.push(Row::new(indent));
        }
        let Some(row) = rows.last_mut() else {
            break;
        };
        if row.width + word_width <= width || fits(row) {
            for (text, style) in &word {
                row.push(text, *style);
            }
            row.trim_overflow(width);
            continue;
        }
        // Wider than a whole row: break it character by character.
        for (text, style) in &word {
            for c in text.chars() {
                let w = char_width(c);
                let full = rows.last().is_some_and(|r| r.width + w > width);
                if full {
                    if let Some(row) = rows.last_mut() {
                        row.trim_end();
                    }
                    rows.push(Row::new(indent));
                }
                if let Some(row) = rows.last_mut() {
                    if !(c == ' ' && row.width + w > width) {
                        row.push(&c.to_string(), *style);
                    }
                }
            }
        }
    }
    if let Some(row) = rows.last_mut() {
        row.trim_end();
    }
    rows.into_iter()
        .map(|row| Line::from(row.spans).style(line.style))
        .collect()
}

fn indent_of(rows: usize, indent: usize) -> usize {
    if rows <= 1 {
        0
    } else {
        indent
    }
}

pub fn wrap_all(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap(l, width)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ratatui::style::{Color, Stylize};

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_move_to_the_next_row_and_styles_survive() {
        let line = Line::from(vec![
            Span::raw("hello "),
            "bold world".bold(),
            Span::raw(" again"),
        ]);
        let rows = wrap(&line, 11);
        assert_eq!(text(&rows), vec!["hello bold", "world again"]);
        assert!(rows[1].spans[0]
            .style
            .add_modifier
            .contains(ratatui::style::Modifier::BOLD));
    }

    #[test]
    fn list_items_hang_under_their_text() {
        let rows = wrap(&Line::from("  • one two three four"), 12);
        assert_eq!(text(&rows), vec!["  • one two", "    three", "    four"]);
        let rows = wrap(&Line::from("12. alpha beta gamma"), 12);
        assert_eq!(text(&rows), vec!["12. alpha", "    beta", "    gamma"]);
    }

    #[test]
    fn wide_characters_count_double_and_long_words_break() {
        let rows = wrap(&Line::from("日本語のテキスト"), 6);
        assert_eq!(text(&rows), vec!["日本語", "のテキ", "スト"]);
        let rows = wrap(&Line::from("abcdefghij"), 4);
        assert_eq!(text(&rows), vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn empty_lines_and_zero_width_are_kept() {
        assert_eq!(wrap(&Line::default(), 10).len(), 1);
        let line = Line::from("unchanged").fg(Color::Red);
        assert_eq!(wrap(&line, 0), vec![line]);
    }

    // Width 1 is left out: a double-width character cannot fit in one column at all.
    proptest! {
        #[test]
        fn rows_fit_and_keep_every_visible_character(s in "[a-z 日本\t-]{0,120}", w in 2u16..40) {
            let rows = wrap(&Line::from(s.clone()), w);
            for row in &rows {
                prop_assert!(width(&row.to_string()) <= usize::from(w), "{row:?} wider than {w}");
            }
            let kept: String = rows.iter().map(|r| r.to_string()).collect::<String>().split_whitespace().collect();
            let want: String = s.split_whitespace().collect();
            prop_assert_eq!(kept, want);
        }
    }
}
