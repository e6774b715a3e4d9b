//! Server answers as lines for the model: `path:line:col: context`.

use crate::manager::LspManager;
use crate::uri::{char_col, line_of, uri_path};
use lsp_types::{
    DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location,
    MarkedString, SymbolKind, WorkspaceSymbolResponse,
};
use saki_tools::code_intel::FileView;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Most locations or symbols listed for one call.
pub const MAX_RESULTS: usize = 100;

/// Most characters of a context line, and of a hover.
const MAX_CONTEXT_CHARS: usize = 120;
const MAX_HOVER_CHARS: usize = 4000;

/// Reads files for context lines, once each.
pub struct Lines<'a> {
    manager: &'a LspManager,
    view: Option<&'a Arc<dyn FileView>>,
    texts: HashMap<PathBuf, Option<String>>,
}

impl<'a> Lines<'a> {
    pub fn new(manager: &'a LspManager, view: Option<&'a Arc<dyn FileView>>) -> Self {
        Self {
            manager,
            view,
            texts: HashMap::new(),
        }
    }

    /// `path:line:col: context` for a location.
    fn place(&mut self, location: &Location) -> String {
        let Some(path) = uri_path(&location.uri) else {
            return location.uri.as_str().to_owned();
        };
        let (manager, view) = (self.manager, self.view);
        let text = self
            .texts
            .entry(path.clone())
            .or_insert_with(|| manager.text_of(&path, view));
        let start = location.range.start;
        let line_text = text
            .as_deref()
            .map(|t| line_of(t, start.line))
            .unwrap_or("");
        let column = char_col(line_text, start.character);
        let context = cut(line_text.trim(), MAX_CONTEXT_CHARS);
        format!(
            "{}:{}:{}: {context}",
            self.manager.roots().display(&path),
            start.line + 1,
            column
        )
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

fn capped(mut lines: Vec<String>, empty: &str) -> String {
    if lines.is_empty() {
        return empty.to_owned();
    }
    let total = lines.len();
    lines.truncate(MAX_RESULTS);
    if total > MAX_RESULTS {
        lines.push(format!("… {} more", total - MAX_RESULTS));
    }
    lines.join("\n")
}

/// A definition or references answer (a location, locations or links).
pub fn locations(answer: &Value, lines: &mut Lines) -> String {
    let found: Vec<Location> = if answer.is_null() {
        Vec::new()
    } else if let Ok(list) = serde_json::from_value::<Vec<Location>>(answer.clone()) {
        list
    } else {
        match serde_json::from_value::<GotoDefinitionResponse>(answer.clone()) {
            Ok(GotoDefinitionResponse::Scalar(l)) => vec![l],
            Ok(GotoDefinitionResponse::Array(l)) => l,
            Ok(GotoDefinitionResponse::Link(links)) => links
                .into_iter()
                .map(|l| Location::new(l.target_uri, l.target_selection_range))
                .collect(),
            Err(_) => Vec::new(),
        }
    };
    capped(
        found.iter().map(|l| lines.place(l)).collect(),
        "nothing found there",
    )
}

/// A hover's text, plain.
pub fn hover_text(answer: &Value) -> Option<String> {
    let hover: Hover = serde_json::from_value(answer.clone()).ok()?;
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => l.value,
    };
    let text = match hover.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(list) => list.into_iter().map(marked).collect::<Vec<_>>().join("\n"),
        HoverContents::Markup(m) => m.value,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| cut(text, MAX_HOVER_CHARS))
}

/// A document's outline: `path:line:col kind name`, nested symbols indented.
pub fn symbols_of_document(answer: &Value, shown: &str) -> String {
    let mut out = Vec::new();
    match serde_json::from_value::<DocumentSymbolResponse>(answer.clone()) {
        Ok(DocumentSymbolResponse::Nested(symbols)) => {
            fn walk(symbols: &[DocumentSymbol], depth: usize, shown: &str, out: &mut Vec<String>) {
                for s in symbols {
                    let start = s.selection_range.start;
                    out.push(format!(
                        "{}{shown}:{}:{} {} {}",
                        "  ".repeat(depth),
                        start.line + 1,
                        start.character + 1,
                        kind_name(s.kind),
                        s.name
                    ));
                    if let Some(children) = &s.children {
                        walk(children, depth + 1, shown, out);
                    }
                }
            }
            walk(&symbols, 0, shown, &mut out);
        }
        Ok(DocumentSymbolResponse::Flat(symbols)) => {
            for s in symbols {
                let start = s.location.range.start;
                out.push(format!(
                    "{shown}:{}:{} {} {}",
                    start.line + 1,
                    start.character + 1,
                    kind_name(s.kind),
                    s.name
                ));
            }
        }
        Err(_) => {}
    }
    capped(out, "no symbols")
}

/// Workspace symbols: `path:line:col kind name (container)`.
pub fn symbols_of_workspace(answer: &Value, lines: &mut Lines) -> String {
    let mut out = Vec::new();
    match serde_json::from_value::<WorkspaceSymbolResponse>(answer.clone()) {
        Ok(WorkspaceSymbolResponse::Flat(symbols)) => {
            for s in symbols {
                let place = lines.place(&s.location);
                let place = place.split(": ").next().unwrap_or_default().to_owned();
                let container = s
                    .container_name
                    .map(|c| format!(" (in {c})"))
                    .unwrap_or_default();
                out.push(format!(
                    "{place} {} {}{container}",
                    kind_name(s.kind),
                    s.name
                ));
            }
        }
        Ok(WorkspaceSymbolResponse::Nested(symbols)) => {
            for s in symbols {
                let place = match s.location {
                    lsp_types::OneOf::Left(location) => {
                        let place = lines.place(&location);
                        place.split(": ").next().unwrap_or_default().to_owned()
                    }
                    lsp_types::OneOf::Right(w) => uri_path(&w.uri)
                        .map(|p| lines.manager.roots().display(&p))
                        .unwrap_or_default(),
                };
                out.push(format!("{place} {} {}", kind_name(s.kind), s.name));
            }
        }
        Err(_) => {}
    }
    capped(out, "no symbols match")
}

fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRUCT => "struct",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    }
}
