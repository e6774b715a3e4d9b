//! Tools whose work is blocking file-system calls (`read_file`, `write_file`, `edit`,
//! `ls`, …) run on tokio's blocking pool: the calls of one batch then run in parallel,
//! and a slow disk or network mount never holds a runtime thread (the stream of another
//! request, the UI, a cancel keep going). A call cancelled while it runs finishes its
//! (short) work on the pool: a write then lands whole, never half.

use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use std::sync::Arc;

/// Built-in tools that do not block a runtime thread: `shell` waits on its process
/// asynchronously, `lsp` on its language server, `glob` and `grep` walk on the
/// blocking pool themselves. Every other built-in tool runs through [`execute`] (see
/// [`crate::capped::wrap`]).
pub const ASYNC_TOOLS: &[&str] = &["shell", "glob", "grep", "web_fetch", "lsp"];

/// `inner.execute(input, ctx)`, run on tokio's blocking pool (inline outside a runtime).
pub async fn execute(
    inner: &Arc<dyn Tool>,
    input: &str,
    ctx: ToolExecutionContext,
) -> Result<ToolOutput, ToolError> {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return inner.execute(input, ctx).await;
    };
    let (inner, input) = (Arc::clone(inner), input.to_owned());
    // The future is driven on a blocking-pool thread, inside the runtime's context (a
    // tool may still use tokio there).
    let job = tokio::task::spawn_blocking(move || handle.block_on(inner.execute(&input, ctx)));
    match job.await {
        Ok(result) => result,
        // A panic stays the call's panic: the batch turns it into the call's error.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(ToolError::Failed(format!("the call was stopped: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::Value;
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    /// A tool that blocks its thread until `parties` calls are inside it at once (or a
    /// generous time has passed), and says whether they all met.
    struct Rendezvous {
        parties: usize,
        inside: Mutex<usize>,
        all_in: Condvar,
    }

    #[async_trait::async_trait]
    impl Tool for Rendezvous {
        fn name(&self) -> &str {
            "rendezvous"
        }
        fn description(&self) -> &str {
            "blocks until every call is in"
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        async fn execute(
            &self,
            _input: &str,
            _ctx: ToolExecutionContext,
        ) -> Result<ToolOutput, ToolError> {
            let mut inside = self.inside.lock().unwrap();
            *inside += 1;
            self.all_in.notify_all();
            // Not a timing assertion: only a way out when the calls run one by one.
            let (inside, _) = self
                .all_in
                .wait_timeout_while(inside, Duration::from_secs(5), |n| *n < self.parties)
                .unwrap();
            Ok(ToolOutput::new(format!("met {}", *inside)))
        }
    }

    fn ctx(i: usize) -> ToolExecutionContext {
        ToolExecutionContext {
            call_id: format!("c{i}"),
            batch_id: "b".into(),
            call_index: i,
        }
    }

    /// One runtime thread, three calls polled together as a batch runs them: each call
    /// blocks its thread until all three are in, so they can only meet when they run on
    /// threads of their own.
    #[tokio::test(flavor = "current_thread")]
    async fn blocking_calls_of_one_batch_run_in_parallel() {
        let tool = crate::capped::wrap(
            Arc::new(Rendezvous {
                parties: 3,
                inside: Mutex::new(0),
                all_in: Condvar::new(),
            }),
            usize::MAX,
        );
        let (a, b, c) = tokio::join!(
            tool.execute("{}", ctx(0)),
            tool.execute("{}", ctx(1)),
            tool.execute("{}", ctx(2)),
        );
        for out in [a, b, c] {
            assert_eq!(out.unwrap().content, "met 3");
        }
    }

    struct Panics;

    #[async_trait::async_trait]
    impl Tool for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn description(&self) -> &str {
            "panics"
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
            panic!("boom")
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_stays_the_calls_panic() {
        let tool = crate::capped::wrap(Arc::new(Panics), usize::MAX);
        let call = tokio::spawn(async move { tool.execute("{}", ctx(0)).await });
        assert!(call.await.unwrap_err().is_panic());
    }
}
