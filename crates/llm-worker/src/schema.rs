//! Tool arguments checked against the tool's JSON schema before the call runs.
//!
//! Small models add keys the schema never had (`"type": "object"`), write numbers as
//! strings (`"limit": "5"`) and forget required fields. [`check`] repairs what can be
//! repaired without guessing (unknown properties and unusable optional ones dropped,
//! lossless type coercions) and
//! says what it did, so the result can tell the model; what cannot be repaired (a
//! missing or mistyped required field) becomes an error naming the field and the shape
//! expected, so the model can retry.
//!
//! Written by hand over `serde_json::Value`: the built-in schemas use `type`,
//! `properties`, `required`, `minimum`/`maximum` and `items`, and a full JSON Schema
//! validator is a large dependency for checking that much. Anything the checker does
//! not understand is passed through unchanged.

use serde_json::{Map, Value};

/// The repaired arguments and a note per repair.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub input: Value,
    pub notes: Vec<String>,
}

impl Checked {
    /// A tool's result with the repairs said first, where the model reads them even when
    /// the output is long.
    pub fn annotate(&self, content: String) -> String {
        if self.notes.is_empty() {
            content
        } else {
            format!("[{}]\n{content}", self.notes.join("; "))
        }
    }
}

/// Checks `input` (the parsed arguments of an object-typed tool) against `schema`.
pub fn check(schema: &Value, input: Value) -> Result<Checked, String> {
    let Value::Object(mut args) = input else {
        return Err(format!("expected a JSON object of arguments, got {input}"));
    };
    let mut notes = Vec::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Checked {
            input: Value::Object(args),
            notes,
        });
    };
    let open = schema.get("additionalProperties") != Some(&Value::Bool(false))
        && schema.get("additionalProperties").is_some();
    let unknown: Vec<String> = args
        .keys()
        .filter(|k| !properties.contains_key(*k))
        .cloned()
        .collect();
    if !open && !unknown.is_empty() {
        for key in &unknown {
            args.remove(key);
        }
        notes.push(format!(
            "ignored unknown argument{} {} (this tool takes: {})",
            if unknown.len() == 1 { "" } else { "s" },
            quoted(&unknown),
            quoted(&properties.keys().cloned().collect::<Vec<_>>())
        ));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in &required {
        if !args.contains_key(*name) || args.get(*name) == Some(&Value::Null) {
            // The field's own description says what to put there ("empty to append"):
            // a small model that left it out rarely knows.
            let hint = properties
                .get(*name)
                .and_then(|p| p.get("description"))
                .and_then(Value::as_str)
                .map(|d| format!(": {}", d.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            return Err(format!(
                "missing required argument `{name}` ({}{hint}); the arguments must look like {}",
                describe(properties.get(*name)),
                shape(properties, &required)
            ));
        }
    }
    for (name, property) in properties {
        let Some(value) = args.get_mut(name) else {
            continue;
        };
        if value.is_null() && !required.contains(&name.as_str()) {
            args.remove(name);
            continue;
        }
        match coerce(property, value) {
            Fit::Fits => {}
            Fit::Coerced(from) => notes.push(format!(
                "`{name}` was {from}; used as {}",
                describe(Some(property))
            )),
            // An optional argument that cannot be used is left out, as an unknown one
            // is: the call runs with the tool's default, and the model is told.
            Fit::Wrong if !required.contains(&name.as_str()) => {
                notes.push(format!(
                    "ignored `{name}`: it must be {}, got {}",
                    describe(Some(property)),
                    value
                ));
                args.remove(name);
            }
            Fit::Wrong => {
                return Err(format!(
                    "argument `{name}` must be {}, got {}; the arguments must look like {}",
                    describe(Some(property)),
                    value,
                    shape(properties, &required)
                ))
            }
        }
    }
    Ok(Checked {
        input: Value::Object(args),
        notes,
    })
}

/// Whether `input` is a call to the tool of `schema` as it stands: an object with every
/// required field, no field the schema lacks, and values that fit (at most losslessly
/// coerced). An empty object fits no schema, so a call with no arguments suggests nothing.
pub fn fits(schema: &Value, input: &Value) -> bool {
    let (Some(args), Some(properties)) = (
        input.as_object(),
        schema.get("properties").and_then(Value::as_object),
    ) else {
        return false;
    };
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    !args.is_empty()
        && required
            .iter()
            .filter_map(Value::as_str)
            .all(|r| args.contains_key(r))
        && args.iter().all(|(k, v)| {
            properties
                .get(k)
                .is_some_and(|p| !matches!(coerce(p, &mut v.clone()), Fit::Wrong))
        })
}

enum Fit {
    Fits,
    /// Changed from what (a short description of the original).
    Coerced(String),
    Wrong,
}

/// Fits `value` to `property`'s type where that loses nothing.
fn coerce(property: &Value, value: &mut Value) -> Fit {
    let Some(kind) = property.get("type").and_then(Value::as_str) else {
        return Fit::Fits;
    };
    let fits = match (kind, &*value) {
        ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    if fits {
        return within_bounds(property, value);
    }
    let replacement = match (kind, &*value) {
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
        ("integer", Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| Value::from(f as i64)),
        ("number", Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        ("boolean", Value::String(s)) => match s.trim() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("object" | "array", Value::String(s)) => {
            serde_json::from_str::<Value>(s).ok().filter(|v| {
                matches!(
                    (kind, v),
                    ("object", Value::Object(_)) | ("array", Value::Array(_))
                )
            })
        }
        _ => None,
    };
    match replacement {
        Some(new) => {
            let from = format!("given as {}", value);
            *value = new;
            match within_bounds(property, value) {
                Fit::Wrong => Fit::Wrong,
                _ => Fit::Coerced(from),
            }
        }
        None => Fit::Wrong,
    }
}

fn within_bounds(property: &Value, value: &Value) -> Fit {
    let Some(n) = value.as_f64() else {
        return Fit::Fits;
    };
    let below = property
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|min| n < min);
    let above = property
        .get("maximum")
        .and_then(Value::as_f64)
        .is_some_and(|max| n > max);
    if below || above {
        Fit::Wrong
    } else {
        Fit::Fits
    }
}

fn describe(property: Option<&Value>) -> String {
    let Some(property) = property else {
        return "a value".to_owned();
    };
    let kind = property
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("a value");
    let article = match kind {
        "integer" | "object" | "array" => "an",
        _ => "a",
    };
    let mut text = format!("{article} {kind}");
    match (
        property.get("minimum").and_then(Value::as_f64),
        property.get("maximum").and_then(Value::as_f64),
    ) {
        (Some(min), Some(max)) => text.push_str(&format!(" from {min} to {max}")),
        (Some(min), None) => text.push_str(&format!(" of at least {min}")),
        (None, Some(max)) => text.push_str(&format!(" of at most {max}")),
        (None, None) => {}
    }
    text
}

/// What a tool's arguments should look like (see [`shape`]); `None` for a schema
/// without properties.
pub fn shape_of(schema: &Value) -> Option<String> {
    let properties = schema.get("properties").and_then(Value::as_object)?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Some(shape(properties, &required))
}

/// `{"path": <string>, "limit"?: <integer>}`: what the arguments should look like,
/// required fields first.
fn shape(properties: &Map<String, Value>, required: &[&str]) -> String {
    let (first, rest): (Vec<_>, Vec<_>) = properties
        .iter()
        .partition(|(name, _)| required.contains(&name.as_str()));
    let fields: Vec<String> = first
        .into_iter()
        .chain(rest)
        .map(|(name, p)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let kind = p.get("type").and_then(Value::as_str).unwrap_or("value");
            format!("\"{name}\"{optional}: <{kind}>")
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 1},
            "all": {"type": "boolean"},
            "edits": {"type": "array"}
        }, "required": ["path"]})
    }

    #[test]
    fn unknown_keys_are_dropped_and_said() {
        let c = check(&schema(), json!({"path": "a", "type": "object", "x": 1})).unwrap();
        assert_eq!(c.input, json!({"path": "a"}));
        assert_eq!(c.notes.len(), 1);
        assert!(c.notes[0].contains("`type`, `x`"), "{}", c.notes[0]);
    }

    #[test]
    fn lossless_coercions() {
        let c = check(
            &schema(),
            json!({"path": 7, "offset": "5", "all": "true", "edits": "[1, 2]"}),
        )
        .unwrap();
        assert_eq!(
            c.input,
            json!({"path": "7", "offset": 5, "all": true, "edits": [1, 2]})
        );
        assert_eq!(c.notes.len(), 4);
        let c = check(&schema(), json!({"path": "a", "offset": 3.0})).unwrap();
        assert_eq!(c.input["offset"], json!(3));
        let c = check(&schema(), json!({"path": "a", "offset": null})).unwrap();
        assert_eq!(c.input, json!({"path": "a"}), "a null optional is left out");
    }

    #[test]
    fn what_cannot_be_repaired_names_the_field_and_the_shape() {
        let e = check(&schema(), json!({"offset": 2})).unwrap_err();
        assert!(
            e.contains("missing required argument `path` (a string)"),
            "{e}"
        );
        assert!(
            e.contains("{\"path\": <string>, \"offset\"?: <integer>, \"all\"?: <boolean>"),
            "{e}"
        );
        let described = json!({"type": "object", "properties": {
            "old_string": {"type": "string", "description": "Exact text; empty to append"}
        }, "required": ["old_string"]});
        let hinted = check(&described, json!({})).unwrap_err();
        assert!(
            hinted.starts_with(
                "missing required argument `old_string` (a string: Exact text; empty to append)"
            ),
            "{hinted}"
        );
        let e = check(&schema(), json!({"path": ["a"]})).unwrap_err();
        assert!(e.contains("`path` must be a string, got [\"a\"]"), "{e}");
    }

    #[test]
    fn an_unusable_optional_argument_is_left_out_and_said() {
        for (offset, shown) in [
            (json!("five"), "\"five\""),
            (json!(0), "0"),
            (json!(2.5), "2.5"),
        ] {
            let c = check(&schema(), json!({"path": "a", "offset": offset})).unwrap();
            assert_eq!(c.input, json!({"path": "a"}));
            assert_eq!(
                c.notes,
                vec![format!(
                    "ignored `offset`: it must be an integer of at least 1, got {shown}"
                )]
            );
        }
        assert!(check(&schema(), json!([1])).is_err());
    }

    #[test]
    fn schemas_it_does_not_understand_pass_through() {
        let c = check(&json!({"type": "object"}), json!({"anything": 1})).unwrap();
        assert_eq!(c.input, json!({"anything": 1}));
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true});
        let c = check(&open, json!({"a": 1, "b": 2})).unwrap();
        assert_eq!(c.input, json!({"a": 1, "b": 2}));
    }
}
