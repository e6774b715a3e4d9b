//! `$ref` cycles in an output schema, found when it is loaded.
//!
//! A schema that comes back to itself without moving into the value (`{"$ref": "#"}`,
//! two `$defs` that refer to each other, a cycle through `allOf`) can never finish
//! validating; `boon` says so only when it validates, which for `saki exec` is after the
//! whole run (exit 8). This walks the schema as a graph instead: its nodes are the
//! subschemas reachable from the root, an edge that stays on the same value (`$ref`,
//! `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`) is
//! "in place", and a cycle of in-place edges is the error. Recursion through
//! `properties` or `items` moves into the value and ends, so it is fine.
//!
//! A `$ref` is followed where its target is certain: a fragment (JSON pointer or anchor)
//! within its resource, or a file beside the schema file. What is not certain
//! (`$dynamicRef`, a URI naming an `$id`) adds no edge: such a cycle is still found when
//! the answer is validated, and no usable schema is ever refused.

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Keywords whose subschema applies to the same value.
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
const IN_PLACE_MANY: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: &[&str] = &["dependentSchemas", "dependencies"];
/// Keywords whose subschema applies to a part of the value.
const INTO_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "items",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
const INTO_MANY: &[&str] = &["prefixItems", "items"];
const INTO_MAP: &[&str] = &["properties", "patternProperties"];
/// Keywords that only hold subschemas for `$ref`s to find.
const DEFINITIONS: &[&str] = &["$defs", "definitions"];

/// A subschema: a document (by index) and a JSON pointer in it, with the pointer of the
/// resource (the nearest `$id`) that its fragments resolve against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Node {
    doc: usize,
    ptr: String,
    resource: String,
}

struct Graph {
    /// Documents by file, the schema file first.
    paths: Vec<PathBuf>,
    docs: Vec<Value>,
    /// `id` is a keyword (drafts 3 and 4) rather than `$id`.
    old_ids: bool,
    /// A `$ref` hides the keywords beside it (drafts 3 to 7).
    ref_alone: bool,
}

/// The first in-place cycle reachable from the root of `schema` (read from `path`), as
/// the locations it passes through; `None` when there is none.
pub fn find(schema: &Value, path: &Path) -> Option<Vec<String>> {
    let draft = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
    let mut graph = Graph {
        paths: vec![path.to_path_buf()],
        docs: vec![schema.clone()],
        old_ids: draft.contains("draft-04") || draft.contains("draft-03"),
        ref_alone: ["draft-03", "draft-04", "draft-06", "draft-07"]
            .iter()
            .any(|d| draft.contains(d)),
    };
    let root = Node {
        doc: 0,
        ptr: String::new(),
        resource: String::new(),
    };
    // Every subschema reachable from the root, with its in-place edges.
    let mut in_place: HashMap<Node, Vec<Node>> = HashMap::new();
    let mut todo = vec![root.clone()];
    while let Some(node) = todo.pop() {
        if in_place.contains_key(&node) {
            continue;
        }
        let (same, into) = graph.edges(&node);
        todo.extend(same.iter().cloned());
        todo.extend(into);
        in_place.insert(node, same);
    }
    graph.cycle(&in_place)
}

impl Graph {
    fn value(&self, node: &Node) -> Option<&Value> {
        self.docs.get(node.doc)?.pointer(&node.ptr)
    }

    /// The node for the subschema at `ptr` below `from`, entering its resource if it
    /// has an `$id`.
    fn child(&self, from: &Node, ptr: String) -> Node {
        let mut resource = from.resource.clone();
        let doc = &self.docs[from.doc];
        if doc.pointer(&ptr).is_some_and(|v| self.has_id(v)) {
            resource = ptr.clone();
        }
        Node {
            doc: from.doc,
            ptr,
            resource,
        }
    }

    /// Whether `value` starts a resource of its own (an `$id` that is not a bare anchor).
    fn has_id(&self, value: &Value) -> bool {
        let key = if self.old_ids { "id" } else { "$id" };
        value
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|id| !id.starts_with('#'))
    }

    /// The in-place edges of `node`, and the edges into parts of the value.
    fn edges(&mut self, node: &Node) -> (Vec<Node>, Vec<Node>) {
        let (mut same, into, reference) = self.children(node);
        if let Some(target) = reference.and_then(|r| self.resolve(node, &r)) {
            same.push(target);
        }
        (same, into)
    }

    /// The subschemas of `node` that apply to the same value and to parts of it, and
    /// its `$ref`.
    fn children(&self, node: &Node) -> (Vec<Node>, Vec<Node>, Option<String>) {
        let (mut same, mut into) = (Vec::new(), Vec::new());
        let Some(Value::Object(map)) = self.value(node) else {
            return (same, into, None);
        };
        let reference = map.get("$ref").and_then(Value::as_str).map(str::to_owned);
        // Up to draft 7, the keywords beside a `$ref` are ignored.
        if reference.is_some() && self.ref_alone {
            return (same, into, reference);
        }
        let at = |key: &str| format!("{}/{}", node.ptr, escape(key));
        for (key, sub) in map {
            let key = key.as_str();
            let (one, many, several) = (
                IN_PLACE_ONE.contains(&key),
                IN_PLACE_MANY.contains(&key),
                IN_PLACE_MAP.contains(&key),
            );
            let target = if one || many || several {
                &mut same
            } else {
                &mut into
            };
            match sub {
                Value::Object(_) | Value::Bool(_) if one || INTO_ONE.contains(&key) => {
                    target.push(self.child(node, at(key)));
                }
                Value::Array(items) if many || INTO_MANY.contains(&key) => {
                    for i in 0..items.len() {
                        target.push(self.child(node, format!("{}/{i}", at(key))));
                    }
                }
                Value::Object(entries) if several || INTO_MAP.contains(&key) => {
                    // `dependencies` also holds lists of names, which are no schemas.
                    for (name, entry) in entries {
                        if entry.is_object() || entry.is_boolean() {
                            let ptr = format!("{}/{}", at(key), escape(name));
                            target.push(self.child(node, ptr));
                        }
                    }
                }
                _ => {}
            }
        }
        (same, into, reference)
    }

    /// The target of `$ref: reference` in `node`, when it is certain.
    fn resolve(&mut self, node: &Node, reference: &str) -> Option<Node> {
        let (file, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let fragment = percent_decode(fragment)?;
        let (doc, resource) = if file.is_empty() {
            (node.doc, node.resource.clone())
        } else {
            // Only a plain relative file, from a document whose base is its own path.
            let root = self.docs.get(node.doc)?;
            if !node.resource.is_empty() || self.has_id(root) || file.contains(':') {
                return None;
            }
            let dir = self.paths[node.doc].parent()?.to_path_buf();
            (
                self.document(dir.join(percent_decode(file)?))?,
                String::new(),
            )
        };
        let ptr = if fragment.is_empty() || fragment.starts_with('/') {
            format!("{resource}{fragment}")
        } else {
            self.anchor(doc, &resource, &fragment)?
        };
        let probe = Node {
            doc,
            ptr: resource.clone(),
            resource,
        };
        self.docs[doc].pointer(&ptr)?;
        Some(self.child(&probe, ptr))
    }

    /// The index of the document at `path`, read (as `boon` did) on first use.
    fn document(&mut self, path: PathBuf) -> Option<usize> {
        if let Some(i) = self.paths.iter().position(|p| *p == path) {
            return Some(i);
        }
        let value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
        self.paths.push(path);
        self.docs.push(value);
        Some(self.docs.len() - 1)
    }

    /// Where `$anchor: name` (or a draft-6/7 `$id: "#name"`) is in the resource at
    /// `resource` of document `doc`, not looking into resources nested in it.
    fn anchor(&self, doc: usize, resource: &str, name: &str) -> Option<String> {
        let mut todo = vec![resource.to_owned()];
        let mut seen = HashSet::new();
        while let Some(ptr) = todo.pop() {
            if !seen.insert(ptr.clone()) {
                continue;
            }
            let Some(Value::Object(map)) = self.docs[doc].pointer(&ptr) else {
                continue;
            };
            let id_key = if self.old_ids { "id" } else { "$id" };
            let named = ["$anchor", "$dynamicAnchor"]
                .iter()
                .any(|k| map.get(*k).and_then(Value::as_str) == Some(name))
                || map.get(id_key).and_then(Value::as_str) == Some(&format!("#{name}"));
            if named {
                return Some(ptr);
            }
            for (key, sub) in map {
                let at = format!("{ptr}/{}", escape(key));
                let mut push = |p: String| {
                    let nested = self.docs[doc].pointer(&p).is_some_and(|v| self.has_id(v));
                    if !nested {
                        todo.push(p);
                    }
                };
                let key = key.as_str();
                match sub {
                    Value::Object(_) if IN_PLACE_ONE.contains(&key) || INTO_ONE.contains(&key) => {
                        push(at)
                    }
                    Value::Array(items)
                        if IN_PLACE_MANY.contains(&key) || INTO_MANY.contains(&key) =>
                    {
                        (0..items.len()).for_each(|i| push(format!("{at}/{i}")));
                    }
                    Value::Object(entries)
                        if IN_PLACE_MAP.contains(&key)
                            || INTO_MAP.contains(&key)
                            || DEFINITIONS.contains(&key) =>
                    {
                        entries
                            .keys()
                            .for_each(|k| push(format!("{at}/{}", escape(k))));
                    }
                    _ => {}
                }
            }
        }
        None
    }

    /// A cycle of in-place edges, as locations, found by a depth-first walk without
    /// recursion (a schema may nest deep).
    fn cycle(&self, in_place: &HashMap<Node, Vec<Node>>) -> Option<Vec<String>> {
        let mut done: HashSet<&Node> = HashSet::new();
        for start in in_place.keys() {
            if done.contains(start) {
                continue;
            }
            // The path being walked, each node with the next edge to take.
            let mut path: Vec<(&Node, usize)> = vec![(start, 0)];
            let mut on_path: HashSet<&Node> = HashSet::from([start]);
            while let Some((node, next)) = path.last_mut() {
                let edges = in_place.get(*node).map_or(&[][..], Vec::as_slice);
                let Some(target) = edges.get(*next) else {
                    on_path.remove(*node);
                    done.insert(*node);
                    path.pop();
                    continue;
                };
                *next += 1;
                if on_path.contains(target) {
                    let from = path.iter().position(|(n, _)| *n == target)?;
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|(n, _)| self.location(n)).collect();
                    cycle.push(self.location(target));
                    return Some(cycle);
                }
                if !done.contains(target) {
                    on_path.insert(target);
                    path.push((target, 0));
                }
            }
        }
        None
    }

    /// `#/ptr` in the schema file, `file#/ptr` in another.
    fn location(&self, node: &Node) -> String {
        let file = match node.doc {
            0 => String::new(),
            i => self.paths[i]
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        format!("{file}#{}", node.ptr)
    }
}

/// A JSON pointer token for `key`.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `%XX` decoded; `None` when that is not UTF-8 (an escape that is not one stays as
/// written).
fn percent_decode(text: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()?;
    Some(decoded.into_owned())
}

#[cfg(test)]
#[path = "cycles_tests.rs"]
mod tests;
