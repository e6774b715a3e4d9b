//! Walks the tree-sitter-bash syntax tree and turns it into a verdict.
//!
//! Every node kind is handled explicitly; a kind this file does not know is `Unknown`.
//! Statements combine their parts, commands become argument vectors for the rule table,
//! words become [`Arg`]s, and every command or process substitution met on the way is
//! classified as a script of its own (and keeps the whole command from being read-only).

use std::cell::Cell;

use tree_sitter::{Node, Parser};

use super::commands;
use super::words::{self, Arg};
use super::Safety;

/// Longest command line the classifier looks at.
const MAX_SCRIPT_LEN: usize = 64 * 1024;
/// Deepest syntax tree it walks (the walk is recursive).
const MAX_TREE_DEPTH: usize = 256;
/// Deepest nesting of scripts in scripts (`sh -c "eval '...'"`).
const MAX_NESTING: usize = 6;

/// Where a classification happens: how deep in nested scripts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    nesting: usize,
}

impl Ctx {
    pub(crate) fn top() -> Ctx {
        Ctx { nesting: 0 }
    }

    /// Classifies a whole script, as given to `bash -c`.
    pub(crate) fn script(self, src: &str) -> Safety {
        // Control characters (NUL, carriage return, ...) are read differently by bash and by
        // the parser.
        let control = src
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t');
        if self.nesting >= MAX_NESTING
            || src.len() > MAX_SCRIPT_LEN
            || control
            || words::joins_lines(src)
        {
            return Safety::Unknown;
        }
        let mut parser = Parser::new();
        if parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .is_err()
        {
            tracing::warn!("shell_safety: tree-sitter-bash language rejected");
            return Safety::Unknown;
        }
        let Some(tree) = parser.parse(src, None) else {
            return Safety::Unknown;
        };
        let root = tree.root_node();
        if root.has_error() || depth_exceeds(root, MAX_TREE_DEPTH) {
            return Safety::Unknown;
        }
        let walker = Walker {
            src,
            ctx: Ctx {
                nesting: self.nesting + 1,
            },
            misparsed: Cell::new(false),
        };
        let verdict = walker.statement(root);
        if walker.misparsed.get() {
            return Safety::Unknown;
        }
        // Belt and braces: no substitution anywhere may end up read-only.
        if contains_kind(root, &["command_substitution", "process_substitution"]) {
            verdict.at_least_unknown()
        } else {
            verdict
        }
    }

    /// Classifies a command given as words, program first (as `xargs` or `env` run it).
    pub(crate) fn argv(self, argv: &[Arg]) -> Safety {
        commands::classify_argv(self, argv)
    }
}

/// Walks one parsed script; its methods live in this file (statements and commands),
/// `expand` (words), `redirects` and `conditions`.
pub(super) struct Walker<'a> {
    pub(super) src: &'a str,
    pub(super) ctx: Ctx,
    /// Set when the parser is seen to split the script differently from bash: then no
    /// part of its verdict can be trusted.
    pub(super) misparsed: Cell<bool>,
}

/// Children of a node with their field names.
pub(super) fn children(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

fn depth_exceeds(root: Node<'_>, max: usize) -> bool {
    let mut cursor = root.walk();
    let mut depth = 0usize;
    loop {
        if depth > max {
            return true;
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return false;
            }
            depth = depth.saturating_sub(1);
        }
    }
}

fn contains_kind(node: Node<'_>, kinds: &[&str]) -> bool {
    kinds.contains(&node.kind())
        || children(node)
            .into_iter()
            .any(|(_, c)| contains_kind(c, kinds))
}

pub(super) fn is_word_kind(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "number"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "extglob_pattern"
            | "regex"
            | "brace_expression"
            | "array"
            | "variable_name"
            | "special_variable_name"
    )
}

impl<'a> Walker<'a> {
    pub(super) fn text(&self, node: Node<'_>) -> &'a str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// Verdict of a statement-level node.
    pub(super) fn statement(&self, node: Node<'_>) -> Safety {
        match node.kind() {
            "program"
            | "list"
            | "pipeline"
            | "subshell"
            | "do_group"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "while_statement"
            | "negated_command"
            | "redirected_statement"
            | "case_statement"
            | "case_item"
            | "variable_assignments" => self.parts(node),
            "compound_statement" => match node.child(0) {
                Some(first) if first.kind() == "((" => self.arithmetic_parts(node),
                _ => self.parts(node),
            },
            "for_statement" => self.for_loop(node),
            "c_style_for_statement" => self.c_style_for(node),
            "command" => self.command(node),
            "variable_assignment" => self.assignment(node),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => self.redirect(node),
            "test_command" => self.test_command(node),
            // Defining a function can shadow a command used later.
            "function_definition" => self.parts(node).at_least_unknown(),
            // `declare`, `export`, `local`, `readonly`, `typeset`, `unset`: shell state, and
            // `declare -i` evaluates arithmetic.
            "declaration_command" | "unset_command" => {
                self.check_word_gaps(node);
                self.parts(node).at_least_unknown()
            }
            "comment" | "heredoc_start" | "heredoc_end" => Safety::ReadOnly,
            kind if is_word_kind(kind) => self.word(node).1,
            _ => self.unknown(node),
        }
    }

    /// All named children, joined.
    pub(super) fn parts(&self, node: Node<'_>) -> Safety {
        Safety::all(
            children(node)
                .into_iter()
                .filter(|(_, c)| c.is_named())
                .map(|(_, c)| self.statement(c)),
        )
    }

    /// `Unknown`, or `Write` when a substitution inside writes.
    pub(super) fn unknown(&self, node: Node<'_>) -> Safety {
        Safety::Unknown.join(self.substitutions(node))
    }

    /// `Unknown` when text of `node` that no child covers holds an expansion that can run
    /// code (the parser left it unparsed).
    pub(super) fn unparsed_gaps(&self, node: Node<'_>) -> Safety {
        let mut at = node.start_byte();
        let mut gaps = String::new();
        for (_, child) in children(node) {
            gaps.push_str(self.src.get(at..child.start_byte()).unwrap_or(""));
            gaps.push(' ');
            at = child.end_byte();
        }
        gaps.push_str(self.src.get(at..node.end_byte()).unwrap_or(""));
        if words::has_unparsed_expansion(&gaps) {
            Safety::Unknown
        } else {
            Safety::ReadOnly
        }
    }

    /// Two words of `node` with nothing between them are one word to bash: tree-sitter-bash
    /// sometimes splits one (`'a $'\n'b'`), and then nothing it says can be trusted.
    pub(super) fn check_word_gaps(&self, node: Node<'_>) {
        let mut word_end = None;
        for (_, child) in children(node) {
            if is_word_kind(child.kind()) || child.kind() == "test_operator" {
                // A plain word holding an unescaped blank or operator character is several
                // words or commands to bash.
                let word = child
                    .named_child(0)
                    .filter(|_| child.kind() == "command_name");
                let plain = word.unwrap_or(child);
                if word_end == Some(child.start_byte())
                    || (plain.kind() == "word" && words::has_unescaped_operator(self.text(plain)))
                {
                    self.misparsed.set(true);
                }
                word_end = Some(child.end_byte());
            } else {
                word_end = None;
            }
        }
    }

    /// Joined verdicts of the substitutions anywhere below `node`.
    pub(super) fn substitutions(&self, node: Node<'_>) -> Safety {
        match node.kind() {
            "command_substitution" | "process_substitution" => self.parts(node).at_least_unknown(),
            _ => Safety::all(
                children(node)
                    .into_iter()
                    .map(|(_, c)| self.substitutions(c)),
            ),
        }
    }

    pub(super) fn for_loop(&self, node: Node<'_>) -> Safety {
        self.check_word_gaps(node);
        let parts = children(node);
        if parts.iter().any(|(_, c)| c.kind() == "select") {
            return self.unknown(node); // interactive menu
        }
        let variable_ok = parts
            .iter()
            .filter(|(field, _)| *field == Some("variable"))
            .all(|(_, c)| words::is_private_variable(self.text(*c)));
        let verdict = self.parts(node);
        if variable_ok {
            verdict
        } else {
            verdict.at_least_unknown()
        }
    }

    pub(super) fn c_style_for(&self, node: Node<'_>) -> Safety {
        Safety::all(
            children(node)
                .into_iter()
                .filter(|(_, c)| c.is_named())
                .map(|(field, c)| match field {
                    Some("body") => self.statement(c),
                    _ => self.arithmetic(c),
                }),
        )
    }

    /// Standalone `name=value`: harmless for a private lower-case shell variable.
    pub(super) fn assignment(&self, node: Node<'_>) -> Safety {
        let mut verdict = Safety::ReadOnly;
        for (field, child) in children(node) {
            match field {
                Some("name")
                    if child.kind() == "variable_name"
                        && words::is_private_variable(self.text(child)) => {}
                Some("name") => verdict = verdict.join(self.unknown(child)),
                Some("value") => verdict = verdict.join(self.word(child).1),
                _ if child.is_named() => verdict = verdict.join(self.unknown(child)),
                _ => {}
            }
        }
        verdict
    }

    /// `NAME=value` before a command: exported to it, so only known-harmless names.
    pub(super) fn prefix_assignment(&self, node: Node<'_>) -> Safety {
        let mut name = None;
        let mut value = Some(Arg::Lit(String::new()));
        let mut verdict = Safety::ReadOnly;
        for (field, child) in children(node) {
            match field {
                Some("name") if child.kind() == "variable_name" => name = Some(self.text(child)),
                Some("value") => {
                    let (arg, safety) = self.word(child);
                    value = Some(arg);
                    verdict = verdict.join(safety);
                }
                _ if child.is_named() => return self.unknown(node),
                _ => {}
            }
        }
        match (name, value.as_ref().and_then(Arg::lit)) {
            (Some(name), Some(value)) if words::is_harmless_env(name, value) => verdict,
            _ => verdict.at_least_unknown(),
        }
    }

    pub(super) fn command(&self, node: Node<'_>) -> Safety {
        let mut verdict = Safety::ReadOnly;
        let mut argv = Vec::new();
        let mut word_end = None;
        for (field, child) in children(node) {
            if matches!(field, Some("name" | "argument")) {
                // As in `check_word_gaps`; the name is a `command_name` node.
                // A plain word holding an unescaped blank or operator character is several
                // words or commands to bash.
                let word = child
                    .named_child(0)
                    .filter(|_| child.kind() == "command_name");
                let plain = word.unwrap_or(child);
                if word_end == Some(child.start_byte())
                    || (plain.kind() == "word" && words::has_unescaped_operator(self.text(plain)))
                {
                    self.misparsed.set(true);
                }
                word_end = Some(child.end_byte());
            }
            match (field, child.kind()) {
                (Some("name"), _) => {
                    let (arg, safety) = match child.named_child(0) {
                        Some(word) if child.named_child_count() == 1 => self.word(word),
                        _ => (Arg::Dynamic, self.unknown(child)),
                    };
                    argv.push(arg);
                    verdict = verdict.join(safety);
                }
                (Some("argument"), _) if child.is_named() => {
                    let (arg, safety) = self.word(child);
                    argv.push(arg);
                    verdict = verdict.join(safety);
                }
                // e.g. the `$` of `$"..."`
                (Some("argument"), _) => argv.push(Arg::Dynamic),
                (Some("redirect"), _) => verdict = verdict.join(self.redirect(child)),
                (_, "variable_assignment") => verdict = verdict.join(self.prefix_assignment(child)),
                _ if child.is_named() => verdict = verdict.join(self.unknown(child)),
                _ => {}
            }
        }
        if argv.is_empty() {
            verdict
        } else {
            verdict.join(self.ctx.argv(&argv))
        }
    }
}
