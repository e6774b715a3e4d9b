//! Words: their value after expansion (or the fact that it is only known at run time), and
//! what expanding them runs.

use tree_sitter::Node;

use super::walk::{children, Walker};
use super::words::{self, Arg};
use super::Safety;

impl Walker<'_> {
    pub(super) fn arithmetic_parts(&self, node: Node<'_>) -> Safety {
        Safety::all(
            children(node)
                .into_iter()
                .filter(|(_, c)| c.is_named())
                .map(|(_, c)| self.arithmetic(c)),
        )
    }

    /// Arithmetic is read-only only on literal numbers: bash evaluates a variable's value
    /// as an expression, and an array subscript in it can run a command substitution.
    pub(super) fn arithmetic(&self, node: Node<'_>) -> Safety {
        match node.kind() {
            "number" => Safety::ReadOnly,
            "binary_expression"
            | "unary_expression"
            | "parenthesized_expression"
            | "ternary_expression" => self.arithmetic_parts(node),
            _ => self.unknown(node),
        }
    }

    /// A word's value as the program sees it, and the verdict of what expanding it runs.
    pub(super) fn word(&self, node: Node<'_>) -> (Arg, Safety) {
        let text = self.text(node);
        match node.kind() {
            // Text the parser left unparsed must not hide a substitution.
            "word" | "regex" | "extglob_pattern" if words::has_unparsed_expansion(text) => {
                (Arg::Dynamic, self.unknown(node))
            }
            "word" => match words::unquote_word(text) {
                Some(value) => (Arg::Lit(value), Safety::ReadOnly),
                None => (Arg::Dynamic, Safety::ReadOnly),
            },
            "number" => match words::unquote_word(text) {
                Some(value) => (Arg::Lit(value), Safety::ReadOnly),
                None => (Arg::Dynamic, self.unknown(node)),
            },
            "raw_string" => match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
                Some(inner) => (Arg::Lit(inner.to_owned()), Safety::ReadOnly),
                None => (Arg::Dynamic, Safety::Unknown),
            },
            "ansi_c_string" => (
                words::ansi_c_plain(text).map_or(Arg::DynamicWord, Arg::Lit),
                Safety::ReadOnly,
            ),
            "string" => {
                let (arg, verdict) = self.string(node);
                (arg, verdict.join(self.unparsed_gaps(node)))
            }
            "concatenation" => {
                // Literal while every part is; one word while no part can split.
                let mut value = Arg::Lit(String::new());
                let mut verdict = Safety::ReadOnly;
                for (_, part) in children(node) {
                    let (arg, safety) = if part.is_named() {
                        self.word(part)
                    } else {
                        (Arg::Dynamic, Safety::ReadOnly)
                    };
                    verdict = verdict.join(safety);
                    value = match (value, arg) {
                        (Arg::Lit(mut v), Arg::Lit(p)) => {
                            v.push_str(&p);
                            Arg::Lit(v)
                        }
                        (Arg::Dynamic, _) | (_, Arg::Dynamic) => Arg::Dynamic,
                        _ => Arg::DynamicWord,
                    };
                }
                if words::has_brace_expansion(text) {
                    value = Arg::Dynamic;
                }
                (value, verdict.join(self.unparsed_gaps(node)))
            }
            "simple_expansion" | "variable_name" | "special_variable_name" => {
                (Arg::Dynamic, Safety::ReadOnly)
            }
            "expansion" => (Arg::Dynamic, self.expansion(node)),
            "command_substitution" | "process_substitution" => {
                (Arg::Dynamic, self.parts(node).at_least_unknown())
            }
            "arithmetic_expansion" => (Arg::Dynamic, self.arithmetic_parts(node)),
            "array" | "extglob_pattern" | "regex" | "brace_expression" | "translated_string" => {
                if node.kind() == "array" {
                    self.check_word_gaps(node);
                }
                let parts = children(node).into_iter().filter(|(_, c)| c.is_named());
                (
                    Arg::Dynamic,
                    Safety::all(parts.map(|(_, c)| self.word(c).1)),
                )
            }
            _ => (Arg::Dynamic, self.unknown(node)),
        }
    }

    pub(super) fn string(&self, node: Node<'_>) -> (Arg, Safety) {
        let mut value = Some(String::new());
        let mut verdict = Safety::ReadOnly;
        for (_, part) in children(node) {
            match part.kind() {
                "\"" => {}
                // A `$` that starts no expansion (`"cost: 5$"`) is itself.
                "$" if !part.is_named() => {
                    if let Some(v) = value.as_mut() {
                        v.push('$');
                    }
                }
                "string_content" if words::has_unparsed_expansion(self.text(part)) => {
                    verdict = Safety::Unknown;
                    value = None;
                }
                "string_content" => {
                    if let Some(v) = value.as_mut() {
                        v.push_str(&words::unescape_double_quoted(self.text(part)));
                    }
                }
                _ => {
                    verdict = verdict.join(if part.is_named() {
                        self.word(part).1
                    } else {
                        Safety::Unknown
                    });
                    value = None;
                }
            }
        }
        let arg = match value {
            Some(value) => Arg::Lit(value),
            // `"$@"` and `"${a[@]}"` expand to one word per element.
            None if self.text(node).contains('@') => Arg::Dynamic,
            None => Arg::DynamicWord,
        };
        (arg, verdict)
    }

    /// `${...}`: plain forms are fine; indirection (`${!x}`), subscripts, substring offsets
    /// (arithmetic), assignment (`${x:=v}`) and transformations (`${x@P}`) are not.
    pub(super) fn expansion(&self, node: Node<'_>) -> Safety {
        let mut verdict = Safety::ReadOnly;
        let mut previous = "";
        let mut substring = false;
        for (_, child) in children(node) {
            let kind = child.kind();
            if !child.is_named() {
                match kind {
                    "${" | "}" | "#" | "##" | "%" | "%%" | "-" | ":-" | "+" | ":+" | "?" | ":?"
                    | "/" | "//" | "/#" | "/%" | "^" | "^^" | "," | ",," => {}
                    ":" => substring = true,
                    // `!` right after `${` is indirection; elsewhere it is unexpected too.
                    _ => return self.unknown(node),
                }
                previous = kind;
                continue;
            }
            verdict = verdict.join(match kind {
                "variable_name" | "special_variable_name" if !substring => Safety::ReadOnly,
                "number" if substring => Safety::ReadOnly,
                "subscript" => self.subscript(child),
                _ if substring => self.unknown(child),
                _ if previous == "${" => self.unknown(child),
                _ => self.word(child).1,
            });
        }
        verdict
    }

    /// `a[i]`: only literal indexes and `@` / `*`.
    pub(super) fn subscript(&self, node: Node<'_>) -> Safety {
        match node.child_by_field_name("index") {
            Some(index)
                if matches!(self.text(index), "@" | "*") || words::is_integer(self.text(index)) =>
            {
                Safety::ReadOnly
            }
            _ => self.unknown(node),
        }
    }
}
