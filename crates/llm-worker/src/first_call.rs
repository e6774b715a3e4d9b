//! `first_tool_call = "required"`: the first response of a turn must be a call to one of
//! the offered tools. Small local models asked to change or look at something answer
//! from nothing, or invent a tool, far more often than they look first; a look first
//! costs one call on a turn that needed none.
//!
//! The call is asked for as structured output (a JSON object `{"name", "arguments"}`
//! whose arguments follow that tool's schema): a llama.cpp server turns the schema into a
//! grammar, which holds with every chat template, where its native "required" tool
//! choice is not enforced with some. The object arrives as text and becomes a call
//! through text-call recovery ([`crate::recovery`]), which this needs. The tool list,
//! and so the cached prompt prefix, is the same as for every other request.

use saki_llm_client::{Request, ResponseSchema, ToolDefinition};
use serde_json::{json, Value};

/// Makes `request` ask for a call to one of its tools (nothing when it offers none).
pub fn require_call(request: &mut Request) {
    if !request.tools.is_empty() {
        request.response_schema = Some(call_schema(&request.tools));
    }
}

/// The schema of one call to any of `tools`: one alternative per tool, its name fixed.
pub fn call_schema(tools: &[ToolDefinition]) -> ResponseSchema {
    let alternatives: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "type": "object",
                "properties": {
                    "name": {"const": tool.name},
                    "arguments": tool.input_schema,
                },
                "required": ["name", "arguments"],
            })
        })
        .collect();
    ResponseSchema {
        name: "tool_call".to_owned(),
        schema: json!({ "anyOf": alternatives }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_alternative_per_tool_with_its_own_arguments() {
        let tools = vec![
            ToolDefinition {
                name: "read_file".into(),
                description: "Read".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            ToolDefinition {
                name: "ls".into(),
                description: "List".into(),
                input_schema: json!({"type": "object", "properties": {}}),
            },
        ];
        let schema = call_schema(&tools);
        assert_eq!(schema.name, "tool_call");
        let any = schema.schema["anyOf"].as_array().unwrap();
        assert_eq!(any.len(), 2);
        assert_eq!(any[0]["properties"]["name"]["const"], "read_file");
        assert_eq!(any[0]["properties"]["arguments"]["required"][0], "path");
        assert_eq!(any[1]["properties"]["name"]["const"], "ls");
    }
}
