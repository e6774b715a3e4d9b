//! `[[ ... ]]` and `[ ... ]` / `test`: reading, except where bash evaluates a word as
//! arithmetic or as a variable reference (array subscripts run command substitutions).

use tree_sitter::Node;

use super::walk::Ctx;
use super::walk::{children, is_word_kind, Walker};
use super::words::{self, Arg};
use super::Safety;

/// Arithmetic-comparison operators of `[[ ]]`: both operands are evaluated as arithmetic.
const ARITH_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

impl Walker<'_> {
    pub(super) fn test_command(&self, node: Node<'_>) -> Safety {
        let parts = children(node);
        let opener = parts.first().map(|(_, c)| c.kind());
        let inner = parts.iter().filter(|(_, c)| c.is_named()).map(|(_, c)| *c);
        match opener {
            Some("[[") => Safety::all(inner.map(|c| self.condition(c))),
            Some("[") => {
                let mut argv = Vec::new();
                let mut verdict = Safety::ReadOnly;
                for child in inner {
                    verdict = verdict.join(self.flatten_test(child, &mut argv));
                }
                verdict.join(test_args(&argv))
            }
            _ => self.unknown(node),
        }
    }

    /// `[[ ... ]]`: words are not split, but arithmetic operators and `-v` evaluate them.
    pub(super) fn condition(&self, node: Node<'_>) -> Safety {
        self.check_word_gaps(node);
        let parts = children(node);
        match node.kind() {
            "binary_expression" => {
                let arithmetic = parts.iter().any(|(field, c)| {
                    *field == Some("operator") && ARITH_TESTS.contains(&self.text(*c))
                });
                Safety::all(
                    parts
                        .iter()
                        .filter(|(field, c)| c.is_named() && *field != Some("operator"))
                        .map(|(_, c)| {
                            if arithmetic {
                                self.literal_integer(*c)
                            } else {
                                self.condition(*c)
                            }
                        }),
                )
            }
            "unary_expression" => {
                let names_variable = parts.iter().any(|(_, c)| {
                    matches!(self.text(*c), "-v" | "-R") && c.kind() == "test_operator"
                });
                Safety::all(
                    parts
                        .iter()
                        .filter(|(field, c)| c.is_named() && *field != Some("operator"))
                        .map(|(_, c)| match self.word(*c) {
                            (Arg::Lit(name), safety) if names_variable && words::is_name(&name) => {
                                safety
                            }
                            _ if names_variable => self.unknown(*c),
                            _ => self.condition(*c),
                        }),
                )
            }
            "parenthesized_expression" => Safety::all(
                parts
                    .iter()
                    .filter(|(_, c)| c.is_named())
                    .map(|(_, c)| self.condition(*c)),
            ),
            "test_operator" => Safety::ReadOnly,
            kind if is_word_kind(kind) => self.word(node).1,
            _ => self.unknown(node),
        }
    }

    pub(super) fn literal_integer(&self, node: Node<'_>) -> Safety {
        match self.word(node) {
            (Arg::Lit(text), safety) if words::is_integer(&text) => safety,
            _ => self.unknown(node),
        }
    }

    /// `[ ... ]` runs the `test` builtin on words: collect them in order.
    pub(super) fn flatten_test(&self, node: Node<'_>, argv: &mut Vec<Arg>) -> Safety {
        if is_word_kind(node.kind()) {
            let (arg, safety) = self.word(node);
            argv.push(arg);
            return safety;
        }
        if !node.is_named() && node.kind().contains('>') {
            // `[` is a plain command: `[ a > b ]` redirects its output to the file `b`.
            return Safety::Write;
        }
        if node.kind() == "test_operator" || !node.is_named() {
            argv.push(Arg::Lit(self.text(node).to_owned()));
            return Safety::ReadOnly;
        }
        self.check_word_gaps(node);
        match node.kind() {
            "binary_expression" | "unary_expression" | "parenthesized_expression" => Safety::all(
                children(node)
                    .into_iter()
                    .map(|(_, c)| self.flatten_test(c, argv)),
            ),
            _ => self.unknown(node),
        }
    }
}

pub(crate) fn test_command(_: Ctx, args: &[Arg]) -> Safety {
    test_args(args)
}

pub(crate) fn bracket_command(_: Ctx, args: &[Arg]) -> Safety {
    match args.split_last() {
        Some((last, inner)) if last.is("]") => test_args(inner),
        _ => Safety::Unknown,
    }
}

/// Binary operators of the `test` builtin.
const TEST_BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a",
    "-o",
];

/// The `test` builtin (`test`, `[`): `-v name` evaluates array subscripts in `name`, and a
/// dynamic word could turn into `-v`. Which word is an operator follows from the number of
/// words (POSIX), so a dynamic word is safe where it can only be an operand.
pub(crate) fn test_args(args: &[Arg]) -> Safety {
    let literal_op = |a: &Arg, ops: &[&str]| a.lit().is_some_and(|w| ops.contains(&w));
    for (i, arg) in args.iter().enumerate() {
        if literal_op(arg, &["-v", "-R"])
            && !args
                .get(i + 1)
                .and_then(Arg::lit)
                .is_some_and(words::is_name)
        {
            return Safety::Unknown;
        }
    }
    if args.iter().all(|a| !a.is_dynamic()) {
        return Safety::ReadOnly;
    }
    // An unquoted expansion may split into any number of words, operators included.
    if args.iter().any(|a| matches!(a, Arg::Dynamic)) {
        return Safety::Unknown;
    }
    let operands_only = match args {
        [_] => true,
        [op, _] => op.lit().is_some_and(|w| w != "-v" && w != "-R"),
        [_, op, _] => literal_op(op, TEST_BINARY),
        [bang, _, op, _] => bang.is("!") && literal_op(op, TEST_BINARY),
        _ => false,
    };
    if operands_only {
        Safety::ReadOnly
    } else {
        Safety::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::lits;

    #[test]
    fn test_builtin_words() {
        assert_eq!(test_args(&lits(&["-f", "x"])), Safety::ReadOnly);
        assert_eq!(test_args(&lits(&["-v", "a[$(x)]"])), Safety::Unknown);
        assert_eq!(test_args(&[Arg::Dynamic, Arg::Dynamic]), Safety::Unknown);
        assert_eq!(
            test_args(&[Arg::Lit("-n".into()), Arg::DynamicWord]),
            Safety::ReadOnly
        );
        assert_eq!(
            test_args(&[Arg::Lit("-n".into()), Arg::Dynamic]),
            Safety::Unknown
        );
        assert_eq!(
            test_args(&[Arg::DynamicWord, Arg::Lit("=".into()), Arg::DynamicWord]),
            Safety::ReadOnly
        );
    }
}
