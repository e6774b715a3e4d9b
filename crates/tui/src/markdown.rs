//! Markdown to styled terminal lines (unwrapped; `wrap` fits them to the width). It is
//! re-run on every streamed delta, so it accepts any prefix of a document: an unclosed
//! code fence simply renders as code.

use crate::theme::Theme;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Renders `text` as Markdown.
pub fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme: *theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: vec![Style::new()],
        lists: Vec::new(),
        quote: 0,
        code: None,
        link: None,
        pending_gap: false,
        item_prefix: None,
        table_row: Vec::new(),
        in_table_head: false,
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

struct Renderer {
    theme: Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    /// Inline style stack (emphasis, strong, links...).
    styles: Vec<Style>,
    /// For each open list: the next number, or `None` for bullets.
    lists: Vec<Option<u64>>,
    quote: usize,
    /// Inside a code block: its language.
    code: Option<String>,
    link: Option<String>,
    /// A blank line is due before the next block.
    pending_gap: bool,
    /// The marker for the first line of the current list item.
    item_prefix: Option<String>,
    table_row: Vec<String>,
    in_table_head: bool,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let next = f(self.style());
        self.styles.push(next);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    /// The indentation of continuation lines in the current list and quote context.
    fn indent(&self) -> String {
        let mut s = String::new();
        for _ in 0..self.quote {
            s.push_str("│ ");
        }
        for list in &self.lists {
            // The width of this list's marker: "• " or "12. ".
            let marker = match list {
                Some(n) => format!("{}. ", n.saturating_sub(1)).len(),
                None => 2,
            };
            s.push_str(&" ".repeat(marker));
        }
        s
    }

    /// Starts a block: a blank line after the previous one.
    fn block_start(&mut self) {
        self.flush();
        if self.pending_gap && !self.lines.is_empty() {
            self.lines.push(Line::default());
        }
        self.pending_gap = false;
    }

    fn text(&mut self, text: &str) {
        let style = self.style();
        self.current.push(Span::styled(text.to_owned(), style));
    }

    /// Ends the current line, with the list marker or indentation in front.
    fn flush(&mut self) {
        if self.current.is_empty() {
            return;
        }
        let prefix = match self.item_prefix.take() {
            Some(marker) => {
                let indent = self.indent();
                let keep = indent
                    .chars()
                    .count()
                    .saturating_sub(marker.chars().count());
                let mut p: String = indent.chars().take(keep).collect();
                p.push_str(&marker);
                p
            }
            None => self.indent(),
        };
        let mut spans = Vec::new();
        if !prefix.is_empty() {
            let style = if self.quote > 0 {
                self.theme.dim()
            } else {
                Style::new()
            };
            spans.push(Span::styled(prefix, style));
        }
        spans.append(&mut self.current);
        self.lines.push(Line::from(spans));
    }

    fn event(&mut self, event: Event) {
        if self.code.is_some() {
            match event {
                Event::Text(text) => {
                    let style = self.theme.code_block();
                    for line in text.lines() {
                        self.lines.push(Line::from(vec![
                            Span::raw(format!("{}  ", self.indent())),
                            Span::styled(line.to_owned(), style),
                        ]));
                    }
                }
                Event::End(TagEnd::CodeBlock) => {
                    self.code = None;
                    self.pending_gap = true;
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if self.table_row_open() {
                    if let Some(cell) = self.table_row.last_mut() {
                        cell.push_str(&text);
                    }
                } else {
                    self.text(&text);
                }
            }
            Event::Code(code) => {
                if self.table_row_open() {
                    if let Some(cell) = self.table_row.last_mut() {
                        cell.push_str(&code);
                    }
                } else {
                    let style = self.style().patch(self.theme.inline_code());
                    self.current.push(Span::styled(code.to_string(), style));
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for (i, line) in html.lines().enumerate() {
                    if i > 0 {
                        self.flush();
                    }
                    self.text(line);
                }
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_start();
                self.lines
                    .push(Line::styled("───".to_owned(), self.theme.dim()));
                self.pending_gap = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
            _ => {}
        }
    }

    fn table_row_open(&self) -> bool {
        !self.table_row.is_empty()
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Paragraph => {
                if self.item_prefix.is_none() {
                    self.block_start();
                } else {
                    self.flush();
                }
            }
            Tag::Heading { level, .. } => {
                self.block_start();
                let heading = self.theme.heading();
                self.push_style(|_| match level {
                    HeadingLevel::H1 | HeadingLevel::H2 => heading,
                    _ => heading.remove_modifier(Modifier::empty()),
                });
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                if !lang.is_empty() {
                    self.lines.push(Line::from(vec![
                        Span::raw(self.indent()),
                        Span::styled(format!("─ {lang}"), self.theme.code_lang()),
                    ]));
                }
                self.code = Some(lang);
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_owned(),
                };
                self.item_prefix = Some(marker);
            }
            Tag::Emphasis => {
                let s = self.theme.italic();
                self.push_style(|st| st.patch(s));
            }
            Tag::Strong => {
                let s = self.theme.bold();
                self.push_style(|st| st.patch(s));
            }
            Tag::Strikethrough => self.push_style(|st| st.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                let s = self.theme.link();
                self.push_style(|st| st.patch(s));
            }
            Tag::Table(_) => self.block_start(),
            Tag::TableHead => self.in_table_head = true,
            Tag::TableRow => {}
            Tag::TableCell => self.table_row.push(String::new()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.pending_gap = true;
            }
            TagEnd::Heading(_) => {
                self.pop_style();
                self.flush();
                self.pending_gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.pending_gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.pending_gap = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.item_prefix = None;
                self.pending_gap = false;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                if let Some(url) = self.link.take() {
                    let shown: String = self.current.iter().map(|s| s.content.as_ref()).collect();
                    if !shown.ends_with(url.as_str()) && !url.is_empty() {
                        self.current
                            .push(Span::styled(format!(" ({url})"), self.theme.dim()));
                    }
                }
            }
            TagEnd::TableHead => {
                self.table_line(true);
                self.in_table_head = false;
            }
            TagEnd::TableRow => self.table_line(false),
            TagEnd::Table => {
                self.flush();
                self.pending_gap = true;
            }
            _ => {}
        }
    }

    fn table_line(&mut self, head: bool) {
        let cells = std::mem::take(&mut self.table_row);
        if cells.is_empty() {
            return;
        }
        let style = if head {
            self.theme.bold()
        } else {
            self.theme.text()
        };
        let mut spans = Vec::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" │ ", self.theme.dim()));
            }
            spans.push(Span::styled(cell.trim().to_owned(), style));
        }
        self.lines.push(Line::from(spans));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(md: &str) -> Vec<String> {
        render(md, &Theme::plain())
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn headings_paragraphs_and_inline_styles() {
        let lines = render("# Title\n\nSome **bold** and `code`.", &Theme::colored());
        assert_eq!(lines[0].to_string(), "Title");
        assert_eq!(lines[1].to_string(), "");
        assert_eq!(lines[2].to_string(), "Some bold and code.");
        let bold = lines[2].spans.iter().find(|s| s.content == "bold").unwrap();
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        let code = lines[2].spans.iter().find(|s| s.content == "code").unwrap();
        assert_eq!(code.style.fg, Some(ratatui::style::Color::Yellow));
    }

    #[test]
    fn nested_and_numbered_lists() {
        assert_eq!(
            plain("- one\n  - inner\n- two\n\n3. three\n4. four"),
            vec!["• one", "  • inner", "• two", "", "3. three", "4. four"]
        );
    }

    #[test]
    fn code_blocks_show_their_language_and_keep_lines() {
        assert_eq!(
            plain("Look:\n\n```rust\nfn main() {\n    go();\n}\n```\nafter"),
            vec![
                "Look:",
                "",
                "─ rust",
                "  fn main() {",
                "      go();",
                "  }",
                "",
                "after"
            ]
        );
    }

    #[test]
    fn an_unclosed_fence_renders_as_code() {
        assert_eq!(
            plain("```py\nprint(1)\nprint("),
            vec!["─ py", "  print(1)", "  print("]
        );
    }

    #[test]
    fn tables_links_and_quotes() {
        assert_eq!(
            plain("| a | b |\n|---|---|\n| 1 | 2 |"),
            vec!["a │ b", "1 │ 2"]
        );
        assert_eq!(
            plain("see [docs](https://x.dev) or <https://y.dev>"),
            vec!["see docs (https://x.dev) or https://y.dev"]
        );
        assert_eq!(plain("> quoted"), vec!["│ quoted"]);
    }

    #[test]
    fn any_prefix_of_a_document_renders() {
        let doc = "# H\n\n1. **a** `b`\n   - c\n\n```\nx\n```\n| t |\n|-|\n| u |\n> q [l](u)";
        for end in 0..=doc.len() {
            if doc.is_char_boundary(end) {
                let _ = render(&doc[..end], &Theme::colored());
            }
        }
    }
}
