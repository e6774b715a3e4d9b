//! A server's tool list, bounded.
//!
//! The server decides how many tools it lists and how large each one is; rmcp's own
//! `list_all_tools` follows every page it is given and keeps everything (100,000 tools
//! took 1.5 GB, and every request would offer them). Here the pages are read one at a
//! time and only what saki uses is kept: at most [`MAX_TOOLS`] offered tools, each with
//! its name (at most [`MAX_NAME_BYTES`]), its description (or title) cut to
//! [`crate::tool::MAX_DESCRIPTION_BYTES`], its input schema (at most
//! [`MAX_SCHEMA_BYTES`] as JSON, or the tool is left out) and its read-only hint. Every
//! tool left out is said in a note.

use crate::config::ServerConfig;
use rmcp::model::{PaginatedRequestParams, Tool, ToolAnnotations};
use rmcp::service::{RoleClient, ServiceError};
use rmcp::Peer;

/// Tools offered from one server at most. OpenAI takes at most 128 tools in a request,
/// and a model chooses worse among many: a server listing more is cut, with a warning.
pub const MAX_TOOLS: usize = 128;
/// Pages of a tool list read at most: a server may hand out cursors forever.
pub const MAX_PAGES: usize = 64;
/// The longest tool name kept, in bytes (MCP asks for at most 128 characters).
pub const MAX_NAME_BYTES: usize = 256;
/// The largest input schema kept, as JSON: it goes out with every request.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;

/// The tools to offer, and what was left out, for the person.
#[derive(Debug, Default)]
pub struct Listed {
    pub tools: Vec<Tool>,
    pub notes: Vec<String>,
}

/// Lists the tools of `peer` that `config` offers, bounded as the module says.
pub async fn list_tools(
    peer: &Peer<RoleClient>,
    config: &ServerConfig,
) -> Result<Listed, ServiceError> {
    let mut listed = Listed::default();
    let (mut dropped, mut past_cap) = (Vec::new(), 0usize);
    let mut cursor = None;
    for page_number in 0.. {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        for tool in page.tools {
            if !config.offers(&tool.name) {
                continue;
            }
            if listed.tools.len() == MAX_TOOLS {
                past_cap += 1;
                continue;
            }
            match bounded(tool) {
                Ok(tool) => listed.tools.push(tool),
                Err(why) => dropped.push(why),
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
        // Past the cap, or past the page bound: the rest is not read.
        if listed.tools.len() == MAX_TOOLS || page_number + 1 == MAX_PAGES {
            listed.notes.push(format!(
                "it lists more tools than saki reads (at most {MAX_TOOLS} tools or \
                 {MAX_PAGES} pages); only the first {} are offered",
                listed.tools.len()
            ));
            past_cap = 0;
            break;
        }
    }
    if past_cap > 0 {
        listed.notes.push(format!(
            "it lists {} tools; only the first {MAX_TOOLS} are offered",
            MAX_TOOLS + past_cap + dropped.len()
        ));
    }
    const NAMED: usize = 5;
    if !dropped.is_empty() {
        let more = dropped.len().saturating_sub(NAMED);
        let mut note = format!(
            "left out: {}",
            dropped[..dropped.len().min(NAMED)].join("; ")
        );
        if more > 0 {
            note.push_str(&format!("; and {more} more"));
        }
        listed.notes.push(note);
    }
    Ok(listed)
}

/// `tool` with only what saki uses, each part bounded; why it is left out otherwise.
pub fn bounded(tool: Tool) -> Result<Tool, String> {
    if tool.name.len() > MAX_NAME_BYTES {
        let start = saki_tools::common::prefix_at_boundary(&tool.name, 40);
        return Err(format!(
            "a tool whose name is longer than {MAX_NAME_BYTES} bytes (`{start}…`)"
        ));
    }
    let schema_bytes =
        serde_json::to_vec(tool.input_schema.as_ref()).map_or(usize::MAX, |v| v.len());
    if schema_bytes > MAX_SCHEMA_BYTES {
        return Err(format!(
            "`{}`, whose input schema is larger than {} KiB",
            tool.name,
            MAX_SCHEMA_BYTES / 1024
        ));
    }
    let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
    let description = crate::tool::description_of(&tool);
    let mut kept = Tool::new(tool.name, description, tool.input_schema);
    if let Some(read_only) = read_only {
        kept = kept.with_annotations(ToolAnnotations::new().read_only(read_only));
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn schema(value: serde_json::Value) -> Arc<serde_json::Map<String, serde_json::Value>> {
        match value {
            serde_json::Value::Object(map) => Arc::new(map),
            _ => Arc::default(),
        }
    }

    #[test]
    fn only_what_saki_uses_is_kept_and_it_is_bounded() {
        let mut tool = Tool::new("t", "d".repeat(100_000), schema(json!({"type": "object"})));
        tool.title = Some("x".repeat(100_000));
        tool.output_schema = Some(schema(json!({"big": "y".repeat(100_000)})));
        tool.annotations = Some(ToolAnnotations::with_title("z".repeat(100_000)).read_only(true));
        let kept = bounded(tool).unwrap();
        assert!(
            kept.description.as_deref().unwrap().len() <= crate::tool::MAX_DESCRIPTION_BYTES + 3
        );
        assert!(kept.title.is_none() && kept.output_schema.is_none());
        let annotations = kept.annotations.unwrap();
        assert_eq!(annotations.read_only_hint, Some(true));
        assert!(annotations.title.is_none());
    }

    #[test]
    fn a_huge_name_or_schema_leaves_the_tool_out() {
        let long = Tool::new("n".repeat(300), "d", schema(json!({})));
        assert!(bounded(long).unwrap_err().contains("longer than 256 bytes"));
        let big = Tool::new(
            "big",
            "d",
            schema(json!({"type": "object", "description": "s".repeat(40_000)})),
        );
        assert!(bounded(big).unwrap_err().contains("`big`"));
    }
}
