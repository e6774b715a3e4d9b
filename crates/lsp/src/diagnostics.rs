//! Diagnostics as the model and the front ends see them: plain records, the block
//! appended to an edit's result, its parse (for `--json` and the UI's error count), and
//! what is new since before an edit.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Most diagnostic lines appended to one edit's result (errors first, then warnings);
/// a line says how many more there are.
pub const MAX_SHOWN: usize = 20;

/// Most characters of one message (a type checker can explain at length).
pub const MAX_MESSAGE_CHARS: usize = 300;

/// The first line of the block appended to a tool result starts with this.
pub const BLOCK_MARK: &str = "[lsp ";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Severity {
    pub fn from_lsp(severity: Option<lsp_types::DiagnosticSeverity>) -> Self {
        use lsp_types::DiagnosticSeverity as S;
        match severity {
            // The protocol leaves a missing severity to the client: taken as an error.
            None | Some(S::ERROR) => Severity::Error,
            Some(S::WARNING) => Severity::Warning,
            Some(S::INFORMATION) => Severity::Info,
            Some(_) => Severity::Hint,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            "info" => Severity::Info,
            "hint" => Severity::Hint,
            _ => return None,
        })
    }
}

/// One diagnostic, 1-based line and column (in characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diag {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip)]
    pub code: Option<String>,
}

impl Diag {
    /// `path` and the file's `text` (for the column in characters) with an LSP record.
    pub fn from_lsp(path: &str, text: &str, d: &lsp_types::Diagnostic) -> Self {
        let line_text = crate::uri::line_of(text, d.range.start.line);
        let code = d.code.as_ref().map(|c| match c {
            lsp_types::NumberOrString::Number(n) => n.to_string(),
            lsp_types::NumberOrString::String(s) => s.clone(),
        });
        Self {
            path: path.to_owned(),
            line: d.range.start.line + 1,
            column: crate::uri::char_col(line_text, d.range.start.character),
            severity: Severity::from_lsp(d.severity),
            message: one_line(&d.message),
            source: d.source.as_deref().map(one_line).filter(|s| !s.is_empty()),
            code,
        }
    }

    /// `path:line:col severity: message (source)`.
    pub fn line(&self) -> String {
        let mut out = format!(
            "{}:{}:{} {}: {}",
            self.path,
            self.line,
            self.column,
            self.severity.as_str(),
            one_line(&self.message)
        );
        if let Some(source) = &self.source {
            out.push_str(&format!(" ({source})"));
        }
        out
    }

    /// What stays the same when lines move: an edit above a problem is not a new one.
    fn key(&self) -> (Severity, String, Option<String>, Option<String>) {
        (
            self.severity,
            self.message.clone(),
            self.source.clone(),
            self.code.clone(),
        )
    }
}

/// Whitespace (newlines included) made single spaces, cut to [`MAX_MESSAGE_CHARS`].
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_MESSAGE_CHARS {
        return joined;
    }
    let mut cut: String = joined.chars().take(MAX_MESSAGE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Errors and warnings, errors first, then by place.
pub fn problems(mut diags: Vec<Diag>) -> Vec<Diag> {
    diags.retain(|d| matches!(d.severity, Severity::Error | Severity::Warning));
    diags.sort_by_key(|d| (d.severity, d.line, d.column));
    diags
}

/// The diagnostics of `after` that `before` did not have (compared without places, as
/// many times as each occurred before).
pub fn new_since(before: &[Diag], after: Vec<Diag>) -> Vec<Diag> {
    let mut seen: HashMap<_, usize> = HashMap::new();
    for d in before {
        *seen.entry(d.key()).or_default() += 1;
    }
    after
        .into_iter()
        .filter(|d| match seen.get_mut(&d.key()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// What the server said about a file after a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its problems; `all`: what was there before is unknown, so all are shown.
    Problems { diags: Vec<Diag>, all: bool },
    /// It said nothing within the bound.
    NotReady { secs: u64 },
    /// The server could not be asked (it failed to start, or crashed).
    Unavailable(String),
}

/// The block appended to an edit's result: a header line, then one line per problem.
pub fn block(server: &str, shown_path: &str, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Problems { diags, all } => {
            let diags = problems(diags.clone());
            let errors = diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count();
            let warnings = diags.len() - errors;
            let new = if *all { "" } else { "new " };
            if diags.is_empty() {
                return format!("{BLOCK_MARK}{server}: no {new}errors or warnings in {shown_path}]");
            }
            let mut out = format!(
                "{BLOCK_MARK}{server}: {} and {} in {shown_path}{}]",
                count(errors, "error"),
                count(warnings, "warning"),
                if *all { "" } else { ", new since the edit" }
            );
            for d in diags.iter().take(MAX_SHOWN) {
                out.push('\n');
                out.push_str(&d.line());
            }
            if diags.len() > MAX_SHOWN {
                out.push_str(&format!(
                    "\n… {} more (the lsp tool's diagnostics lists them all)",
                    diags.len() - MAX_SHOWN
                ));
            }
            out
        }
        Outcome::NotReady { secs } => format!(
            "{BLOCK_MARK}{server}: no diagnostics for {shown_path} within {secs} s (the lsp tool's diagnostics asks again)]"
        ),
        Outcome::Unavailable(why) => format!("{BLOCK_MARK}{server}: not available: {why}]"),
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The diagnostics a tool result's appended block lists (what `--json` carries and the
/// UI counts); `None` when the result has no block, or its block says the server gave
/// no answer (none within the bound, or not available): no list rather than an empty one.
pub fn parse_block(content: &str) -> Option<Vec<Diag>> {
    let (_, rest) = reported_block(content)?;
    Some(rest.lines().filter_map(parse_line).collect())
}

/// How many errors a tool result's block reports (the header's count, which holds
/// past the lines shown); `None` as for [`parse_block`].
pub fn error_count(content: &str) -> Option<usize> {
    let (header, _) = reported_block(content)?;
    let first = header.split(" and ").next()?;
    match first.split_whitespace().next()?.parse::<usize>() {
        Ok(n) if first.contains("error") => Some(n),
        // "no errors or warnings" or "no new errors or warnings".
        _ => Some(0),
    }
}

/// The last appended block of `content`, when it holds the server's report: its header
/// after `[lsp SERVER: `, and the lines after the header.
fn reported_block(content: &str) -> Option<(&str, &str)> {
    let start = content
        .rmatch_indices(&format!("\n{BLOCK_MARK}"))
        .next()
        .map(|(i, _)| i + 1)
        .or_else(|| content.starts_with(BLOCK_MARK).then_some(0))?;
    let block = &content[start..];
    let (header, rest) = block.split_once('\n').unwrap_or((block, ""));
    let (_, header) = header.split_once(": ")?;
    // The headers of `Outcome::NotReady` and `Outcome::Unavailable`.
    if header.starts_with("no diagnostics for ") || header.starts_with("not available: ") {
        return None;
    }
    Some((header, rest))
}

fn parse_line(line: &str) -> Option<Diag> {
    let (place, rest) = line.split_once(": ")?;
    let (place, severity) = place.rsplit_once(' ')?;
    let severity = Severity::parse(severity)?;
    let mut parts = place.rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line_no = parts.next()?.parse().ok()?;
    let path = parts.next()?.to_owned();
    let (message, source) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((message, source)) if !source.contains('(') => {
            (message.to_owned(), Some(source.to_owned()))
        }
        _ => (rest.to_owned(), None),
    };
    Some(Diag {
        path,
        line: line_no,
        column,
        severity,
        message,
        source,
        code: None,
    })
}

#[cfg(test)]
#[path = "diagnostics_tests.rs"]
mod tests;
