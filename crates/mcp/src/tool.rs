//! One MCP tool as a saki [`Tool`]: `mcp__<server>__<tool>` with the server's schema.
//!
//! A call is bounded by the server's `tool_timeout_sec`. When the Worker stops waiting
//! (the person cancelled, or the timeout passed) it drops the call's future, and rmcp
//! then sends the server `notifications/cancelled` for the request. A server that
//! crashed, or answers with an error, gives the call an error result: the session goes on.
//! Images in a result reach the model as `read_file`'s do ([`crate::convert`]).

use crate::config::ApprovalSetting;
use crate::connect::{with_report, Process};
use crate::convert::{self, Converted};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, ServiceError};
use rmcp::Peer;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The longest tool description offered to the model, in bytes: descriptions go out
/// with every request, and a server may write pages of one.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;

/// The tool's description (or its title), cut to [`MAX_DESCRIPTION_BYTES`] on a
/// character boundary; a cut one ends in `…`.
pub(crate) fn description_of(tool: &rmcp::model::Tool) -> String {
    let full = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or("");
    let kept = saki_tools::common::prefix_at_boundary(full, MAX_DESCRIPTION_BYTES);
    if kept.len() < full.len() {
        format!("{}…", kept.trim_end())
    } else {
        full.to_owned()
    }
}

/// What the approval policy needs to know about an MCP tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// The server's name in config.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    /// The server annotates the tool `readOnlyHint: true`.
    pub read_only_hint: bool,
    /// The server's `approval` setting.
    pub approval: ApprovalSetting,
    /// The server comes from the global config or a trusted workspace.
    pub trusted: bool,
}

/// A connected server as its tools reach it.
pub(crate) struct ServerLink {
    pub name: String,
    pub peer: Peer<RoleClient>,
    pub tool_timeout: Duration,
    pub process: Option<Arc<Process>>,
}

pub struct McpTool {
    exposed: String,
    description: String,
    schema: Value,
    info: ToolInfo,
    link: Arc<ServerLink>,
}

impl McpTool {
    pub(crate) fn new(
        exposed: String,
        tool: &rmcp::model::Tool,
        info: ToolInfo,
        link: Arc<ServerLink>,
    ) -> Self {
        let description = description_of(tool);
        let mut schema = Value::Object(tool.input_schema.as_ref().clone());
        // Every protocol wants an object schema; some servers leave out the type.
        if let Value::Object(map) = &mut schema {
            map.entry("type")
                .or_insert_with(|| Value::String("object".into()));
        }
        Self {
            exposed,
            description,
            schema,
            info,
            link,
        }
    }

    pub fn info(&self) -> &ToolInfo {
        &self.info
    }

    /// The result as the model reads it. Images are decoded (and maybe scaled down) on
    /// the blocking pool; should that panic, they are notes and the call still succeeds.
    async fn convert(&self, result: CallToolResult) -> Converted {
        if !convert::has_images(&result) {
            return convert::convert(&result, &self.exposed);
        }
        let result = Arc::new(result);
        let (shared, name) = (Arc::clone(&result), self.exposed.clone());
        match tokio::task::spawn_blocking(move || convert::convert(&shared, &name)).await {
            Ok(converted) => converted,
            Err(e) => {
                tracing::error!(tool = %self.exposed, "reading an MCP image failed: {e}");
                convert::convert_without_images(&result, &self.exposed, "reading it failed")
            }
        }
    }

    async fn failure(&self, e: ServiceError) -> ToolError {
        let server = &self.link.name;
        let closed = matches!(
            e,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        );
        if let Some(process) = self.link.process.as_deref().filter(|_| closed) {
            // Crashed: let it finish ending, so the result says how it ended.
            process.settle().await;
        }
        ToolError::Failed(match e {
            ServiceError::McpError(error) => {
                format!(
                    "the MCP server `{server}` refused the call: {}",
                    error.message
                )
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => with_report(
                format!(
                    "the MCP server `{server}` is not running (it closed the connection), so \
                     `{}` did not run to the end; its other tools will fail the same way",
                    self.info.tool
                ),
                self.link.process.as_deref(),
            ),
            other => format!("the call to the MCP server `{server}` failed: {other}"),
        })
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.exposed
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    async fn execute(
        &self,
        input_json: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = match serde_json::from_str::<Value>(input_json) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(ToolError::InvalidInput(format!(
                    "expected a JSON object, got {other}"
                )))
            }
            Err(e) => return Err(ToolError::InvalidInput(e.to_string())),
        };
        let params = CallToolRequestParams::new(self.info.tool.clone()).with_arguments(arguments);
        let call = self.link.peer.call_tool(params);
        // On timeout the call future is dropped, which cancels the request server-side.
        let result = match tokio::time::timeout(self.link.tool_timeout, call).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => return Err(self.failure(e).await),
            Err(_) => {
                return Err(ToolError::Failed(format!(
                    "the MCP server `{}` did not answer within {} s (tool_timeout_sec); the \
                     call was cancelled",
                    self.link.name,
                    self.link.tool_timeout.as_secs_f64()
                )))
            }
        };
        let converted = self.convert(result).await;
        if converted.is_error {
            return Err(ToolError::Failed(converted.text));
        }
        let mut output =
            ToolOutput::new(converted.text).with_summary(format!("MCP {}", self.link.name));
        output.images = converted.images;
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tool(description: &str) -> rmcp::model::Tool {
        serde_json::from_value(serde_json::json!({
            "name": "t",
            "description": description,
            "inputSchema": {"type": "object"}
        }))
        .unwrap()
    }

    #[test]
    fn long_descriptions_are_cut_on_a_character_boundary() {
        assert_eq!(description_of(&tool("Reads a file.")), "Reads a file.");
        let exact = "x".repeat(MAX_DESCRIPTION_BYTES);
        assert_eq!(description_of(&tool(&exact)), exact);

        let long = description_of(&tool(&"x".repeat(100_000)));
        assert_eq!(long, format!("{}…", "x".repeat(MAX_DESCRIPTION_BYTES)));

        // Two-byte characters, with the limit falling inside one.
        let accented = format!("a{}", "é".repeat(MAX_DESCRIPTION_BYTES));
        let cut = description_of(&tool(&accented));
        let body = cut.strip_suffix('…').unwrap();
        assert!(body.len() <= MAX_DESCRIPTION_BYTES && accented.starts_with(body));
        assert_eq!(body.len(), MAX_DESCRIPTION_BYTES - 1);
    }

    #[test]
    fn the_title_stands_in_for_a_missing_description() {
        let titled: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "t",
            "title": "Search the docs",
            "inputSchema": {"type": "object"}
        }))
        .unwrap();
        assert_eq!(description_of(&titled), "Search the docs");
    }
}
