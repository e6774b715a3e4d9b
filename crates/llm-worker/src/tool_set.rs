//! [`SharedTools`]: the tool set a [`crate::Worker`] offers, open to tools that arrive
//! while the session runs (an MCP server that connects after the first prompt).
//!
//! Every request reads one snapshot and runs its calls against that snapshot, so a
//! batch never sees a half-updated set. The list stays sorted (rank, then name, see
//! [`ToolServer::definitions`]), so a change moves the request prefix once, at the
//! request after it, and never reorders what was there.

use crate::tool::{Tool, ToolServer, ToolServerError};
use std::sync::{Arc, RwLock};

/// A handle to a tool set; clones share it.
#[derive(Clone, Default)]
pub struct SharedTools(Arc<RwLock<Arc<ToolServer>>>);

impl SharedTools {
    pub fn new(server: ToolServer) -> Self {
        Self::from_arc(Arc::new(server))
    }

    pub fn from_arc(server: Arc<ToolServer>) -> Self {
        Self(Arc::new(RwLock::new(server)))
    }

    /// The set as it is now; later changes do not touch it.
    pub fn snapshot(&self) -> Arc<ToolServer> {
        match self.0.read() {
            Ok(guard) => Arc::clone(&guard),
            // A writer panicked mid-swap: the old Arc is still whole.
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The definitions offered now (see [`ToolServer::definitions`]).
    pub fn definitions(&self) -> Vec<saki_llm_client::ToolDefinition> {
        self.snapshot().definitions()
    }

    /// Replaces the whole set.
    pub fn replace(&self, server: ToolServer) {
        self.update(|s| {
            *s = server;
            Ok(())
        })
        .unwrap_or(());
    }

    /// Adds `tools` together (a server's tools appear at once or not at all): nothing is
    /// added when one name is taken already.
    pub fn register_all(&self, tools: Vec<Arc<dyn Tool>>) -> Result<(), ToolServerError> {
        self.update(|server| {
            for tool in &tools {
                if server.get(tool.name()).is_some() {
                    return Err(ToolServerError::Duplicate(tool.name().to_owned()));
                }
            }
            for tool in tools {
                server.register(tool)?;
            }
            Ok(())
        })
    }

    /// Removes the tools named `names`; returns how many were there.
    pub fn remove(&self, names: &[String]) -> usize {
        let mut removed = 0;
        let _ = self.update(|server| {
            removed = server.remove(names);
            Ok(())
        });
        removed
    }

    /// Copy-on-write: snapshots already taken keep the old set.
    fn update(
        &self,
        change: impl FnOnce(&mut ToolServer) -> Result<(), ToolServerError>,
    ) -> Result<(), ToolServerError> {
        let mut guard = match self.0.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut next = ToolServer::clone(&guard);
        change(&mut next)?;
        *guard = Arc::new(next);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tool::{ToolError, ToolExecutionContext, ToolOutput};

    struct Named(&'static str);

    #[async_trait::async_trait]
    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            ""
        }
        fn input_schema(&self) -> serde_json::Value {
            serde_json::json!({"type": "object"})
        }
        async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::default())
        }
    }

    #[test]
    fn snapshots_keep_their_set_and_additions_come_whole_and_sorted() {
        let mut base = ToolServer::new();
        base.register(Arc::new(Named("read_file"))).unwrap();
        let shared = SharedTools::new(base);
        let before = shared.snapshot();
        shared
            .register_all(vec![
                Arc::new(Named("mcp__b__x")),
                Arc::new(Named("mcp__a__y")),
            ])
            .unwrap();
        assert_eq!(before.names(), ["read_file"]);
        assert_eq!(
            shared.snapshot().names(),
            ["mcp__a__y", "mcp__b__x", "read_file"]
        );
        let clash = shared.register_all(vec![
            Arc::new(Named("mcp__c__z")),
            Arc::new(Named("read_file")),
        ]);
        assert!(clash.is_err());
        assert!(
            shared.snapshot().get("mcp__c__z").is_none(),
            "all or nothing"
        );
        assert_eq!(
            shared.remove(&["mcp__a__y".to_owned(), "gone".to_owned()]),
            1
        );
        assert_eq!(shared.snapshot().names(), ["mcp__b__x", "read_file"]);
    }
}
