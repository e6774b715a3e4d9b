//! The transcript: what was said and done, as entries that each cache their wrapped
//! lines for the current width. A frame renders bottom-up and stops once the screen is
//! full, and only an entry that changed is re-rendered, so a frame costs the same with
//! twenty entries or twenty thousand.

use crate::protocol::Level;
use crate::theme::Theme;
use crate::tool_row::{ToolRow, ToolRowStatus};
use crate::{markdown, wrap};
use ratatui::text::{Line, Span};
use saki_engine::{Item, ToolExecutionContext};

#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    User(String),
    Assistant {
        text: String,
        streaming: bool,
    },
    Thinking {
        text: String,
        streaming: bool,
    },
    /// One `tool_group`: the calls of one batch.
    Tools {
        batch_id: String,
        rows: Vec<ToolRow>,
    },
    Alert {
        level: Level,
        message: String,
    },
    /// A dim note: command output, an attached file, a compaction.
    Info(String),
}

#[derive(Debug, Clone)]
struct Entry {
    kind: EntryKind,
    /// Wrapped lines for one width; `None` after a change.
    cache: Option<(u16, Vec<Line<'static>>)>,
}

#[derive(Debug)]
pub struct Transcript {
    entries: Vec<Entry>,
    theme: Theme,
    /// Entries rendered since the last call to `take_render_count` (for tests and the
    /// benchmark: proves caching works).
    rendered: usize,
}

impl Transcript {
    pub fn new(theme: Theme) -> Self {
        Self {
            entries: Vec::new(),
            theme,
            rendered: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn kinds(&self) -> impl Iterator<Item = &EntryKind> {
        self.entries.iter().map(|e| &e.kind)
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn push(&mut self, kind: EntryKind) {
        self.entries.push(Entry { kind, cache: None });
    }

    pub fn alert(&mut self, level: Level, message: impl Into<String>) {
        self.push(EntryKind::Alert {
            level,
            message: message.into(),
        });
    }

    pub fn info(&mut self, message: impl Into<String>) {
        self.push(EntryKind::Info(message.into()));
    }

    pub fn text_delta(&mut self, delta: &str) {
        self.stream(delta, true);
    }

    pub fn thinking_delta(&mut self, delta: &str) {
        self.stream(delta, false);
    }

    /// Appends to the streaming answer (or thinking) at the end, or starts one.
    fn stream(&mut self, delta: &str, assistant: bool) {
        if let Some(entry) = self.entries.last_mut() {
            let same = matches!(entry.kind, EntryKind::Assistant { .. }) == assistant;
            if let EntryKind::Assistant {
                text,
                streaming: true,
            }
            | EntryKind::Thinking {
                text,
                streaming: true,
            } = &mut entry.kind
            {
                if same {
                    text.push_str(delta);
                    entry.cache = None;
                    return;
                }
            }
        }
        let text = delta.to_owned();
        self.push(if assistant {
            EntryKind::Assistant {
                text,
                streaming: true,
            }
        } else {
            EntryKind::Thinking {
                text,
                streaming: true,
            }
        });
    }

    /// The streaming entry of this kind, searched from the end within the current turn.
    fn streaming_entry(&mut self, assistant: bool) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .rev()
            .take(4)
            .find(|e| match &e.kind {
                EntryKind::Assistant { streaming, .. } => assistant && *streaming,
                EntryKind::Thinking { streaming, .. } => !assistant && *streaming,
                _ => false,
            })
    }

    /// Shows a committed history item: finishes the streamed entry it completes, or adds
    /// one (replayed history, accepted speculations).
    pub fn commit(&mut self, item: &Item) {
        match item {
            Item::User { text } => self.push(EntryKind::User(text.clone())),
            Item::System { text } => {
                if let Some(note) = system_note(text) {
                    self.info(note);
                }
            }
            // Like an `@path` file; an image a tool returned shows in that call's row.
            Item::Image {
                path,
                image,
                call_id: None,
            } => self.info(format!("attached {path} ({})", image.describe())),
            Item::Image { .. } => {}
            Item::AssistantText { text } => match self.streaming_entry(true) {
                Some(entry) => {
                    entry.kind = EntryKind::Assistant {
                        text: text.clone(),
                        streaming: false,
                    };
                    entry.cache = None;
                }
                None if text.trim().is_empty() => {}
                None => self.push(EntryKind::Assistant {
                    text: text.clone(),
                    streaming: false,
                }),
            },
            Item::Thinking { text, .. } => match self.streaming_entry(false) {
                Some(entry) => {
                    entry.kind = EntryKind::Thinking {
                        text: text.clone(),
                        streaming: false,
                    };
                    entry.cache = None;
                }
                None if text.trim().is_empty() => {}
                None => self.push(EntryKind::Thinking {
                    text: text.clone(),
                    streaming: false,
                }),
            },
            Item::ToolCall {
                name,
                arguments,
                ctx,
                ..
            } => {
                let row = ToolRow::new(name, arguments, &ctx.call_id);
                match self.group_mut(&ctx.batch_id) {
                    Some(entry) => {
                        if let EntryKind::Tools { rows, .. } = &mut entry.kind {
                            rows.push(row);
                        }
                        entry.cache = None;
                    }
                    None => self.push(EntryKind::Tools {
                        batch_id: ctx.batch_id.clone(),
                        rows: vec![row],
                    }),
                }
            }
            Item::ToolResult {
                name,
                content,
                status,
                ctx,
            } => {
                let status = ToolRowStatus::from(*status);
                if !self.update_row(ctx, |row| row.finish(status, content)) {
                    // A result without its call (e.g. a closed dangling call): show it alone.
                    let mut row = ToolRow::new(name, "{}", &ctx.call_id);
                    row.finish(status, content);
                    self.push(EntryKind::Tools {
                        batch_id: ctx.batch_id.clone(),
                        rows: vec![row],
                    });
                }
            }
        }
    }

    pub fn tool_started(&mut self, ctx: &ToolExecutionContext) {
        self.update_row(ctx, |row| row.status = ToolRowStatus::Running);
    }

    /// The tool group of `batch_id` in the current prompt's entries: a batch never spans
    /// prompts, so the search stops at the newest user entry (a session log of an older
    /// saki may repeat a batch id under another prompt).
    fn group_mut(&mut self, batch_id: &str) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .rev()
            .take(8)
            .take_while(|e| !matches!(e.kind, EntryKind::User(_)))
            .find(|e| matches!(&e.kind, EntryKind::Tools { batch_id: b, .. } if b == batch_id))
    }

    fn update_row(&mut self, ctx: &ToolExecutionContext, f: impl FnOnce(&mut ToolRow)) -> bool {
        let Some(entry) = self.group_mut(&ctx.batch_id) else {
            return false;
        };
        let EntryKind::Tools { rows, .. } = &mut entry.kind else {
            return false;
        };
        let Some(row) = rows.iter_mut().find(|r| r.call_id == ctx.call_id) else {
            return false;
        };
        f(row);
        entry.cache = None;
        true
    }

    /// The turn ended: nothing streams any more; calls still pending never ran.
    pub fn end_turn(&mut self) {
        for entry in self.entries.iter_mut().rev().take(16) {
            match &mut entry.kind {
                EntryKind::Assistant { streaming, .. } | EntryKind::Thinking { streaming, .. }
                    if *streaming =>
                {
                    *streaming = false;
                    entry.cache = None;
                }
                EntryKind::Tools { rows, .. } => {
                    for row in rows.iter_mut() {
                        if matches!(row.status, ToolRowStatus::Pending | ToolRowStatus::Running) {
                            row.status = ToolRowStatus::Cancelled;
                            entry.cache = None;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Rebuilds the transcript from a history (`/resume`, `/new`).
    pub fn replace_with_history(&mut self, items: &[Item]) {
        self.entries.clear();
        for item in items {
            self.commit(item);
        }
        self.end_turn();
    }

    /// How many entries were rendered (not served from cache) since the last call.
    pub fn take_render_count(&mut self) -> usize {
        std::mem::take(&mut self.rendered)
    }

    /// The lines to show in a `height`-row window `scroll` lines above the bottom.
    /// Returns the lines and the scroll actually used (clamped at the top).
    pub fn window(
        &mut self,
        width: u16,
        height: u16,
        scroll: usize,
    ) -> (Vec<Line<'static>>, usize) {
        let need = usize::from(height) + scroll;
        let theme = self.theme;
        // Walk up from the newest entry until the window is full: older entries are not
        // touched, so the cost does not depend on the transcript's length.
        let mut first = self.entries.len();
        let mut collected = 0;
        while first > 0 && collected < need {
            first -= 1;
            let entry = &mut self.entries[first];
            if !matches!(&entry.cache, Some((w, _)) if *w == width) {
                let lines = wrap::wrap_all(&render_entry(&entry.kind, &theme, width), width);
                entry.cache = Some((width, lines));
                self.rendered += 1;
            }
            collected += entry.cache.as_ref().map_or(0, |(_, lines)| lines.len());
        }
        let lines: Vec<&Line<'static>> = self.entries[first..]
            .iter()
            .filter_map(|e| e.cache.as_ref())
            .flat_map(|(_, lines)| lines.iter())
            .collect();
        let scroll = scroll.min(lines.len().saturating_sub(usize::from(height)));
        let end = lines.len() - scroll;
        let start = end.saturating_sub(usize::from(height));
        (
            lines[start..end].iter().map(|l| (*l).clone()).collect(),
            scroll,
        )
    }
}

/// How a system item shows: attached files by path, summaries by their first line.
fn system_note(text: &str) -> Option<String> {
    let first = text.lines().next().unwrap_or("");
    if let Some(rest) = first.strip_prefix("[File: ") {
        return Some(format!("attached {}", rest.trim_end_matches(']')));
    }
    if first.trim().is_empty() {
        return None;
    }
    Some(crate::tool_row::truncate(first, 100))
}

fn render_entry(kind: &EntryKind, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let mut lines = vec![Line::default()];
    match kind {
        EntryKind::User(text) => {
            for (i, line) in text.lines().enumerate() {
                let prefix = if i == 0 { "› " } else { "  " };
                lines.push(Line::from(vec![
                    Span::styled(prefix, theme.user()),
                    Span::styled(line.to_owned(), theme.user()),
                ]));
            }
        }
        EntryKind::Assistant { text, .. } => lines.extend(markdown::render(text, theme)),
        EntryKind::Thinking { text, streaming } => {
            let summary = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let label = if *streaming {
                "✻ thinking… "
            } else {
                "✻ thought: "
            };
            let room = usize::from(width).saturating_sub(label.chars().count() + 1);
            lines.push(Line::from(vec![
                Span::styled(label, theme.dim()),
                Span::styled(
                    crate::tool_row::truncate(&summary, room.max(1)),
                    theme.dim().patch(theme.italic()),
                ),
            ]));
        }
        EntryKind::Tools { rows, .. } => {
            for row in rows {
                lines.extend(row.render(theme, width));
            }
        }
        EntryKind::Alert { level, message } => {
            let (label, style) = match level {
                Level::Info => ("note", theme.info()),
                Level::Warn => ("warning", theme.warn()),
                Level::Error => ("error", theme.error()),
            };
            for (i, line) in message.lines().enumerate() {
                let prefix = if i == 0 {
                    format!("{label}: ")
                } else {
                    "  ".into()
                };
                lines.push(Line::from(vec![
                    Span::styled(prefix, style),
                    Span::raw(line.to_owned()),
                ]));
            }
        }
        EntryKind::Info(text) => {
            for line in text.lines() {
                lines.push(Line::styled(format!("· {line}"), theme.dim()));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use saki_engine::ToolResultStatus;

    fn ctx(call: &str) -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: call.into(),
            batch_id: "b1".into(),
            call_index: 0,
        }
    }

    fn filled(n: usize) -> Transcript {
        let mut t = Transcript::new(Theme::plain());
        for i in 0..n {
            t.commit(&Item::User {
                text: format!("prompt {i}"),
            });
        }
        t
    }

    #[test]
    fn a_frame_renders_only_what_changed_and_what_is_visible() {
        let mut t = filled(1_000);
        t.window(40, 10, 0);
        assert!(
            t.take_render_count() <= 10,
            "only the visible entries render"
        );
        t.window(40, 10, 0);
        assert_eq!(t.take_render_count(), 0, "an unchanged frame is all cache");
        t.text_delta("streaming");
        t.window(40, 10, 0);
        assert_eq!(t.take_render_count(), 1, "a delta re-renders its own entry");
        t.window(30, 10, 0);
        assert!(
            t.take_render_count() > 1,
            "a new width re-wraps what is visible"
        );
    }

    #[test]
    fn scrolling_is_clamped_at_the_top() {
        let mut t = filled(3);
        let (lines, scroll) = t.window(40, 4, 100);
        assert_eq!(scroll, 2, "6 lines in all, 4 visible");
        assert_eq!(lines[0].to_string(), "");
        assert_eq!(lines[1].to_string(), "› prompt 0");
    }

    #[test]
    fn streamed_text_is_finished_by_its_committed_item() {
        let mut t = Transcript::new(Theme::plain());
        t.thinking_delta("hmm ");
        t.text_delta("Hel");
        t.text_delta("lo");
        t.commit(&Item::Thinking {
            text: "hmm, fine".into(),
            signature: None,
        });
        t.commit(&Item::AssistantText {
            text: "Hello.".into(),
        });
        let kinds: Vec<&EntryKind> = t.kinds().collect();
        assert_eq!(
            kinds,
            vec![
                &EntryKind::Thinking {
                    text: "hmm, fine".into(),
                    streaming: false
                },
                &EntryKind::Assistant {
                    text: "Hello.".into(),
                    streaming: false
                },
            ]
        );
    }

    #[test]
    fn tool_rows_follow_their_calls_and_end_turn_closes_the_rest() {
        let mut t = Transcript::new(Theme::plain());
        for call in ["c1", "c2"] {
            t.commit(&Item::ToolCall {
                name: "shell".into(),
                arguments: r#"{"command":"ls"}"#.into(),
                signature: None,
                ctx: ctx(call),
            });
        }
        t.tool_started(&ctx("c1"));
        t.commit(&Item::ToolResult {
            name: "shell".into(),
            content: "denied by you".into(),
            status: ToolResultStatus::Denied,
            ctx: ctx("c1"),
        });
        t.end_turn();
        let Some(EntryKind::Tools { rows, .. }) = t.kinds().next() else {
            panic!("one tool group");
        };
        assert_eq!(t.len(), 1);
        assert_eq!(rows[0].status, ToolRowStatus::Denied);
        assert_eq!(rows[1].status, ToolRowStatus::Cancelled);
    }

    #[test]
    fn attached_files_show_by_path() {
        let mut t = Transcript::new(Theme::plain());
        t.commit(&Item::System {
            text: "[File: src/a.rs]\nfn a() {}".into(),
        });
        assert_eq!(
            t.kinds().next(),
            Some(&EntryKind::Info("attached src/a.rs".into()))
        );
    }
}
