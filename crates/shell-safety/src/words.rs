//! Words of a command line: literal after quote removal, or only known at run time.

/// One word of a command as the program will receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Known exactly: quotes and escapes removed, no expansion left.
    Lit(String),
    /// Known only at run time, and may expand to several words or to none (unquoted
    /// variables and substitutions, globs, brace expansion, `"$@"`).
    Dynamic,
    /// Exactly one word, known only at run time (`"$x"`, `"$(cmd)"`).
    DynamicWord,
}

impl Arg {
    pub(crate) fn lit(&self) -> Option<&str> {
        match self {
            Arg::Lit(s) => Some(s),
            Arg::Dynamic | Arg::DynamicWord => None,
        }
    }

    pub(crate) fn is(&self, text: &str) -> bool {
        self.lit() == Some(text)
    }

    pub(crate) fn is_dynamic(&self) -> bool {
        !matches!(self, Arg::Lit(_))
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

/// Whether raw text the parser left unparsed holds an expansion bash would still perform
/// and that can run code: `$(...)`, `${...}`, `$[...]` or a backquote (not escaped by a
/// backslash).
pub(crate) fn has_unparsed_expansion(raw: &str) -> bool {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '`' => return true,
            '$' if matches!(chars.peek(), Some('(' | '{' | '[')) => return true,
            _ => {}
        }
    }
    false
}

/// Whether an unquoted word holds a blank or an operator character that no backslash
/// escapes: bash would split the word there.
pub(crate) fn has_unescaped_operator(raw: &str) -> bool {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            ' ' | '\t' | '\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')' => return true,
            _ => {}
        }
    }
    false
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

/// Variables an assignment before a command (`NAME=value cmd`, `env NAME=value cmd`) may
/// set: locale and display settings that no read-only program turns into code or writes.
const HARMLESS_ENV: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "COLUMNS",
];

/// Whether exporting `name=value` to a program cannot change what it does beyond
/// formatting (no paths, except a zoneinfo name for `TZ`).
pub(crate) fn is_harmless_env(name: &str, value: &str) -> bool {
    HARMLESS_ENV.contains(&name)
        && value.chars().all(|c| {
            c.is_ascii_alphanumeric() || "_.,:@+-".contains(c) || (c == '/' && name == "TZ")
        })
}

/// Lower-case names that still mean something to programs or to bash itself.
const SPECIAL_LOWERCASE: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "all_proxy",
    "no_proxy",
    "histchars",
    "auto_resume",
];

/// A variable the command may assign without affecting programs or the shell: bash's own
/// and the environment's conventional names are upper case.
pub(crate) fn is_private_variable(name: &str) -> bool {
    is_name(name)
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !SPECIAL_LOWERCASE.contains(&name)
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
    fn unparsed_expansions() {
        assert!(has_unparsed_expansion("$(rm x)"));
        assert!(has_unparsed_expansion("a${!x}"));
        assert!(has_unparsed_expansion("$[1]"));
        assert!(has_unparsed_expansion("`x`"));
        assert!(!has_unparsed_expansion("\\$(x) $x *.rs"));
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
