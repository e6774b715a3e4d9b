//! Files re-read into history after a summary (`[Auto-read file: <path>]`): a snapshot
//! names the files the work is on, but their contents went with the summarized history.

use crate::compaction::item_tokens;
use crate::file_ref::FsView;
use saki_llm_worker::Item;

/// How a re-read file's item starts.
pub const AUTO_READ_PREFIX: &str = "[Auto-read file: ";

/// The path of a file's system item: an `@path` attachment (`[File: <path>]`) or an
/// earlier re-read (`[Auto-read file: <path>]`), from its first line.
pub fn file_item_path(text: &str) -> Option<&str> {
    let first = text.lines().next()?;
    first
        .strip_prefix("[File: ")
        .or_else(|| first.strip_prefix(AUTO_READ_PREFIX))?
        .strip_suffix(']')
        .filter(|p| !p.is_empty())
}

/// Files worth re-reading after `history[..split]` is summarized, newest first, each once:
/// files the session's tools read or wrote, and files whose contents sat in the summarized
/// part as items of their own (attached with `@path`, or re-read by an earlier summary).
/// A file item in the kept tail is still there and is not offered.
pub fn candidates(history: &[Item], split: usize) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for (i, item) in history.iter().enumerate().rev() {
        let path = match item {
            Item::ToolCall {
                name, arguments, ..
            } if matches!(name.as_str(), "read_file" | "write_file" | "edit") => {
                serde_json::from_str::<serde_json::Value>(arguments)
                    .ok()
                    .and_then(|v| v.get("path")?.as_str().map(str::to_owned))
            }
            Item::System { text } if i < split => file_item_path(text).map(str::to_owned),
            _ => None,
        };
        if let Some(path) = path {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// Re-reads the `candidates` the snapshot names, in order, as long as they fit in `budget`
/// tokens. A file that is gone or unreadable is skipped.
pub async fn reread(
    fs: &FsView,
    candidates: &[String],
    snapshot: &str,
    budget: usize,
) -> Vec<(String, Item)> {
    let mut used = 0;
    let mut read = Vec::new();
    for path in candidates {
        if !snapshot.contains(path.as_str()) {
            continue;
        }
        let Ok(body) = fs.read_text(path, budget.saturating_sub(used) * 4).await else {
            continue;
        };
        let item = Item::system(format!("{AUTO_READ_PREFIX}{path}]\n{body}"));
        let cost = item_tokens(&item);
        if used + cost > budget {
            continue;
        }
        used += cost;
        read.push((path.clone(), item));
    }
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use saki_llm_worker::ToolExecutionContext;
    use serde_json::json;

    fn call(name: &str, path: &str) -> Item {
        Item::ToolCall {
            name: name.into(),
            arguments: json!({ "path": path }).to_string(),
            signature: None,
            ctx: ToolExecutionContext {
                call_id: path.into(),
                batch_id: "b".into(),
                call_index: 0,
            },
        }
    }

    #[test]
    fn file_items_name_their_path() {
        assert_eq!(
            file_item_path("[File: src/a.rs]\nfn a() {}"),
            Some("src/a.rs")
        );
        assert_eq!(file_item_path("[Auto-read file: b.rs]\nx"), Some("b.rs"));
        assert_eq!(file_item_path("[File: ]\nx"), None);
        assert_eq!(file_item_path("[unresolved file ref: c.rs]"), None);
        assert_eq!(file_item_path("a note"), None);
    }

    #[test]
    fn candidates_are_newest_first_and_unique() {
        let h = vec![
            call("read_file", "a.rs"),
            call("edit", "b.rs"),
            call("grep", "c.rs"),
            call("write_file", "a.rs"),
        ];
        assert_eq!(candidates(&h, 0), vec!["a.rs", "b.rs"]);
    }

    #[test]
    fn attached_files_are_candidates_only_when_summarized() {
        let h = vec![
            Item::user("look at @old.rs"),
            Item::system("[File: old.rs]\nfn old() {}"),
            call("read_file", "tool.rs"),
            Item::user("and @new.rs"),
            Item::system("[File: new.rs]\nfn new() {}"),
        ];
        assert_eq!(candidates(&h, 3), vec!["tool.rs", "old.rs"]);
        assert_eq!(candidates(&h, 5), vec!["new.rs", "tool.rs", "old.rs"]);
    }
}
