//! A getopt-like scanner for command-line options, shared by the command rules.
//!
//! It errs on the side of seeing options: an option letter it does not know to take an
//! argument is read as a flag, so the letters after it are read as flags too. That can only
//! make a rule see a dangerous option that is not there, never miss one.

use super::words::Arg;

/// How a program reads its options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptSpec {
    /// Short options that take an argument, attached (`-ofile`) or in the next word.
    pub short_arg: &'static str,
    /// Short options whose optional argument can only be attached (`-i.bak`).
    pub short_opt_arg: &'static str,
    /// Long options (without `--`) that take an argument in the next word when not given
    /// with `=`.
    pub long_arg: &'static [&'static str],
    /// Options end at the first operand (POSIX, getopt `+`); otherwise options may follow
    /// operands (GNU argument permutation).
    pub stop_at_operand: bool,
}

impl OptSpec {
    /// Only flags, GNU permutation.
    pub(crate) const FLAGS: OptSpec = OptSpec {
        short_arg: "",
        short_opt_arg: "",
        long_arg: &[],
        stop_at_operand: false,
    };
}

/// One option as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opt {
    Short(char, Option<Arg>),
    /// Name without `--`, possibly abbreviated, and its value.
    Long(String, Option<Arg>),
}

/// A named option, matched against what [`scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flag {
    Short(char),
    /// Full long name without `--`; abbreviations of it match too.
    Long(&'static str),
}

/// What a command line holds, split by [`scan`].
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub opts: Vec<Opt>,
    pub operands: Vec<Arg>,
    /// A dynamic word stood where an option could be (it may be any option at run time),
    /// or a value that may split into several words was given to an option.
    pub dynamic: bool,
    /// Index in the scanned slice of the first word after the options when
    /// `stop_at_operand` is set (the operand that ended them, or the end).
    pub rest: usize,
}

impl Scan {
    /// Whether any of these options was given.
    pub(crate) fn has(&self, flags: &[Flag]) -> bool {
        self.opts
            .iter()
            .any(|opt| flags.iter().any(|f| matches(opt, *f)))
    }

    /// Values given to an option.
    pub(crate) fn values(&self, flag: Flag) -> impl Iterator<Item = Option<&Arg>> + '_ {
        self.opts
            .iter()
            .filter(move |opt| matches(opt, flag))
            .map(|opt| match opt {
                Opt::Short(_, v) | Opt::Long(_, v) => v.as_ref(),
            })
    }

    /// Whether every option given is one of these.
    pub(crate) fn only(&self, allowed: &[Flag]) -> bool {
        self.opts
            .iter()
            .all(|opt| allowed.iter().any(|f| matches(opt, *f)))
    }
}

/// Whether an option as written names `flag`. A long option matches every full name it is
/// a prefix of, as GNU getopt accepts unambiguous abbreviations.
pub(crate) fn matches(opt: &Opt, flag: Flag) -> bool {
    match (opt, flag) {
        (Opt::Short(c, _), Flag::Short(f)) => *c == f,
        (Opt::Long(name, _), Flag::Long(full)) => {
            !name.is_empty() && full.starts_with(name.as_str())
        }
        _ => false,
    }
}

/// Splits `args` (without the program name) into options and operands.
pub(crate) fn scan(spec: &OptSpec, args: &[Arg]) -> Scan {
    let mut out = scan_words(spec, args);
    // An option value that may split into several words shifts every word after it.
    out.dynamic |= out.opts.iter().any(|opt| {
        matches!(
            opt,
            Opt::Short(_, Some(Arg::Dynamic)) | Opt::Long(_, Some(Arg::Dynamic))
        )
    });
    out
}

fn scan_words(spec: &OptSpec, args: &[Arg]) -> Scan {
    let mut out = Scan {
        rest: args.len(),
        ..Scan::default()
    };
    let mut i = 0;
    while i < args.len() {
        let word = match &args[i] {
            dynamic @ (Arg::Dynamic | Arg::DynamicWord) => {
                out.dynamic = true;
                if spec.stop_at_operand {
                    out.rest = i;
                    out.operands.extend(args[i..].iter().cloned());
                    return out;
                }
                out.operands.push(dynamic.clone());
                i += 1;
                continue;
            }
            Arg::Lit(word) => word.as_str(),
        };
        i += 1;
        if word == "--" {
            out.rest = i;
            out.operands.extend(args[i..].iter().cloned());
            return out;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(Arg::Lit(value.to_owned()))),
                None => (long, None),
            };
            let value = match value {
                None if spec
                    .long_arg
                    .iter()
                    .any(|l| !name.is_empty() && l.starts_with(name)) =>
                {
                    let next = args.get(i).cloned();
                    i += 1;
                    next
                }
                v => v,
            };
            out.opts.push(Opt::Long(name.to_owned(), value));
        } else if word.len() > 1 && word.starts_with('-') {
            i = short_cluster(spec, &word[1..], args, i, &mut out.opts);
        } else {
            if spec.stop_at_operand {
                out.rest = i - 1;
                out.operands.extend(args[i - 1..].iter().cloned());
                return out;
            }
            out.operands.push(Arg::Lit(word.to_owned()));
        }
    }
    out
}

/// Reads one cluster of short options (`-abc`), returning the index of the next word.
fn short_cluster(
    spec: &OptSpec,
    cluster: &str,
    args: &[Arg],
    mut next: usize,
    opts: &mut Vec<Opt>,
) -> usize {
    for (at, c) in cluster.char_indices() {
        let rest = &cluster[at + c.len_utf8()..];
        if spec.short_arg.contains(c) {
            let value = if rest.is_empty() {
                next += 1;
                args.get(next - 1).cloned()
            } else {
                Some(Arg::Lit(rest.to_owned()))
            };
            opts.push(Opt::Short(c, value));
            return next;
        }
        if spec.short_opt_arg.contains(c) {
            let value = (!rest.is_empty()).then(|| Arg::Lit(rest.to_owned()));
            opts.push(Opt::Short(c, value));
            return next;
        }
        opts.push(Opt::Short(c, None));
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::lits;

    const SORT: OptSpec = OptSpec {
        short_arg: "kStTo",
        short_opt_arg: "",
        long_arg: &["output", "key"],
        stop_at_operand: false,
    };

    #[test]
    fn clusters_and_values() {
        let s = scan(&SORT, &lits(&["-rn", "-to", "a", "-o", "out", "b"]));
        assert!(s.has(&[Flag::Short('o')]));
        assert!(s.has(&[Flag::Short('r')]));
        assert_eq!(s.operands, lits(&["a", "b"]));
        let s = scan(&SORT, &lits(&["-t", "-o", "a"]));
        assert!(!s.has(&[Flag::Short('o')]));
    }

    #[test]
    fn long_abbreviations_and_double_dash() {
        let s = scan(&SORT, &lits(&["--out=x", "--", "-o"]));
        assert!(s.has(&[Flag::Long("output")]));
        assert!(!s.has(&[Flag::Short('o')]));
        assert_eq!(s.operands, lits(&["-o"]));
        let s = scan(&SORT, &lits(&["--outp", "f", "g"]));
        assert_eq!(s.operands, lits(&["g"]));
    }

    #[test]
    fn stops_at_first_operand() {
        let spec = OptSpec {
            stop_at_operand: true,
            ..OptSpec::FLAGS
        };
        let s = scan(&spec, &lits(&["-a", "cmd", "-b"]));
        assert_eq!(s.rest, 1);
        assert_eq!(s.operands, lits(&["cmd", "-b"]));
    }
}
