//! How every built-in tool runs ([`wrap`]): off the runtime threads when its work is
//! blocking file-system calls ([`crate::blocking`]), and with the last word on output
//! size: whatever a tool returns, the model sees at most the workspace's output cap
//! (`tool_output_max_bytes`). Tools that can cut more usefully (`read_file` by lines,
//! `shell` head and tail) do so below the cap themselves; this catches the rest (`grep`,
//! `ls`, `glob` lists of long lines) with a notice.

use crate::common::prefix_at_boundary;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde_json::Value;
use std::sync::Arc;

pub struct Capped {
    inner: Arc<dyn Tool>,
    cap: usize,
    /// Run on the blocking pool (every tool but [`crate::blocking::ASYNC_TOOLS`]).
    blocking: bool,
}

/// `tool` as a built-in runs: its output capped at `cap` bytes, and on the blocking pool
/// unless it is one of [`crate::blocking::ASYNC_TOOLS`].
pub fn wrap(tool: Arc<dyn Tool>, cap: usize) -> Arc<dyn Tool> {
    let blocking = !crate::blocking::ASYNC_TOOLS.contains(&tool.name());
    Arc::new(Capped {
        inner: tool,
        cap,
        blocking,
    })
}

/// `tool` with its output capped at `cap` bytes, run where it is polled: for tools that
/// only await (an MCP call), which the blocking pool would only slow down.
pub fn wrap_async(tool: Arc<dyn Tool>, cap: usize) -> Arc<dyn Tool> {
    Arc::new(Capped {
        inner: tool,
        cap,
        blocking: false,
    })
}

/// Room for the notices that tools which cut their own output add past the cap ("use
/// offset=… to read more", the shell's exit code): those outputs are left whole.
const NOTICE_ROOM: usize = 512;

/// `content` cut at `cap` bytes (on a line end when one is near), with a notice.
pub fn cap_output(content: String, cap: usize) -> String {
    if content.len() <= cap.saturating_add(NOTICE_ROOM) {
        return content;
    }
    let head = prefix_at_boundary(&content, cap);
    let head = match head.rfind('\n') {
        Some(end) if end > cap / 2 => &head[..=end],
        _ => head,
    };
    format!(
        "{head}\n[...truncated: {} of {} bytes shown; narrow the request to see the rest]",
        head.len(),
        content.len()
    )
}

#[async_trait::async_trait]
impl Tool for Capped {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut output = if self.blocking {
            crate::blocking::execute(&self.inner, input, ctx).await?
        } else {
            self.inner.execute(input, ctx).await?
        };
        output.content = cap_output(std::mem::take(&mut output.content), self.cap);
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_is_cut_on_a_line_with_a_notice() {
        assert_eq!(cap_output("short".into(), 1024), "short");
        let lines: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let cut = cap_output(lines.clone(), 1024);
        assert!(cut.len() < 1024 + 100);
        let within = "x".repeat(1024 + NOTICE_ROOM);
        assert_eq!(cap_output(within.clone(), 1024), within);
        assert!(cut.contains("\nline 1"));
        assert!(cut.ends_with("bytes shown; narrow the request to see the rest]"));
        let before_notice = cut.split("\n[...truncated").next().unwrap();
        assert!(before_notice.ends_with('\n'), "{before_notice:?}");
    }
}
