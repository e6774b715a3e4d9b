//! `saki exec --output-last-message FILE`: the run's final assistant message, written
//! atomically (a reader sees the old file or the whole new one, never half) once the run
//! has succeeded. A failed run leaves FILE as it was. A FILE that exists and is not a
//! regular file (a FIFO, a device such as `/dev/stdout`, a symlink) is written in place,
//! through the link: renaming a new file over it would replace the pipe, the device or
//! the link with a regular file.

use saki_llm_worker::{Item, WorkerEvent};
use std::path::Path;

/// The text of the latest assistant response that had text: text blocks of one response
/// are joined; a block after a tool result (or a new prompt) starts a new response.
#[derive(Debug, Default)]
pub struct LastMessage {
    text: Option<String>,
    /// The next text block begins a new message.
    fresh: bool,
}

impl LastMessage {
    pub fn observe(&mut self, event: &WorkerEvent) {
        match event {
            WorkerEvent::Committed(item) => self.item(item),
            // An accepted speculation's items, in order.
            WorkerEvent::CommittedMany(items) => items.iter().for_each(|i| self.item(i)),
            _ => {}
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::AssistantText { text } => match &mut self.text {
                Some(last) if !self.fresh => {
                    last.push_str("\n\n");
                    last.push_str(text);
                }
                _ => {
                    self.text = Some(text.clone());
                    self.fresh = false;
                }
            },
            Item::ToolResult { .. } | Item::User { .. } | Item::System { .. } => self.fresh = true,
            Item::Image { .. } => self.fresh = true,
            Item::Thinking { .. } | Item::ToolCall { .. } => {}
        }
    }

    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// Writes `text` to `path`, atomically when it is a regular file or does not exist yet,
/// in place otherwise; `Err` names the file.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    let mut contents = text.to_owned();
    if !contents.is_empty() && !contents.ends_with('\n') {
        contents.push('\n');
    }
    let special = std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file());
    let written = if special {
        write_in_place(path, contents.as_bytes())
    } else {
        saki_tools::atomic::write_atomic(path, contents.as_bytes())
    };
    written.map_err(|e| {
        format!(
            "--output-last-message {}: cannot write it: {e}",
            saki_tools::sanitize::sanitize(&path.display().to_string())
        )
    })
}

/// Opens what `path` is (following a link) for writing, without creating anything, and
/// writes `bytes` to it. Truncating is what a shell's `>` does; a FIFO or a terminal
/// ignores it.
fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.flush()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use saki_llm_worker::{ToolExecutionContext, ToolResultStatus};

    fn text(t: &str) -> WorkerEvent {
        WorkerEvent::Committed(Item::AssistantText { text: t.into() })
    }

    fn result() -> Item {
        Item::ToolResult {
            name: "ls".into(),
            content: "a".into(),
            status: ToolResultStatus::Success,
            ctx: ToolExecutionContext {
                call_id: "c".into(),
                batch_id: "b".into(),
                call_index: 0,
            },
        }
    }

    #[test]
    fn the_last_response_with_text_is_the_message() {
        let mut last = LastMessage::default();
        assert_eq!(last.text(), None);
        last.observe(&text("Let me look."));
        last.observe(&WorkerEvent::Committed(result()));
        last.observe(&text("It has two files."));
        last.observe(&text("Both are empty."));
        assert_eq!(last.text(), Some("It has two files.\n\nBoth are empty."));
        // A response with no text after more tool work keeps the earlier message.
        last.observe(&WorkerEvent::Committed(result()));
        assert_eq!(last.text(), Some("It has two files.\n\nBoth are empty."));
        last.observe(&WorkerEvent::CommittedMany(vec![
            Item::user("next"),
            Item::AssistantText {
                text: "Speculated answer.".into(),
            },
        ]));
        assert_eq!(last.text(), Some("Speculated answer."));
    }

    #[test]
    fn the_file_is_written_whole_with_a_final_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/last.txt");
        write(&path, "answer").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "answer\n");
        write(&path, "").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        let err = write(dir.path(), "x").unwrap_err();
        assert!(err.contains("cannot write it"), "{err}");
    }

    #[test]
    fn a_link_a_fifo_or_a_device_stays_what_it_is() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        // A link to a regular file: the file it leads to gets the text.
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write(&link, "answer").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "answer\n");
        // A link to a device.
        let null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        write(&null, "answer").unwrap();
        assert!(std::fs::symlink_metadata(&null).unwrap().is_symlink());
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // A FIFO: a reader gets the text, and it is still a FIFO.
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write(&fifo, "answer").unwrap();
        assert_eq!(reader.join().unwrap(), "answer\n");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
}
