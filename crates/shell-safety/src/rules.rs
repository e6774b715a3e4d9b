//! Small rules of the command table: option and operand checks that need a few lines of
//! code.

use super::options::{scan, Flag, OptSpec};
use super::walk::Ctx;
use super::words::{self, Arg};
use super::Safety;
use Flag::{Long, Short};

/// `tail`: `-f`/`-F`/`--follow` never end; `-5f` and `+5f` are the obsolete spellings.
pub(crate) fn tail(_: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "cns",
        short_opt_arg: "",
        long_arg: &[
            "bytes",
            "lines",
            "sleep-interval",
            "pid",
            "max-unchanged-stats",
        ],
        stop_at_operand: false,
    };
    let found = scan(&spec, args);
    let obsolete_follow = found.operands.iter().any(|a| {
        a.lit()
            .is_some_and(|w| w.starts_with('+') && w.contains('f'))
    });
    if found.dynamic || obsolete_follow || found.has(&[Short('f'), Short('F'), Long("follow")]) {
        Safety::Unknown
    } else {
        Safety::ReadOnly
    }
}

/// `uniq [in [out]]`: a second operand is the output file.
pub(crate) fn uniq(_: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "fsw",
        short_opt_arg: "",
        long_arg: &["skip-fields", "skip-chars", "check-chars"],
        stop_at_operand: false,
    };
    let found = scan(&spec, args);
    if found.operands.len() > 1 {
        Safety::Write
    } else if found.dynamic {
        Safety::Unknown
    } else {
        Safety::ReadOnly
    }
}

/// `printf -v name` assigns a variable (with array subscripts evaluated).
pub(crate) fn printf(_: Ctx, args: &[Arg]) -> Safety {
    match args.first() {
        Some(Arg::Dynamic | Arg::DynamicWord) => Safety::Unknown,
        Some(first) if first.is("-v") || first.lit().is_some_and(|f| f.starts_with("-v")) => {
            Safety::Unknown
        }
        _ => Safety::ReadOnly,
    }
}

/// `read [-rs] [-d D] [-n N] [-p PROMPT] [-t T] [-u FD] [-a NAME] [NAME...]` assigns
/// variables: only private names (a subscript in a name would be evaluated).
pub(crate) fn read(_: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "adinNptu",
        short_opt_arg: "",
        long_arg: &[],
        stop_at_operand: true,
    };
    let found = scan(&spec, args);
    let private = |a: &Arg| a.lit().is_some_and(words::is_private_variable);
    let known = [
        Short('r'),
        Short('s'),
        Short('a'),
        Short('d'),
        Short('n'),
        Short('N'),
        Short('p'),
        Short('t'),
        Short('u'),
    ];
    let names_ok = found.values(Short('a')).all(|v| v.is_some_and(private))
        && found.operands.iter().all(private);
    if names_ok && found.only(&known) && !found.dynamic {
        Safety::ReadOnly
    } else {
        Safety::Unknown
    }
}

/// `set` with shell options only (`-euo pipefail`, `+x`), or alone (prints variables);
/// other words would change the positional parameters.
pub(crate) fn set(_: Ctx, args: &[Arg]) -> Safety {
    const NAMES: &[&str] = &[
        "errexit",
        "nounset",
        "pipefail",
        "xtrace",
        "verbose",
        "noglob",
        "noclobber",
        "noexec",
    ];
    let mut expect_name = false;
    for arg in args {
        let Some(word) = arg.lit() else {
            return Safety::Unknown;
        };
        if expect_name {
            if !NAMES.contains(&word) {
                return Safety::Unknown;
            }
            expect_name = false;
            continue;
        }
        let Some(flags) = word.strip_prefix(['-', '+']) else {
            return Safety::Unknown;
        };
        let o_last = flags.find('o').is_none_or(|at| at + 1 == flags.len());
        if flags.is_empty() || !o_last || !flags.chars().all(|c| "euxvfCno".contains(c)) {
            return Safety::Unknown;
        }
        expect_name = flags.ends_with('o');
    }
    Safety::ReadOnly
}

/// `hostname` prints the name; given arguments it may set it.
pub(crate) fn no_arguments(_: Ctx, args: &[Arg]) -> Safety {
    if args.is_empty() {
        Safety::ReadOnly
    } else {
        Safety::Unknown
    }
}
