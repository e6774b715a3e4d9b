//! The Tool API: every tool call runs with a [`ToolExecutionContext`] telling it which
//! response (batch) it belongs to and where in that response it stands, so a tool that
//! needs ordering can wait on its own; the Worker keeps no scheduling policy.

use crate::schema::Checked;
use saki_llm_client::ToolDefinition;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolExecutionContext {
    /// The provider's (or a generated) tool call id.
    pub call_id: String,
    /// Identifies the assistant response whose calls form one batch.
    pub batch_id: String,
    /// The call's position in that response, from 0, in the model's order.
    pub call_index: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: String,
    /// A short one-line description for people (e.g. "42 lines"); optional.
    pub summary: Option<String>,
    /// Images the model is shown with the result (`read_file` of an image); each is
    /// committed right after the result as an [`crate::Item::Image`].
    pub images: Vec<crate::image::NamedImage>,
}

impl ToolOutput {
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            summary: None,
            images: Vec::new(),
        }
    }

    pub fn with_image(mut self, path: impl Into<String>, image: crate::image::ImageRef) -> Self {
        self.images.push(crate::image::NamedImage {
            path: path.into(),
            image,
        });
        self
    }

    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    Failed(String),
}

#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn input_schema(&self) -> serde_json::Value;
    /// Where the tool stands in the list offered to the model: lower first, ties by name.
    /// Small models pick early tools more often, so reading and searching come before
    /// writing (see [`ToolServer::definitions`]).
    fn rank(&self) -> u32 {
        u32::MAX
    }
    /// Whether the tool only looks: it changes nothing, so calls to it between two
    /// identical calls cannot change what the second one would return.
    fn read_only(&self) -> bool {
        false
    }
    async fn execute(
        &self,
        input_json: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolServerError {
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
}

/// Why a call's arguments cannot be used; the message is what the model reads instead of
/// a result, so it can retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    #[error("invalid JSON arguments for `{name}`: {error}. The arguments were: {arguments}")]
    InvalidJson {
        name: String,
        arguments: String,
        error: String,
    },
    #[error("unknown tool `{name}`; {suggestion}available tools: {available}")]
    UnknownTool {
        name: String,
        /// Empty, or "did you mean" the one offered tool the arguments fit, as a call, or
        /// else the one whose description uses the invented name's verb.
        suggestion: String,
        available: String,
    },
    #[error("invalid arguments for `{name}`: expected a JSON object, got {arguments}")]
    NotAnObject { name: String, arguments: String },
    /// A field the schema requires is missing or of a type no lossless coercion fits.
    #[error("invalid arguments for `{name}`: {problem}")]
    Schema { name: String, problem: String },
}

/// The set of tools offered to the model, listed by [`Tool::rank`] then name, so the tool
/// list (and so the request prefix) is byte-stable.
#[derive(Clone, Default)]
pub struct ToolServer {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolServer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolServerError> {
        let name = tool.name().to_owned();
        if self.tools.contains_key(&name) {
            return Err(ToolServerError::Duplicate(name));
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// Removes the tools named `names`; returns how many were registered.
    pub fn remove(&mut self, names: &[String]) -> usize {
        names
            .iter()
            .filter(|name| self.tools.remove(name.as_str()).is_some())
            .count()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Names in the order the model is offered the tools.
    pub fn names(&self) -> Vec<&str> {
        self.ordered().into_iter().map(|t| t.name()).collect()
    }

    fn ordered(&self) -> Vec<&Arc<dyn Tool>> {
        let mut tools: Vec<&Arc<dyn Tool>> = self.tools.values().collect();
        // The map is sorted by name, and the sort is stable.
        tools.sort_by_key(|t| t.rank());
        tools
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Definitions by rank, then name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.ordered()
            .into_iter()
            .map(|t| ToolDefinition {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.input_schema(),
            })
            .collect()
    }

    /// For a call to a tool that does not exist: the one offered tool whose schema its
    /// arguments fit exactly (every required field, no other), written as the call to
    /// make. Small models invent a name (`run`, `append_line`) but often the right
    /// arguments, and copy a call they are shown better than they follow a list.
    ///
    /// Failing that, the one tool whose description uses the verb the invented name
    /// starts with, quoting it with the arguments it takes (see [`crate::invented`]).
    ///
    /// A call is written out for a tool that changes things only when the invented
    /// name's verb also leads to it: `print {"path", "content"}` fits `write_file`, and
    /// a model that copies that call overwrites the program it was asked to run.
    fn suggest_for(&self, invented: &str, input: &serde_json::Value) -> String {
        let tools = self.ordered();
        let described = tools.iter().map(|t| (t.name(), t.description()));
        let by_verb = crate::invented::tool_for_verb(invented, described);
        let mut fitting = tools
            .iter()
            .filter(|t| crate::schema::fits(&t.input_schema(), input));
        if let (Some(tool), None) = (fitting.next(), fitting.next()) {
            if tool.read_only() || by_verb.is_some_and(|(name, _)| name == tool.name()) {
                return format!(
                    "did you mean `{name}`? Call it as {{\"name\": \"{name}\", \"arguments\": {input}}}; ",
                    name = tool.name()
                );
            }
        }
        let Some((name, sentence)) = by_verb else {
            return String::new();
        };
        match self
            .get(name)
            .and_then(|t| crate::schema::shape_of(&t.input_schema()))
        {
            Some(shape) => format!(
                "`{name}` does that (\"{sentence}\"); call it as {{\"name\": \"{name}\", \"arguments\": {shape}}}; "
            ),
            None => format!("`{name}` does that: \"{sentence}\"; "),
        }
    }

    /// Parses a call's arguments and checks them against the tool's schema (see
    /// [`crate::schema`]): the repaired input and what was repaired, or why the call
    /// cannot run. Every loop that runs calls goes through here, so the model meets the
    /// same repairs everywhere.
    pub fn check_arguments(&self, name: &str, arguments: &str) -> Result<Checked, ArgumentError> {
        let input = serde_json::from_str::<serde_json::Value>(arguments).map_err(|e| {
            ArgumentError::InvalidJson {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
                error: e.to_string(),
            }
        })?;
        let Some(tool) = self.get(name) else {
            return Err(ArgumentError::UnknownTool {
                name: name.to_owned(),
                suggestion: self.suggest_for(name, &input),
                available: self.names().join(", "),
            });
        };
        if !input.is_object() {
            return Err(ArgumentError::NotAnObject {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            });
        }
        crate::schema::check(&tool.input_schema(), input).map_err(|problem| ArgumentError::Schema {
            name: name.to_owned(),
            problem,
        })
    }

    pub async fn call_tool(
        &self,
        name: &str,
        input_json: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        match self.tools.get(name) {
            Some(tool) => tool.execute(input_json, ctx).await,
            None => Err(ToolError::Failed(format!(
                "unknown tool `{name}`; available tools: {}",
                self.names().join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool with a name, a rank, a schema, a description and whether it only looks,
    /// and nothing to do.
    struct Fake(&'static str, u32, serde_json::Value, &'static str, bool);

    fn ranked(name: &'static str, rank: u32) -> Fake {
        Fake(name, rank, serde_json::json!({"type": "object"}), "", false)
    }

    fn shaped(name: &'static str, schema: serde_json::Value, description: &'static str) -> Fake {
        Fake(name, u32::MAX, schema, description, false)
    }

    #[async_trait::async_trait]
    impl Tool for Fake {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            self.3
        }
        fn input_schema(&self) -> serde_json::Value {
            self.2.clone()
        }
        fn rank(&self) -> u32 {
            self.1
        }
        fn read_only(&self) -> bool {
            self.4
        }
        async fn execute(&self, _: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::default())
        }
    }

    #[test]
    fn tools_are_listed_by_rank_then_name_whatever_the_registration_order() {
        let tools = [
            ("zeta", u32::MAX),
            ("edit", 5),
            ("alpha", u32::MAX),
            ("read_file", 0),
            ("grep", 3),
        ];
        let mut forward = ToolServer::new();
        let mut backward = ToolServer::new();
        for (name, rank) in tools {
            forward.register(Arc::new(ranked(name, rank))).unwrap();
        }
        for (name, rank) in tools.into_iter().rev() {
            backward.register(Arc::new(ranked(name, rank))).unwrap();
        }
        assert_eq!(
            forward.names(),
            ["read_file", "grep", "edit", "alpha", "zeta"]
        );
        assert_eq!(forward.definitions(), backward.definitions());
    }

    #[test]
    fn an_invented_tool_whose_arguments_fit_one_real_tool_is_pointed_to_it() {
        let mut server = ToolServer::new();
        let object = |props: serde_json::Value, required: &[&str]| serde_json::json!({"type": "object", "properties": props, "required": required});
        let s = serde_json::json!({"type": "string"});
        server
            .register(Arc::new(shaped(
                "shell",
                object(
                    serde_json::json!({"command": s, "timeout_secs": {"type": "integer"}}),
                    &["command"],
                ),
                "Run a bash command.",
            )))
            .unwrap();
        server
            .register(Arc::new(shaped(
                "edit",
                object(
                    serde_json::json!({"path": s, "old_string": s, "new_string": s}),
                    &["path", "old_string", "new_string"],
                ),
                "Replace a string; an empty old_string appends new_string.",
            )))
            .unwrap();
        server
            .register(Arc::new(shaped(
                "write_file",
                object(
                    serde_json::json!({"path": s, "content": s}),
                    &["path", "content"],
                ),
                "Write a file.",
            )))
            .unwrap();
        server
            .register(Arc::new(Fake(
                "read_file",
                u32::MAX,
                object(serde_json::json!({"file": s}), &["file"]),
                "Read a text file.",
                true,
            )))
            .unwrap();
        let error =
            |name: &str, args: &str| server.check_arguments(name, args).unwrap_err().to_string();
        assert_eq!(
            error("run", r#"{"command": "python3 calc.py"}"#),
            "unknown tool `run`; did you mean `shell`? Call it as {\"name\": \"shell\", \"arguments\": {\"command\":\"python3 calc.py\"}}; available tools: edit, read_file, shell, write_file"
        );
        assert!(error(
            "append_line",
            r#"{"path": "T.md", "old_string": "", "new_string": "- x"}"#
        )
        .starts_with("unknown tool `append_line`; did you mean `edit`?"));
        // A tool that only looks is written out whatever the invented name says.
        assert!(error("show", r#"{"file": "a.py"}"#)
            .starts_with("unknown tool `show`; did you mean `read_file`?"));
        // One that changes things only when the name's verb leads to it too: a model
        // asked to run calc.py must not be handed a call that overwrites it.
        assert_eq!(
            error("print", r#"{"path": "calc.py", "content": "6 * 7"}"#),
            "unknown tool `print`; available tools: edit, read_file, shell, write_file"
        );
        assert!(error("write_text", r#"{"path": "a", "content": "b"}"#)
            .starts_with("unknown tool `write_text`; did you mean `write_file`?"));
        assert!(
            error("run_it", r#"{"path": "calc.py", "content": "6 * 7"}"#)
                .starts_with("unknown tool `run_it`; `shell` does that (\"Run a bash command.\"); call it as {\"name\": \"shell\", \"arguments\": {\"command\": <string>, \"timeout_secs\"?: <integer>}}; ")
        );
        // No fit, two fits, a mistyped value, or nothing to go on: only the list.
        for args in [
            r#"{"count": 1}"#,
            r#"{"path": "a"}"#,
            r#"{"command": [1]}"#,
            "{}",
        ] {
            assert_eq!(
                error("todo", args),
                "unknown tool `todo`; available tools: edit, read_file, shell, write_file",
                "{args}"
            );
        }
    }

    #[test]
    fn an_invented_tool_named_for_what_a_real_one_does_is_pointed_to_it() {
        let mut server = ToolServer::new();
        let edit = serde_json::json!({"type": "object", "properties": {
            "path": {"type": "string"}, "old_string": {"type": "string"},
            "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}
        }, "required": ["path", "old_string", "new_string"]});
        server
            .register(Arc::new(Fake(
                "edit",
                1,
                edit,
                "Replace an exact string in a file. An empty old_string appends new_string.",
                false,
            )))
            .unwrap();
        server
            .register(Arc::new(Fake(
                "shell",
                0,
                serde_json::json!({"type": "object"}),
                "Run a bash command.",
                false,
            )))
            .unwrap();
        let error =
            |name: &str, args: &str| server.check_arguments(name, args).unwrap_err().to_string();
        assert_eq!(
            error(
                "append_line",
                r#"{"path": "TODO.md", "line": "- buy milk"}"#
            ),
            "unknown tool `append_line`; `edit` does that (\"An empty old_string appends \
             new_string.\"); call it as {\"name\": \"edit\", \"arguments\": {\"path\": <string>, \
             \"old_string\": <string>, \"new_string\": <string>, \"replace_all\"?: <boolean>}}; \
             available tools: shell, edit"
        );
        assert!(error("run_calc.py", "{}").contains("`shell` does that: \"Run a bash command.\"; "));
        assert_eq!(
            error("todo_comments", r#"{"count": 1}"#),
            "unknown tool `todo_comments`; available tools: shell, edit"
        );
    }
}
