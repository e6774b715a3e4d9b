//! The lean tool set's narrower tools: a built-in tool with some of its optional fields
//! neither offered nor used. Small local models get this set (see `tool_server`).
//!
//! - `shell` without `background`: the lean set offers no `shell_output` or `shell_kill`,
//!   so nothing could read or stop such a command; a call asking for it runs in the
//!   foreground.
//! - `read_file` without `limit`: a small model passes one by habit (`"limit": 1`, `10`)
//!   and then answers from the fragment (the total of a column read from its header
//!   line, the functions of a file counted from its first ten lines). Without it a read
//!   returns the whole file up to the read cap, whose note says which `offset` reads on.

use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde_json::Value;
use std::sync::Arc;

/// `tool` as the lean set offers it: the same tool, or a narrower one.
pub fn narrowed(tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
    match tool.name() {
        "shell" => Arc::new(Narrowed {
            tool,
            dropped: &["background"],
            description: None,
        }),
        "read_file" => Arc::new(Narrowed {
            tool,
            dropped: &["limit"],
            description: Some(
                "Read a text file, or view an image (PNG, JPEG, GIF, WebP). Optional offset \
                 (first line, 1-based) to read on in a large file.",
            ),
        }),
        _ => tool,
    }
}

/// A tool whose `dropped` fields are left out of its schema and out of any call that
/// passes them anyway.
struct Narrowed {
    tool: Arc<dyn Tool>,
    dropped: &'static [&'static str],
    description: Option<&'static str>,
}

#[async_trait::async_trait]
impl Tool for Narrowed {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn description(&self) -> &str {
        self.description.unwrap_or(self.tool.description())
    }
    fn input_schema(&self) -> Value {
        let mut schema = self.tool.input_schema();
        if let Some(properties) = schema["properties"].as_object_mut() {
            for field in self.dropped {
                properties.remove(*field);
            }
        }
        schema
    }
    fn rank(&self) -> u32 {
        self.tool.rank()
    }
    fn read_only(&self) -> bool {
        self.tool.read_only()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut args: Value = serde_json::from_str(input).unwrap_or_default();
        let mut removed = false;
        if let Some(fields) = args.as_object_mut() {
            for field in self.dropped {
                removed |= fields.remove(*field).is_some();
            }
        }
        if removed {
            self.tool.execute(&args.to_string(), ctx).await
        } else {
            self.tool.execute(input, ctx).await
        }
    }
}
