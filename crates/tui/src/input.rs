//! The multi-line input: a text buffer with a cursor, word motions, and prompt history
//! on Up/Down (only when the cursor is on the first or last line, so moving within a
//! multi-line draft never loses it).

use unicode_width::UnicodeWidthChar;

#[derive(Debug, Default, Clone)]
pub struct InputEditor {
    text: String,
    /// Byte offset, always on a char boundary.
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing the draft.
    browsing: Option<usize>,
    /// The unsent draft, kept while browsing history.
    draft: String,
}

impl InputEditor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Empties the input and returns what it held, remembering it in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Inserts text as typed or pasted; CR LF and lone CR become LF, tabs four spaces.
    pub fn insert_str(&mut self, s: &str) {
        let clean = s
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\t', "    ");
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Replaces the byte range `start..self.cursor` with `with` (the `@` completion).
    pub fn replace_before_cursor(&mut self, start: usize, with: &str) {
        if start > self.cursor || !self.text.is_char_boundary(start) {
            return;
        }
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    pub fn backspace(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.text.replace_range(prev..self.cursor, "");
            self.cursor = prev;
        }
    }

    pub fn delete(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.text.replace_range(self.cursor..next, "");
        }
    }

    pub fn left(&mut self) {
        if let Some(prev) = self.prev_boundary() {
            self.cursor = prev;
        }
    }

    pub fn right(&mut self) {
        if let Some(next) = self.next_boundary() {
            self.cursor = next;
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Ctrl+W: deletes the word before the cursor (and the spaces after it).
    pub fn delete_word_back(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl+U: deletes from the line start to the cursor.
    pub fn kill_to_line_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl+K: deletes from the cursor to the line end.
    pub fn kill_to_line_end(&mut self) {
        let end = self.line_end();
        self.text.replace_range(self.cursor..end, "");
    }

    fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Up: the line above, or the previous prompt from history on the first line.
    pub fn up(&mut self) {
        if !self.on_first_line() {
            self.move_vertically(false);
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
    }

    /// Down: the line below, or the next prompt from history (then the draft).
    pub fn down(&mut self) {
        if !self.on_last_line() {
            self.move_vertically(true);
            return;
        }
        let Some(i) = self.browsing else {
            return;
        };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            self.text = self.history[i + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    fn move_vertically(&mut self, down: bool) {
        let start = self.line_start();
        let column = self.text[start..self.cursor].chars().count();
        let target_start = if down {
            self.line_end() + 1
        } else {
            self.text[..start.saturating_sub(1)]
                .rfind('\n')
                .map_or(0, |i| i + 1)
        };
        let line = &self.text[target_start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        let offset = line
            .char_indices()
            .nth(column)
            .map_or(line.len(), |(i, _)| i);
        self.cursor = target_start + offset;
    }

    /// The input laid out for `width` columns: each logical line hard-wrapped by display
    /// width; returns the rows and the cursor's (row, column).
    pub fn layout(&self, width: u16) -> (Vec<String>, (u16, u16)) {
        let width = usize::from(width.max(1));
        let mut rows = vec![String::new()];
        let mut col = 0usize;
        let mut cursor = (0u16, 0u16);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (rows.len() as u16 - 1, col as u16);
            }
            if c == '\n' {
                rows.push(String::new());
                col = 0;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if col + w > width {
                rows.push(String::new());
                col = 0;
                if i == self.cursor {
                    cursor = (rows.len() as u16 - 1, 0);
                }
            }
            if let Some(row) = rows.last_mut() {
                row.push(c);
            }
            col += w;
        }
        if self.cursor >= self.text.len() {
            if col >= width {
                rows.push(String::new());
                col = 0;
            }
            cursor = (rows.len() as u16 - 1, col as u16);
        }
        (rows, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn editor(text: &str) -> InputEditor {
        let mut e = InputEditor::default();
        e.insert_str(text);
        e
    }

    #[test]
    fn editing_keeps_the_cursor_on_char_boundaries() {
        let mut e = editor("héllo wörld");
        e.left();
        e.left();
        e.backspace();
        assert_eq!(e.text(), "héllo wöld");
        e.home();
        e.delete();
        assert_eq!(e.text(), "éllo wöld");
        e.end();
        e.delete_word_back();
        assert_eq!(e.text(), "éllo ");
    }

    #[test]
    fn paste_normalises_line_endings_and_tabs() {
        let e = editor("a\r\nb\rc\td");
        assert_eq!(e.text(), "a\nb\nc    d");
    }

    #[test]
    fn up_and_down_walk_history_and_restore_the_draft() {
        let mut e = editor("first");
        e.take();
        e.insert_str("second");
        e.take();
        e.insert_str("draft");
        e.up();
        assert_eq!(e.text(), "second");
        e.up();
        assert_eq!(e.text(), "first");
        e.up();
        assert_eq!(e.text(), "first");
        e.down();
        assert_eq!(e.text(), "second");
        e.down();
        assert_eq!(e.text(), "draft");
    }

    #[test]
    fn up_moves_between_lines_before_touching_history() {
        let mut e = editor("old");
        e.take();
        e.insert_str("line one\nline two");
        e.up();
        assert_eq!(e.text(), "line one\nline two");
        assert_eq!(e.cursor(), 8);
        e.up();
        assert_eq!(e.text(), "old");
    }

    #[test]
    fn kill_commands_work_on_the_current_line() {
        let mut e = editor("one\ntwo three");
        e.left();
        e.left();
        e.kill_to_line_end();
        assert_eq!(e.text(), "one\ntwo thr");
        e.kill_to_line_start();
        assert_eq!(e.text(), "one\n");
    }

    #[test]
    fn layout_wraps_by_display_width_and_places_the_cursor() {
        let e = editor("abcdef\n日本語");
        let (rows, cursor) = e.layout(4);
        assert_eq!(rows, vec!["abcd", "ef", "日本", "語"]);
        assert_eq!(cursor, (3, 2));
        let (rows, cursor) = editor("abcd").layout(4);
        assert_eq!(rows, vec!["abcd", ""]);
        assert_eq!(cursor, (1, 0));
    }

    #[test]
    fn completion_replaces_the_typed_reference() {
        let mut e = editor("look at @mai");
        e.replace_before_cursor(8, "@src/main.rs ");
        assert_eq!(e.text(), "look at @src/main.rs ");
        assert_eq!(e.cursor(), e.text().len());
    }
}
