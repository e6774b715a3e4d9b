//! `awk`, `gawk`, `mawk`: options, then a token scan of the program.
//!
//! A program is read-only unless it calls `system`, pipes (`print | "cmd"`,
//! `"cmd" | getline`, `|&`), redirects `print`/`printf` output (`>`, `>>`), or uses gawk's
//! `@` (indirect calls, `@load`, `@include`). Strings and regex literals are skipped; where
//! `/` could start either a regex or a division and awks may disagree, the program is not
//! understood.

use super::options::{scan, Flag, OptSpec};
use super::walk::Ctx;
use super::words::Arg;
use super::Safety;
use Flag::{Long, Short};

pub(crate) fn awk(_: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "FvfeiElW",
        short_opt_arg: "dDopL",
        long_arg: &[
            "field-separator",
            "assign",
            "file",
            "source",
            "include",
            "exec",
            "load",
        ],
        stop_at_operand: true,
    };
    let found = scan(&spec, args);
    // gawk: --dump-variables, --pretty-print, --profile write files.
    if found.has(&[
        Short('d'),
        Long("dump-variables"),
        Short('o'),
        Long("pretty-print"),
        Short('p'),
        Long("profile"),
    ]) {
        return Safety::Write;
    }
    let harmless = [
        Short('F'),
        Long("field-separator"),
        Short('v'),
        Long("assign"),
        Short('e'),
        Long("source"),
        Short('b'),
        Long("characters-as-bytes"),
        Short('c'),
        Long("traditional"),
        Short('P'),
        Long("posix"),
        Short('S'),
        Long("sandbox"),
        Short('r'),
        Long("re-interval"),
        Short('s'),
        Long("no-optimize"),
        Short('O'),
        Long("optimize"),
        Short('M'),
        Long("bignum"),
        Short('N'),
        Long("use-lc-numeric"),
        Short('n'),
        Long("non-decimal-data"),
        Short('k'),
        Long("csv"),
        Short('L'),
        Long("lint"),
        Short('t'),
        Long("lint-old"),
    ];
    // -f/-i/-E read program files, -l loads a shared library, -D debugs, -W is mawk's.
    if found.dynamic || !found.only(&harmless) {
        return Safety::Unknown;
    }
    let mut programs: Vec<Option<&str>> = found
        .values(Short('e'))
        .chain(found.values(Long("source")))
        .map(|v| v.and_then(Arg::lit))
        .collect();
    if programs.is_empty() {
        programs.push(found.operands.first().and_then(Arg::lit));
    }
    Safety::all(
        programs
            .into_iter()
            .map(|p| p.map_or(Safety::Unknown, program)),
    )
}

/// What came before a `/`, which decides between a regex literal and a division.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start, operator, `(`, `,`, `{`, `;`, newline, a control condition's `)`, `print`:
    /// a `/` here starts a regex.
    Operator,
    /// Name, number, string, regex, `)`, `]`: a `/` here divides.
    Operand,
    /// `++`, `--` (awks disagree) or `getline`: not understood before a `/`.
    Ambiguous,
}

/// Keywords after which an expression, so a regex, may start.
const BEFORE_EXPRESSION: &[&str] = &[
    "print", "printf", "return", "case", "do", "else", "in", "exit",
];

/// Verdict of an awk program text.
///
/// The scan never skips text it is unsure about: comments are read as code, and where
/// awks could disagree about a `/` the program is not understood. `system` and `@` are
/// refused wherever they appear, even in strings.
pub(crate) fn program(src: &str) -> Safety {
    if src.contains("system") || src.contains('@') {
        return Safety::Unknown;
    }
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut prev = Prev::Operator;
    // Open parentheses and brackets; `true` for the condition of `if`, `while`, `for`.
    let mut parens: Vec<bool> = Vec::new();
    let mut control_next = false;
    // Nesting depth at which the current `print`/`printf` statement started.
    let mut print_depth: Option<usize> = None;
    let mut verdict = Safety::ReadOnly;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        i += 1;
        match c {
            ' ' | '\t' | '\r' => continue,
            '\\' if next == Some('\n') => {
                i += 1;
                continue;
            }
            '"' => {
                let Some(end) = skip_string(&chars, i) else {
                    return Safety::Unknown;
                };
                // gawk's /inet/... special files are network connections.
                if chars[i..end].starts_with(&['/', 'i', 'n', 'e', 't']) {
                    return Safety::Unknown;
                }
                i = end;
                prev = Prev::Operand;
            }
            '/' if prev == Prev::Ambiguous => return Safety::Unknown,
            '/' if prev == Prev::Operator => {
                let Some(end) = skip_regex(&chars, i) else {
                    return Safety::Unknown;
                };
                i = end;
                prev = Prev::Operand;
            }
            'a'..='z' | 'A'..='Z' | '_' => {
                let start = i - 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                if matches!(word.as_str(), "print" | "printf") {
                    print_depth = Some(parens.len());
                }
                control_next = matches!(word.as_str(), "if" | "while" | "for" | "switch");
                prev = match word.as_str() {
                    "getline" => Prev::Ambiguous,
                    w if BEFORE_EXPRESSION.contains(&w) => Prev::Operator,
                    _ => Prev::Operand,
                };
                continue;
            }
            '0'..='9' | '.' => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                prev = Prev::Operand;
            }
            '|' if next == Some('|') => {
                i += 1;
                prev = Prev::Operator;
            }
            '|' => return Safety::Unknown, // pipes to and from commands, `|&`
            '>' if print_depth == Some(parens.len()) => {
                if !redirect_is_harmless(&chars, i) {
                    verdict = Safety::Write;
                }
                if next == Some('>') {
                    i += 1;
                }
                prev = Prev::Operator;
            }
            '+' | '-' if next == Some(c) => {
                i += 1;
                prev = if prev == Prev::Operand {
                    Prev::Ambiguous
                } else {
                    Prev::Operator
                };
            }
            '(' | '[' => {
                parens.push(c == '(' && control_next);
                prev = Prev::Operator;
            }
            ')' | ']' => {
                prev = match parens.pop() {
                    Some(true) => Prev::Operator,
                    _ => Prev::Operand,
                };
            }
            ';' | '}' | '{' => {
                if print_depth.is_some_and(|d| parens.len() <= d) {
                    print_depth = None;
                }
                prev = Prev::Operator;
            }
            _ => prev = Prev::Operator,
        }
        control_next = false;
    }
    verdict
}

/// Index just after the closing quote of a string whose content starts at `i`.
fn skip_string(chars: &[char], mut i: usize) -> Option<usize> {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return Some(i + 1),
            '\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// Index just after the `/` closing a regex literal whose content starts at `i`. An unescaped `/`
/// inside a bracket expression ends the regex in some awks and not in others.
fn skip_regex(chars: &[char], mut i: usize) -> Option<usize> {
    let mut in_bracket = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\n' => return None,
            '[' if !in_bracket => in_bracket = true,
            ']' if in_bracket => in_bracket = false,
            '/' if in_bracket => return None,
            '/' => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// After `>` in a print statement: `> "/dev/stdout"` or `> "/dev/stderr"` ending the
/// statement only prints; anything else is a file.
fn redirect_is_harmless(chars: &[char], after: usize) -> bool {
    let rest: String = chars[after..].iter().collect();
    let rest = rest.trim_start_matches('>').trim_start();
    ["\"/dev/stdout\"", "\"/dev/stderr\""].iter().any(|t| {
        rest.strip_prefix(t).is_some_and(|tail| {
            tail.trim_start().is_empty() || tail.trim_start().starts_with([';', '}', '\n'])
        })
    })
}
