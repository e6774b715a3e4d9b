//! `saki exec --output-schema FILE`: the final answer must be JSON that validates against
//! the schema in FILE.
//!
//! Where the protocol has structured output it is asked for on every request of the run
//! (Chat Completions `response_format`, Responses `text.format`, Gemini 3
//! `responseJsonSchema`; tool calls stay possible, as Codex does it). Anthropic has none,
//! and Gemini before 3 refuses a JSON response type together with function calling: there
//! the prompt says what the answer must be. In every case the answer is validated at the
//! end, and one that does not validate fails the run (`output_schema`, exit 8).
//!
//! Validation uses `boon`: it passes the JSON-Schema-Test-Suite for drafts 4 to 2020-12
//! and adds six small crates to the tree (its URL and IDNA crates are already there);
//! `jsonschema` with its features off adds about twenty-five. `$ref`s resolve against the
//! schema file's own path (other local files); nothing is fetched over the network. A
//! `$ref` cycle is found when the schema is loaded (`cycles.rs`), before any request.

mod cycles;

use saki_llm_client::{ResponseSchema, WireApi};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Longest validation report put in an error message.
const MAX_REPORT_CHARS: usize = 2_000;

pub struct OutputSchema {
    path: PathBuf,
    schema: Value,
    compiled: boon::Schemas,
    index: boon::SchemaIndex,
}

impl OutputSchema {
    /// Reads and compiles the schema; `Err` names the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--output-schema {shown}: cannot read it: {e}"))?;
        let schema: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--output-schema {shown}: not valid JSON: {e}"))?;
        if !schema.is_object() && !schema.is_boolean() {
            return Err(format!(
                "--output-schema {shown}: a JSON schema is an object (or a boolean), not {}",
                kind(&schema)
            ));
        }
        // An absolute location, so that relative `$ref`s find the files beside it.
        let location = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let location = location.to_string_lossy().into_owned();
        let mut compiler = boon::Compiler::new();
        let mut compiled = boon::Schemas::new();
        let unusable = |e: boon::CompileError| {
            format!("--output-schema {shown}: not a usable JSON schema: {e}")
        };
        compiler
            .add_resource(&location, schema.clone())
            .map_err(unusable)?;
        let index = compiler
            .compile(&location, &mut compiled)
            .map_err(unusable)?;
        // boon finds a `$ref` cycle only when it validates, after the whole run.
        if let Some(cycle) = cycles::find(&schema, Path::new(&location)) {
            return Err(format!(
                "--output-schema {shown}: not a usable JSON schema: a `$ref` cycle ({}) \
                 comes back to the same place without moving into the value, so no \
                 answer could be checked",
                cycle.join(" → ")
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            schema,
            compiled,
            index,
        })
    }

    /// The structured-output request for providers that have it.
    pub fn response_schema(&self) -> ResponseSchema {
        ResponseSchema {
            name: "final_answer".to_owned(),
            schema: self.schema.clone(),
        }
    }

    /// Whether the provider is asked for the schema as structured output; otherwise
    /// the prompt carries [`OutputSchema::instruction`].
    pub fn enforced(wire_api: WireApi, model: &str) -> bool {
        match wire_api {
            WireApi::Anthropic => false,
            // Gemini 1.x and 2.x answer "Function calling with a response mime type:
            // 'application/json' is unsupported"; Gemini 3 takes both.
            WireApi::Gemini => {
                let model = model.trim_start_matches("models/");
                !(model.starts_with("gemini-1") || model.starts_with("gemini-2"))
            }
            _ => true,
        }
    }

    /// What the prompt says when the provider cannot be asked for the schema itself.
    pub fn instruction(&self) -> String {
        format!(
            "When you give your final answer, it must be only a JSON value that validates \
             against this JSON schema: no other text, no code fence.\n{}",
            self.schema
        )
    }

    /// The final answer as JSON that validates, or why not. A single surrounding code
    /// fence is allowed (models fence JSON out of habit); the JSON text inside is returned.
    pub fn check(&self, answer: &str) -> Result<String, String> {
        let shown = self.path.display();
        let text = unfenced(answer.trim());
        if text.is_empty() {
            return Err(format!(
                "the final answer is empty; --output-schema {shown} expects JSON"
            ));
        }
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "the final answer is not JSON ({e}), so it cannot match --output-schema {shown}: {}",
                preview(text)
            )
        })?;
        if !self.compiled.contains(self.index) {
            return Err(format!(
                "--output-schema {shown}: the schema was not compiled"
            ));
        }
        match self.compiled.validate(&value, self.index) {
            Ok(()) => Ok(text.to_owned()),
            Err(e) => {
                let mut report = e.to_string();
                if report.chars().count() > MAX_REPORT_CHARS {
                    report = report.chars().take(MAX_REPORT_CHARS).collect();
                    report.push('…');
                }
                Err(format!(
                    "the final answer does not match --output-schema {shown}:\n{report}"
                ))
            }
        }
    }
}

/// The JSON inside one fenced block (```json … ```) that is the whole answer, or the
/// answer itself.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) ends the first line.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('`') => inner.trim(),
        _ => text,
    }
}

fn preview(text: &str) -> String {
    const MAX: usize = 200;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    format!("{out:?}")
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn schema_file(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("schema.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    const SCHEMA: &str = r#"{"type": "object", "properties": {"answer": {"type": "integer"},
        "files": {"type": "array", "items": {"type": "string"}}},
        "required": ["answer"], "additionalProperties": false}"#;

    #[test]
    fn a_valid_answer_passes_also_inside_a_fence() {
        let dir = tempfile::tempdir().unwrap();
        let schema = OutputSchema::load(&schema_file(dir.path(), SCHEMA)).unwrap();
        assert_eq!(
            schema.check(r#" {"answer": 42} "#).unwrap(),
            r#"{"answer": 42}"#
        );
        assert_eq!(
            schema
                .check("```json\n{\"answer\": 1, \"files\": [\"a\"]}\n```")
                .unwrap(),
            "{\"answer\": 1, \"files\": [\"a\"]}"
        );
    }

    #[test]
    fn an_answer_that_does_not_match_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let schema = OutputSchema::load(&schema_file(dir.path(), SCHEMA)).unwrap();
        let err = schema.check(r#"{"answer": "42", "extra": 1}"#).unwrap_err();
        assert!(err.contains("does not match --output-schema"), "{err}");
        assert!(err.contains("/answer"), "{err}");
        let err = schema.check("The answer is 42.").unwrap_err();
        assert!(err.contains("is not JSON"), "{err}");
        assert!(err.contains("The answer is 42."), "{err}");
        let err = schema.check("  ").unwrap_err();
        assert!(err.contains("empty"), "{err}");
        // A fence that is not the whole answer is not taken apart.
        assert!(schema
            .check("Here:\n```json\n{\"answer\": 1}\n```")
            .is_err());
    }

    #[test]
    fn a_bad_schema_file_is_named_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let missing = OutputSchema::load(&dir.path().join("nope.json"))
            .err()
            .unwrap();
        assert!(missing.contains("cannot read it"), "{missing}");
        let not_json = OutputSchema::load(&schema_file(dir.path(), "{type: object"))
            .err()
            .unwrap();
        assert!(not_json.contains("not valid JSON"), "{not_json}");
        let array = OutputSchema::load(&schema_file(dir.path(), "[1]"))
            .err()
            .unwrap();
        assert!(array.contains("not an array"), "{array}");
        let bad = OutputSchema::load(&schema_file(dir.path(), r#"{"type": 12}"#))
            .err()
            .unwrap();
        assert!(bad.contains("not a usable JSON schema"), "{bad}");
        let bad_ref = OutputSchema::load(&schema_file(dir.path(), r#"{"$ref": "other.json"}"#))
            .err()
            .unwrap();
        assert!(bad_ref.contains("not a usable JSON schema"), "{bad_ref}");
    }

    #[test]
    fn refs_resolve_beside_the_schema_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("item.json"), r#"{"type": "string"}"#).unwrap();
        let schema = OutputSchema::load(&schema_file(
            dir.path(),
            r#"{"type": "array", "items": {"$ref": "item.json"}}"#,
        ))
        .unwrap();
        assert!(schema.check(r#"["a", "b"]"#).is_ok());
        assert!(schema.check(r#"["a", 2]"#).is_err());
    }

    #[test]
    fn which_providers_are_asked_for_structured_output() {
        assert!(OutputSchema::enforced(WireApi::Chat, "gpt-5"));
        assert!(OutputSchema::enforced(WireApi::Responses, "gpt-5"));
        assert!(OutputSchema::enforced(
            WireApi::Gemini,
            "gemini-3-pro-preview"
        ));
        assert!(!OutputSchema::enforced(WireApi::Gemini, "gemini-2.5-flash"));
        assert!(!OutputSchema::enforced(
            WireApi::Gemini,
            "models/gemini-1.5-pro"
        ));
        assert!(!OutputSchema::enforced(
            WireApi::Anthropic,
            "claude-sonnet-4-5"
        ));
    }
}
