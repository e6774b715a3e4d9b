#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::json;

fn cycle(schema: Value) -> Option<Vec<String>> {
    find(&schema, Path::new("/nonexistent/schema.json"))
}

#[test]
fn a_schema_that_comes_back_to_itself_in_place_is_a_cycle() {
    for schema in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
               "$ref": "#/$defs/a"}),
        json!({"allOf": [{"$ref": "#"}]}),
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/loop"}},
               "$defs": {"loop": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/loop"}]}}}),
        json!({"$defs": {"a": {"$anchor": "top", "not": {"$ref": "#top"}}}, "$ref": "#/$defs/a"}),
        json!({"definitions": {"a b": {"$ref": "#/definitions/a%20b"}},
               "$ref": "#/definitions/a%20b"}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#",
               "definitions": {"a": {"$ref": "#/definitions/a"}},
               "properties": {"p": {"$ref": "#/definitions/a"}}}),
    ] {
        assert!(cycle(schema.clone()).is_some(), "{schema}");
    }
    let found = cycle(
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                             "$ref": "#/$defs/a"}),
    )
    .unwrap();
    assert!(found.len() >= 3, "{found:?}");
    assert_eq!(found.first(), found.last());
}

#[test]
fn recursion_into_the_value_and_unused_definitions_are_fine() {
    for schema in [
        json!({"type": "object"}),
        json!(true),
        // A tree: each level moves into the value.
        json!({"type": "object", "properties": {"children": {"type": "array",
               "items": {"$ref": "#"}}}}),
        json!({"$defs": {"node": {"properties": {"next": {"$ref": "#/$defs/node"}}}},
               "$ref": "#/$defs/node"}),
        // A cycle nothing refers to never runs.
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "type": "string"}),
        // Up to draft 7 the keywords beside a `$ref` are ignored.
        json!({"$schema": "http://json-schema.org/draft-07/schema#",
               "definitions": {"s": {"type": "string"}},
               "$ref": "#/definitions/s", "allOf": [{"$ref": "#"}]}),
        // A nested resource's fragments are its own.
        json!({"$defs": {"inner": {"$id": "https://example.com/inner",
               "$defs": {"x": {"type": "string"}}, "$ref": "#/$defs/x"}},
               "$ref": "#/$defs/inner"}),
        json!({"enum": [{"$ref": "#"}], "const": {"allOf": [{"$ref": "#"}]}}),
    ] {
        assert_eq!(cycle(schema.clone()), None, "{schema}");
    }
}

#[test]
fn a_cycle_through_a_file_beside_the_schema_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("other.json"), r#"{"$ref": "schema.json"}"#).unwrap();
    let found = find(
        &json!({"$ref": "other.json"}),
        &dir.path().join("schema.json"),
    );
    assert!(found.is_some());
    std::fs::write(dir.path().join("other.json"), r#"{"type": "string"}"#).unwrap();
    assert_eq!(
        find(
            &json!({"$ref": "other.json"}),
            &dir.path().join("schema.json")
        ),
        None
    );
}
