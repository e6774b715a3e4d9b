//! Words of a command line: literal after quote removal, or only known at run time.

/// One word of a command as the program will receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Known exactly: quotes and escapes removed, no expansion left.
    Lit(String),
    /// Known only at run time (variables, globs, brace expansion, substitutions). It may
    /// even expand to several words or to none.
    Dynamic,
}

impl Arg {
    pub(crate) fn lit(&self) -> Option<&str> {
        match self {
            Arg::Lit(s) => Some(s),
            Arg::Dynamic => None,
        }
    }

    pub(crate) fn is(&self, text: &str) -> bool {
        self.lit() == Some(text)
    }

    pub(crate) fn is_dynamic(&self) -> bool {
        matches!(self, Arg::Dynamic)
    }
}

/// Builds an argument vector of literals (used by tests of rules and nested commands).
pub(crate) fn lits(words: &[&str]) -> Vec<Arg> {
    words.iter().map(|w| Arg::Lit((*w).to_owned())).collect()
}

/// Value of an unquoted shell word after quote removal, or `None` when the shell would
/// expand it (glob characters, `$`, backquotes, brace expansion, extglob, quotes the
/// parser did not split off).
pub(crate) fn unquote_word(raw: &str) -> Option<String> {
    if has_brace_expansion(raw) {
        return None;
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(escaped) => out.push(escaped),
            },
            '*' | '?' | '[' | '$' | '`' | '\'' | '"' | '(' | ')' => return None,
            _ => out.push(c),
        }
    }
    Some(out)
}

/// Content of a double-quoted string piece: a backslash only escapes `$`, `` ` ``, `"`,
/// `\` and newline there.
pub(crate) fn unescape_double_quoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    out.push(next);
                    chars.next();
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Content of an ANSI-C string `$'...'` when it has no escape to decode.
pub(crate) fn ansi_c_plain(raw: &str) -> Option<String> {
    let inner = raw.strip_prefix("$'")?.strip_suffix('\'')?;
    (!inner.contains('\\')).then(|| inner.to_owned())
}

/// Whether an unquoted word contains an (unescaped) `{` later followed by `,` or `..` and
/// a `}`: bash would brace-expand it into several words. `{}` alone is not expanded.
pub(crate) fn has_brace_expansion(raw: &str) -> bool {
    let mut escaped = false;
    let mut open = false;
    let mut separator = false;
    let mut prev = '\0';
    for c in raw.chars() {
        if escaped {
            escaped = false;
            prev = '\0';
            continue;
        }
        match c {
            '\\' => escaped = true,
            '{' => open = true,
            ',' if open => separator = true,
            '.' if open && prev == '.' => separator = true,
            '}' if open && separator => return true,
            _ => {}
        }
        prev = c;
    }
    false
}

/// Whether a word is a plain decimal integer (as bash arithmetic reads it safely).
pub(crate) fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a word is a plain shell variable name.
pub(crate) fn is_name(text: &str) -> bool {
    let mut bytes = text.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_plain_and_escaped_words() {
        assert_eq!(unquote_word("ls").as_deref(), Some("ls"));
        assert_eq!(unquote_word("\\rm").as_deref(), Some("rm"));
        assert_eq!(unquote_word("r\\m").as_deref(), Some("rm"));
        assert_eq!(unquote_word("\\*.rs").as_deref(), Some("*.rs"));
        assert_eq!(unquote_word("~/x").as_deref(), Some("~/x"));
        assert_eq!(unquote_word("{}").as_deref(), Some("{}"));
        assert_eq!(unquote_word("*.rs"), None);
        assert_eq!(unquote_word("a?"), None);
        assert_eq!(unquote_word("a$"), None);
        assert_eq!(unquote_word("-{n,i}"), None);
        assert_eq!(unquote_word("{1..3}"), None);
    }

    #[test]
    fn double_quoted_escapes() {
        assert_eq!(unescape_double_quoted(r#"a\$b\"c\n"#), "a$b\"c\\n");
    }

    #[test]
    fn integers_and_names() {
        assert!(is_integer("-12"));
        assert!(!is_integer("x"));
        assert!(!is_integer(""));
        assert!(is_name("_a1"));
        assert!(!is_name("a[1]"));
        assert!(!is_name("1a"));
    }
}
