//! Redirections: output to a file writes; input, descriptor duplication and the harmless
//! sinks (`/dev/null`, `/dev/stdout`, `/dev/stderr`) do not. Here-documents are checked
//! against bash's rules for where they end.

use tree_sitter::Node;

use super::walk::{children, Walker};
use super::words::{self, Arg};
use super::Safety;

impl Walker<'_> {
    pub(super) fn redirect(&self, node: Node<'_>) -> Safety {
        match node.kind() {
            "file_redirect" => self.file_redirect(node),
            "heredoc_redirect" => self.heredoc(node),
            "herestring_redirect" => Safety::all(
                children(node)
                    .into_iter()
                    .filter(|(_, c)| c.is_named())
                    .map(|(_, c)| self.word(c).1),
            ),
            _ => self.unknown(node),
        }
    }

    /// `<<EOF` / `<<-EOF`: the body is input. Statements after the start token on its line
    /// (`| cmd`, `> file`) hang below this node in tree-sitter-bash. Where the parser ends
    /// the body is checked against bash, which ends it at the first line equal to the
    /// delimiter (after removing leading tabs for `<<-`).
    fn heredoc(&self, node: Node<'_>) -> Safety {
        let parts = children(node);
        let strip_tabs = parts.iter().any(|(_, c)| c.kind() == "<<-");
        let find = |kind: &str| {
            parts
                .iter()
                .find(|(_, c)| c.kind() == kind)
                .map(|(_, c)| *c)
        };
        let delimiter = find("heredoc_start").and_then(|s| heredoc_delimiter(self.text(s)));
        let (Some(delimiter), Some(end)) = (delimiter, find("heredoc_end")) else {
            self.misparsed.set(true);
            return Safety::Unknown;
        };
        let ends_body = |line: &str| {
            let line = if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            line == delimiter
        };
        let line_start = self
            .src
            .get(..end.start_byte())
            .and_then(|s| s.rfind('\n'))
            .map_or(0, |i| i + 1);
        let end_line = self.src.get(line_start..end.end_byte()).unwrap_or("");
        let line_complete = matches!(
            self.src
                .get(end.end_byte()..)
                .and_then(|s| s.chars().next()),
            None | Some('\n')
        );
        let body = find("heredoc_body").map_or("", |b| self.text(b));
        let body_lines = body.rsplit_once('\n').map_or("", |(complete, _)| complete);
        if !ends_body(end_line) || !line_complete || body_lines.split('\n').any(ends_body) {
            self.misparsed.set(true);
            return Safety::Unknown;
        }
        // A quoted delimiter (`<<'EOF'`, `<<"EOF"`, `<<\EOF`) turns expansion off.
        let expands =
            find("heredoc_start").is_some_and(|s| !self.text(s).contains(['\'', '"', '\\']));
        Safety::all(
            parts
                .iter()
                .filter(|(_, c)| c.is_named())
                .map(|(_, c)| match c.kind() {
                    "heredoc_start" | "heredoc_end" => Safety::ReadOnly,
                    "heredoc_body" if expands => self.heredoc_body(*c),
                    "heredoc_body" => Safety::ReadOnly,
                    _ => self.statement(*c),
                }),
        )
    }

    /// Expansions in an unquoted here-document body run when it is read.
    fn heredoc_body(&self, node: Node<'_>) -> Safety {
        let parsed = Safety::all(
            children(node)
                .into_iter()
                .filter(|(_, c)| c.is_named())
                .map(|(_, c)| match c.kind() {
                    "heredoc_content" if words::has_unparsed_expansion(self.text(c)) => {
                        Safety::Unknown
                    }
                    "heredoc_content" => Safety::ReadOnly,
                    _ => self.word(c).1,
                }),
        );
        // tree-sitter-bash leaves backquotes in a body as plain text.
        parsed.join(self.unparsed_gaps(node))
    }

    pub(super) fn file_redirect(&self, node: Node<'_>) -> Safety {
        let mut operator = None;
        let mut destination = None;
        let mut verdict = Safety::ReadOnly;
        for (field, child) in children(node) {
            match field {
                Some("descriptor") => {}
                Some("destination") => {
                    if destination.is_some() {
                        return self.unknown(node);
                    }
                    let (arg, safety) = self.word(child);
                    verdict = verdict.join(safety);
                    destination = Some(arg);
                }
                _ if child.is_named() => return self.unknown(node),
                _ => operator = Some(child.kind()),
            }
        }
        let dest = destination.as_ref().and_then(Arg::lit);
        let harmless_sink = matches!(dest, Some("/dev/null" | "/dev/stdout" | "/dev/stderr"));
        let verdict_for_op = match operator {
            // Reading from a file, or duplicating / closing an input descriptor.
            Some("<" | "<&" | "<&-") => Safety::ReadOnly,
            Some(">&-") => Safety::ReadOnly,
            // `>&2`, `2>&1`, `>&-`; `>& file` is `&> file`.
            Some(">&") if dest.is_some_and(|d| d == "-" || words::is_integer(d)) => {
                Safety::ReadOnly
            }
            Some(">&") if destination.as_ref().is_some_and(Arg::is_dynamic) => Safety::Unknown,
            Some(">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>") if harmless_sink => {
                Safety::ReadOnly
            }
            Some(">" | ">>" | ">|" | "&>" | "&>>" | ">&" | "<>") => Safety::Write,
            _ => Safety::Unknown,
        };
        verdict.join(verdict_for_op)
    }
}

/// The delimiter of `<<WORD` after quote removal (bash does not expand it).
fn heredoc_delimiter(word: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    q => out.push(q),
                }
            },
            '"' => loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => out.push(chars.next()?),
                    q => out.push(q),
                }
            },
            '\\' => out.push(chars.next()?),
            '$' | '`' => return None,
            _ => out.push(c),
        }
    }
    (!out.is_empty()).then_some(out)
}
