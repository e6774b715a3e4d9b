//! Words computed at run time: an argument or redirect target holding an expansion is
//! out of scope unless its value can be known (a literal set once before at the top
//! level), it is a `for` loop's variable standing alone over checked words, or one of
//! bash's numbers.

use super::{plain_text, Facts};
use crate::walk::children;
use crate::words;
use tree_sitter::Node;

/// An argument (or redirect target) that holds an expansion.
pub(super) struct Computed {
    pub(super) text: String,
    pub(super) start: usize,
    /// Variables it expands, plainly (`$x`, `${x}`).
    pub(super) names: Vec<String>,
    /// The variable it is, when it is nothing else (`$f`, `"$f"`, `${f}`).
    pub(super) whole: Option<String>,
    /// It holds something only known by running it (a command substitution, arithmetic,
    /// an expansion with an operator).
    pub(super) opaque: bool,
}

impl Facts {
    /// The value of a computed word when it can be known, `Ok(None)` when it is a loop
    /// variable over words checked on their own or one of bash's numbers, or why not.
    pub(super) fn computed_value(&self, word: &Computed) -> Result<Option<String>, String> {
        let not_known = || Err(format!("`{}` is computed at run time", word.text));
        if word.opaque {
            return not_known();
        }
        if word.names.iter().all(|n| is_numeric_special(n)) {
            return Ok(None);
        }
        if self.other_assignments {
            return not_known();
        }
        let once = |name: &str| self.assignments.get(name) == Some(&1);
        if let Some(var) = &word.whole {
            let loop_var = once(var)
                && !self.literals.contains_key(var)
                && !self.computed_loops.contains(var)
                && self.assigned.contains(var);
            if loop_var {
                return Ok(None);
            }
        }
        // Set once, before, at the top level, to a literal that needs no quoting: the
        // word's value is the text with the values put in.
        let mut text = word.text.clone();
        for name in &word.names {
            let Some((value, end)) = self.literals.get(name) else {
                return not_known();
            };
            let plain = value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/+-@:%=".contains(c));
            if !once(name) || *end > word.start || !plain || words::has_brace_expansion(&text) {
                return not_known();
            }
            text = text.replace(&format!("${{{name}}}"), value);
            text = replace_variable(&text, name, value);
        }
        Ok(Some(plain_text(&text)))
    }
}

/// `$name` replaced by `value` where `name` is not followed by more of a name.
fn replace_variable(text: &str, name: &str, value: &str) -> String {
    let pattern = format!("${name}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&pattern) {
        let after = &rest[at + pattern.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            out.push_str(&pattern);
        } else {
            out.push_str(value);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Bash's own variables whose value is a number or a flag set: `$?`, `$#`, `$$`, `$!`,
/// `$-` and the positional parameters (empty under `bash -c`).
pub(super) fn is_numeric_special(name: &str) -> bool {
    matches!(name, "?" | "#" | "$" | "!" | "-") || name.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a word holds an expansion of any kind.
pub(super) fn has_expansion(node: Node<'_>) -> bool {
    if matches!(
        node.kind(),
        "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
    ) {
        return true;
    }
    children(node).into_iter().any(|(_, c)| has_expansion(c))
}

/// The variables a word expands plainly, and whether it holds anything else computed.
pub(super) fn expansions(src: &str, node: Node<'_>, names: &mut Vec<String>, opaque: &mut bool) {
    match node.kind() {
        "simple_expansion" => match plain_expansion_name(src, node) {
            Some(name) => names.push(name),
            None => *opaque = true,
        },
        "expansion" => match plain_expansion_name(src, node) {
            Some(name) => names.push(name),
            None => *opaque = true,
        },
        "command_substitution" | "process_substitution" | "arithmetic_expansion" => *opaque = true,
        _ => {
            for (_, child) in children(node) {
                expansions(src, child, names, opaque);
            }
        }
    }
}

/// `x` for `$x` and `${x}`; `None` for any other form (`${x:-y}`, `${#x}`, `$@`, ...).
fn plain_expansion_name(src: &str, node: Node<'_>) -> Option<String> {
    let text = src.get(node.byte_range())?;
    let name = text
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .or_else(|| text.strip_prefix('$'))?;
    (words::is_name(name) || is_numeric_special(name)).then(|| name.to_owned())
}

/// The variable a word is and nothing else: `$f`, `"$f"`, `${f}`, `"${f}"`.
pub(super) fn whole_variable(src: &str, node: Node<'_>) -> Option<String> {
    match node.kind() {
        "simple_expansion" | "expansion" => plain_expansion_name(src, node),
        "string" => {
            let parts: Vec<_> = children(node)
                .into_iter()
                .filter(|(_, c)| c.kind() != "\"")
                .collect();
            match parts.as_slice() {
                [(_, only)] => whole_variable(src, *only),
                _ => None,
            }
        }
        _ => None,
    }
}

/// An assignment's value when it is a plain literal (no expansion).
pub(super) fn literal_value(src: &str, node: Node<'_>) -> Option<String> {
    if has_expansion(node)
        || !matches!(
            node.kind(),
            "word" | "raw_string" | "string" | "concatenation"
        )
    {
        return None;
    }
    let text = src.get(node.byte_range())?;
    if words::has_brace_expansion(text) || text.contains(['*', '?', '[']) {
        return None;
    }
    Some(plain_text(text))
}
