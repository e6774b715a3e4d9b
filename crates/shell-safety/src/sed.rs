//! `sed`: options, then a scan of the script for the commands that write (`w`, `W`,
//! `s///w`) or run programs (`e`, `s///e`).

use super::options::{scan, Flag, OptSpec};
use super::walk::Ctx;
use super::words::Arg;
use super::Safety;
use Flag::{Long, Short};

pub(crate) fn sed(_: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "efl",
        short_opt_arg: "i",
        long_arg: &["expression", "file", "line-length"],
        stop_at_operand: false,
    };
    let found = scan(&spec, args);
    if found.has(&[Short('i'), Long("in-place")]) {
        return Safety::Write;
    }
    if found.dynamic || found.has(&[Short('f'), Long("file")]) {
        return Safety::Unknown; // script from a file, or words known only at run time
    }
    let mut scripts: Vec<Option<&str>> = Vec::new();
    for flag in [Short('e'), Long("expression")] {
        scripts.extend(found.values(flag).map(|v| v.and_then(Arg::lit)));
    }
    if scripts.is_empty() {
        scripts.push(found.operands.first().and_then(Arg::lit));
    }
    let scripts: Option<Vec<&str>> = scripts.into_iter().collect();
    match scripts {
        Some(parts) => script(&parts.join("\n")),
        None => Safety::Unknown,
    }
}

/// Verdict of a sed script (GNU syntax).
pub(crate) fn script(src: &str) -> Safety {
    let mut p = Parser {
        chars: src.chars().collect(),
        at: 0,
    };
    match p.commands() {
        Some(verdict) => verdict,
        None => Safety::Unknown,
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    /// The rest of the line, without its newline (file names and text run to its end).
    fn rest_of_line(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            out.push(c);
            self.at += 1;
        }
        out
    }

    /// `None` when the script is not understood.
    fn commands(&mut self) -> Option<Safety> {
        let mut verdict = Safety::ReadOnly;
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.at += 1;
            }
            if self.peek().is_none() {
                return Some(verdict);
            }
            self.address()?;
            verdict = verdict.join(self.command()?);
        }
    }

    /// `[addr1[,addr2]][!]`: line numbers, `$`, `first~step`, `/re/` or `\cREc`.
    fn address(&mut self) -> Option<()> {
        if self.one_address()? {
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.at += 1;
                self.skip_blanks();
                if matches!(self.peek(), Some('+' | '~')) {
                    self.at += 1;
                }
                if !self.one_address()? {
                    return None;
                }
            }
        }
        self.skip_blanks();
        while self.peek() == Some('!') {
            self.at += 1;
            self.skip_blanks();
        }
        Some(())
    }

    /// Reads one address if there is one.
    fn one_address(&mut self) -> Option<bool> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                while matches!(self.peek(), Some(c) if c.is_ascii_digit() || c == '~') {
                    self.at += 1;
                }
            }
            Some('$') => self.at += 1,
            Some('/') => {
                self.at += 1;
                self.delimited('/')?;
                self.regex_flags();
            }
            Some('\\') => {
                self.at += 1;
                let delimiter = self.bump()?;
                if delimiter == '\n' || delimiter == '\\' {
                    return None;
                }
                self.delimited(delimiter)?;
                self.regex_flags();
            }
            _ => return Some(false),
        }
        Some(true)
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    /// Skips to the unescaped `delimiter` that ends a regex or replacement. A bracket
    /// expression holding the delimiter unescaped is read differently by sed versions, so it
    /// is not understood.
    fn delimited(&mut self, delimiter: char) -> Option<()> {
        loop {
            match self.bump()? {
                '\n' => return None,
                '\\' => {
                    self.bump()?;
                }
                '[' => self.bracket(delimiter)?,
                c if c == delimiter => return Some(()),
                _ => {}
            }
        }
    }

    fn bracket(&mut self, delimiter: char) -> Option<()> {
        if self.peek() == Some('^') {
            self.at += 1;
        }
        if self.peek() == Some(']') {
            self.at += 1;
        }
        let mut prev = '[';
        loop {
            let c = self.bump()?;
            match c {
                '\n' => return None,
                ']' if prev == '\\' => return None, // `[\]]`: read differently too
                ']' => return Some(()),
                '[' if matches!(self.peek(), Some(':' | '=' | '.')) => {
                    let kind = self.bump()?;
                    while !(self.bump()? == kind && self.peek() == Some(']')) {}
                    self.at += 1;
                }
                c if c == delimiter && prev != '\\' => return None,
                _ => {}
            }
            prev = c;
        }
    }

    /// One command after its address; `None` when not understood.
    fn command(&mut self) -> Option<Safety> {
        let verdict = match self.bump()? {
            '{' => return Some(Safety::ReadOnly),
            '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z'
            | 'F' => Safety::ReadOnly,
            'l' | 'L' | 'q' | 'Q' => {
                self.skip_blanks();
                while matches!(self.peek(), Some(c) if c.is_ascii_digit()) {
                    self.at += 1;
                }
                Safety::ReadOnly
            }
            '#' => {
                self.rest_of_line();
                Safety::ReadOnly
            }
            'a' | 'i' | 'c' => {
                self.text();
                Safety::ReadOnly
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                self.label();
                Safety::ReadOnly
            }
            'r' | 'R' => {
                self.rest_of_line();
                Safety::ReadOnly
            }
            'w' | 'W' => write_to(self.rest_of_line().trim()),
            'e' => return Some(Safety::Unknown),
            's' => self.substitute()?,
            'y' => {
                let delimiter = self.bump()?;
                if matches!(delimiter, '\n' | '\\') {
                    return None;
                }
                self.plain_delimited(delimiter)?;
                self.plain_delimited(delimiter)?;
                Safety::ReadOnly
            }
            _ => return None,
        };
        self.end_of_command()?;
        Some(verdict)
    }

    /// Text of `a`, `i`, `c`: to the end of the line, continued by a final `\`.
    fn text(&mut self) {
        while self.rest_of_line().ends_with('\\') && self.peek() == Some('\n') {
            self.at += 1;
        }
    }

    /// A label. sed versions end it at different characters; stopping at the first
    /// candidate leaves the most text to be read as commands.
    fn label(&mut self) {
        self.skip_blanks();
        while !matches!(self.peek(), None | Some(';' | '\n' | '}' | ' ' | '\t')) {
            self.at += 1;
        }
    }

    /// After a command: blanks, then `;`, `}`, a newline, a comment or the end.
    fn end_of_command(&mut self) -> Option<()> {
        self.skip_blanks();
        match self.peek() {
            None | Some(';' | '\n' | '}' | '#') => Some(()),
            Some(_) => None,
        }
    }

    /// Replacement of `s` and parts of `y`: a backslash escapes anything (newlines too), no
    /// bracket expressions.
    fn plain_delimited(&mut self, delimiter: char) -> Option<()> {
        loop {
            match self.bump()? {
                '\n' => return None,
                '\\' => {
                    self.bump()?;
                }
                c if c == delimiter => return Some(()),
                _ => {}
            }
        }
    }

    /// `s/re/replacement/flags`: flag `w FILE` writes, flag `e` runs the pattern space.
    fn substitute(&mut self) -> Option<Safety> {
        let delimiter = self.bump()?;
        if matches!(delimiter, '\n' | '\\') {
            return None;
        }
        self.delimited(delimiter)?;
        self.plain_delimited(delimiter)?;
        loop {
            match self.peek() {
                Some('g' | 'p' | 'i' | 'I' | 'm' | 'M') => self.at += 1,
                Some(c) if c.is_ascii_digit() => self.at += 1,
                Some('e') => return Some(Safety::Unknown),
                Some('w') => {
                    self.at += 1;
                    return Some(write_to(self.rest_of_line().trim()));
                }
                _ => return Some(Safety::ReadOnly),
            }
        }
    }
}

fn write_to(file: &str) -> Safety {
    match file {
        "/dev/stdout" | "/dev/stderr" => Safety::ReadOnly,
        _ => Safety::Write,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts() {
        for s in [
            "p",
            "1,5p",
            "/a/,/b/d",
            "s/a/b/g",
            "s|a/b|c|2",
            "$!N;P;D",
            ":a;N;ba",
            "y/abc/xyz/",
            "/x/{p;q}",
            "1a text; w f",
            "s/[/]x/y/p",
        ] {
            let expected = if s == "s/[/]x/y/p" {
                Safety::Unknown
            } else {
                Safety::ReadOnly
            };
            assert_eq!(script(s), expected, "{s}");
        }
        for s in ["w out", "s/a/b/w out", "1,3W f", "p;w f", "s/a/b/gw f"] {
            assert_eq!(script(s), Safety::Write, "{s}");
        }
        for s in ["e", "s/a/b/e", "1e ls", "k", "s/a/b", "/x/ r f\nw g"] {
            let expected = if s.ends_with("w g") {
                Safety::Write
            } else {
                Safety::Unknown
            };
            assert_eq!(script(s), expected, "{s}");
        }
        assert_eq!(script("s/x/y/w /dev/stdout"), Safety::ReadOnly);
        assert_eq!(script("s/[\\/]/x/"), Safety::ReadOnly);
    }
}
