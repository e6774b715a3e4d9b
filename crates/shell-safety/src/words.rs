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

/// A word's text after quote removal, as bash does it: quotes join what they hold to the
/// text around them (`.""./x` is `../x`), a backslash escapes the next character outside
/// quotes, only `$`, `` ` ``, `"`, `\` inside double quotes, and nothing inside single
/// quotes, and a backslash-newline outside single quotes is removed (a line
/// continuation). Expansions stay as text (`$x`); `$'...'` keeps its escapes undecoded.
pub(crate) fn quote_removed(raw: &str) -> String {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
        AnsiC,
    }
    let mut out = String::with_capacity(raw.len());
    let mut quote = Quote::None;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Quote::None => match c {
                '\\' => match chars.next() {
                    Some('\n') | None => {}
                    Some(next) => out.push(next),
                },
                '\'' => quote = Quote::Single,
                '"' => quote = Quote::Double,
                '$' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    quote = Quote::AnsiC;
                }
                '$' if chars.peek() == Some(&'"') => {
                    chars.next();
                    quote = Quote::Double;
                }
                _ => out.push(c),
            },
            Quote::Single => match c {
                '\'' => quote = Quote::None,
                _ => out.push(c),
            },
            Quote::AnsiC => match c {
                '\\' => {
                    out.push(c);
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                '\'' => quote = Quote::None,
                _ => out.push(c),
            },
            Quote::Double => match c {
                '\\' => match chars.peek() {
                    Some('\n') => {
                        chars.next();
                    }
                    Some(&next @ ('$' | '`' | '"' | '\\')) => {
                        chars.next();
                        out.push(next);
                    }
                    _ => out.push(c),
                },
                '"' => quote = Quote::None,
                _ => out.push(c),
            },
        }
    }
    out
}

/// Whether a word holds an ANSI-C string (`$'...'`) with a backslash in it, whose
/// escapes bash decodes into other characters.
pub(crate) fn has_ansi_c_escape(raw: &str) -> bool {
    let mut rest = raw;
    while let Some(at) = rest.find("$'") {
        let body = &rest[at + 2..];
        let end = body.find('\'').unwrap_or(body.len());
        if body[..end].contains('\\') {
            return true;
        }
        rest = &body[end.min(body.len())..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1..];
    }
    false
}

/// Whether a backslash-newline sits between two non-blank characters: bash removes it
/// before it splits words (`.\<newline>./x` is `../x`), where the parser splits there.
/// One after a blank, the usual way to continue a long command, changes no word.
pub(crate) fn joins_lines(src: &str) -> bool {
    let bytes = src.as_bytes();
    bytes.windows(2).enumerate().any(|(i, pair)| {
        pair == b"\\\n"
            && i > 0
            && !bytes[i - 1].is_ascii_whitespace()
            && bytes.get(i + 2).is_some_and(|b| !b.is_ascii_whitespace())
    })
}

/// Most words one brace expansion may produce before it counts as too large to check.
const MAX_BRACE_WORDS: usize = 256;

/// The words bash's brace expansion makes of a raw word (quotes kept, for
/// [`quote_removed`] to remove): `{.,.}./x` is `../x ../x`, `a{1..3}` is `a1 a2 a3`.
/// A word without an expansion is itself. `None` when it would make more than
/// [`MAX_BRACE_WORDS`] words or holds a sequence it cannot read.
pub(crate) fn expand_braces(raw: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_into(raw, &mut out)?;
    Some(out)
}

fn expand_into(raw: &str, out: &mut Vec<String>) -> Option<()> {
    let Some((open, close, parts)) = first_brace(raw) else {
        out.push(raw.to_owned());
        return (out.len() <= MAX_BRACE_WORDS).then_some(());
    };
    let (prefix, suffix) = (&raw[..open], &raw[close + 1..]);
    let alternatives = match parts {
        BraceBody::List(items) => items,
        BraceBody::Sequence(body) => sequence(body)?,
    };
    for alternative in alternatives {
        expand_into(&format!("{prefix}{alternative}{suffix}"), out)?;
        if out.len() > MAX_BRACE_WORDS {
            return None;
        }
    }
    Some(())
}

enum BraceBody<'a> {
    List(Vec<String>),
    Sequence(&'a str),
}

/// The first unquoted `{...}` that bash expands (a list with a top-level comma, or a
/// `x..y` sequence), as its byte range and body; `${` and quoted braces are not.
fn first_brace(raw: &str) -> Option<(usize, usize, BraceBody<'_>)> {
    let bytes = raw.as_bytes();
    let mut i = 0;
    let (mut single, mut double) = (false, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if !single => i += 1,
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'{' if !single && !double && (i == 0 || bytes[i - 1] != b'$') => {
                if let Some(found) = brace_at(raw, i) {
                    return Some(found);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The expansion whose `{` is at `open`, if it is one.
fn brace_at(raw: &str, open: usize) -> Option<(usize, usize, BraceBody<'_>)> {
    let bytes = raw.as_bytes();
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let (mut single, mut double) = (false, false);
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if !single => i += 1,
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            _ if single || double => {}
            b'{' => depth += 1,
            b',' if depth == 0 => commas.push(i),
            b'}' if depth > 0 => depth -= 1,
            b'}' => {
                let body = &raw[open + 1..i];
                if commas.is_empty() {
                    return body
                        .contains("..")
                        .then_some((open, i, BraceBody::Sequence(body)));
                }
                let mut items = Vec::new();
                let mut start = open + 1;
                for comma in commas {
                    items.push(raw[start..comma].to_owned());
                    start = comma + 1;
                }
                items.push(raw[start..i].to_owned());
                return Some((open, i, BraceBody::List(items)));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The items of a `x..y[..step]` sequence of integers or single letters; `None` for any
/// other body (bash leaves those alone, but reading them is not worth the risk).
fn sequence(body: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = body.split("..").collect();
    let step: i64 = match parts.as_slice() {
        [_, _] => 1,
        [_, _, step] => step.parse::<i64>().ok()?.checked_abs()?.max(1),
        _ => return None,
    };
    let (from, to, letters) = match (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        (Ok(a), Ok(b)) => (a, b, false),
        _ => {
            let (a, b) = (single_letter(parts[0])?, single_letter(parts[1])?);
            (i64::from(a), i64::from(b), true)
        }
    };
    let count = (from.abs_diff(to) / step.unsigned_abs()) + 1;
    if count > MAX_BRACE_WORDS as u64 {
        return None;
    }
    let direction = if to >= from { step } else { -step };
    Some(
        (0..count as i64)
            .map(|n| from + n * direction)
            .map(|v| match (letters, u8::try_from(v)) {
                (true, Ok(b)) => char::from(b).to_string(),
                _ => v.to_string(),
            })
            .collect(),
    )
}

fn single_letter(text: &str) -> Option<u8> {
    match text.as_bytes() {
        [b] if b.is_ascii_alphabetic() => Some(*b),
        _ => None,
    }
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
    fn quote_removal_joins_and_continues_lines_as_bash_does() {
        assert_eq!(quote_removed(r#".""./x"#), "../x");
        assert_eq!(quote_removed("'.'./x"), "../x");
        assert_eq!(quote_removed(".\\\n./x"), "../x");
        assert_eq!(quote_removed("\".\\\n./x\""), "../x");
        assert_eq!(quote_removed("'a\\\nb'"), "a\\\nb");
        assert_eq!(quote_removed(r#""a\"b\$c\d""#), "a\"b$c\\d");
        assert_eq!(quote_removed(r"\/etc"), "/etc");
        assert_eq!(quote_removed("$'a\\x2e'"), "a\\x2e");
    }

    #[test]
    fn braces_expand_as_bash_expands_them() {
        let expand = |w: &str| expand_braces(w).unwrap();
        assert_eq!(expand("{.,.}./x"), ["../x", "../x"]);
        assert_eq!(expand("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
        assert_eq!(expand("{a,b}{1..2}"), ["a1", "a2", "b1", "b2"]);
        assert_eq!(expand("{c..a}"), ["c", "b", "a"]);
        assert_eq!(expand("{1..10..5}"), ["1", "6"]);
        assert_eq!(expand("{}"), ["{}"]);
        assert_eq!(expand("{a}"), ["{a}"]);
        assert_eq!(expand("${x,y}"), ["${x,y}"]);
        assert_eq!(expand("'{a,b}'"), ["'{a,b}'"]);
        assert_eq!(expand("\\{a,b}"), ["\\{a,b}"]);
        assert!(expand_braces("{1..100000}").is_none());
        assert!(expand_braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}").is_none());
        assert!(expand_braces("{x..y..z}").is_none());
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
