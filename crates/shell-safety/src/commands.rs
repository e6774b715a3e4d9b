//! The table of command rules, and the small rules that fit here.
//!
//! A program missing from the table is `Unknown`. Rules see the arguments after the
//! program name as [`Arg`]s: literal, or dynamic (known only at run time).

use super::options::{scan, Flag, OptSpec};
use super::walk::Ctx;
use super::words::Arg;
use super::{awk, conditions, git, packages, rules, sed, wrappers, Safety};

/// Programs that only read, whatever their arguments (even ones known only at run time):
/// none has an option that writes, runs a program or never ends. `exit`, `return` and
/// `shift` read their argument as a plain number, never as arithmetic.
const READ_ONLY: &[&str] = &[
    "cat",
    "ls",
    "head",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "zcat",
    "zgrep",
    "bzcat",
    "xzcat",
    "stat",
    "du",
    "df",
    "diff",
    "cmp",
    "comm",
    "cut",
    "tr",
    "nl",
    "tac",
    "rev",
    "od",
    "hexdump",
    "strings",
    "paste",
    "join",
    "fold",
    "fmt",
    "expand",
    "unexpand",
    "column",
    "jq",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "echo",
    "pwd",
    "cd",
    "true",
    "false",
    ":",
    "type",
    "which",
    "whereis",
    "whoami",
    "id",
    "groups",
    "uname",
    "arch",
    "nproc",
    "tty",
    "locale",
    "printenv",
    "seq",
    "sleep",
    "ps",
    "free",
    "uptime",
    "exit",
    "return",
    "shift",
];

/// Programs that write files, processes or the system, whatever their arguments.
const WRITE: &[&str] = &[
    "rm",
    "rmdir",
    "mv",
    "cp",
    "touch",
    "mkdir",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "tee",
    "truncate",
    "shred",
    "fallocate",
    "install",
    "rsync",
    "scp",
    "patch",
    "unlink",
    "mkfifo",
    "mknod",
    "mktemp",
    "split",
    "csplit",
    "sponge",
    "zip",
    "make",
    "kill",
    "pkill",
    "killall",
    "crontab",
    "shutdown",
    "reboot",
];

/// How to classify a program that is in neither list.
pub(crate) enum Rule {
    /// Read-only unless one of `write` (→ `Write`) or `unknown` (→ `Unknown`) options is
    /// given. A dynamic argument could be such an option, so it makes the verdict
    /// `Unknown` at best.
    Options {
        spec: OptSpec,
        write: &'static [Flag],
        unknown: &'static [Flag],
    },
    /// Rule in code.
    Custom(fn(Ctx, &[Arg]) -> Safety),
}

use Flag::{Long, Short};
use Rule::{Custom, Options};

const fn flags(write: &'static [Flag], unknown: &'static [Flag]) -> Rule {
    Options {
        spec: OptSpec::FLAGS,
        write,
        unknown,
    }
}

/// Programs with a rule. Everything in no list is `Unknown`: interpreters, editors and
/// pagers (`less`, `vim`: interactive, with shell escapes), build tools that are not listed.
const RULES: &[(&str, Rule)] = &[
    ("test", Custom(conditions::test_command)),
    ("[", Custom(conditions::bracket_command)),
    ("printf", Custom(rules::printf)),
    ("read", Custom(rules::read)),
    ("set", Custom(rules::set)),
    ("hostname", Custom(rules::no_arguments)),
    // Read-only unless an option says otherwise.
    ("tail", Custom(rules::tail)),
    ("uniq", Custom(rules::uniq)),
    (
        "sort",
        Options {
            spec: OptSpec {
                short_arg: "kStTo",
                short_opt_arg: "",
                long_arg: &[
                    "key",
                    "field-separator",
                    "buffer-size",
                    "temporary-directory",
                    "output",
                    "batch-size",
                    "compress-program",
                    "files0-from",
                    "parallel",
                    "random-source",
                    "sort",
                ],
                stop_at_operand: false,
            },
            write: &[Short('o'), Long("output")],
            unknown: &[Long("compress-program")],
        },
    ),
    (
        "shuf",
        Options {
            spec: OptSpec {
                short_arg: "ino",
                short_opt_arg: "",
                long_arg: &["input-range", "head-count", "output", "random-source"],
                stop_at_operand: false,
            },
            write: &[Short('o'), Long("output")],
            unknown: &[],
        },
    ),
    (
        "date",
        Options {
            spec: OptSpec {
                short_arg: "dfr",
                short_opt_arg: "I",
                long_arg: &["date", "file", "reference", "set"],
                stop_at_operand: false,
            },
            write: &[Short('s'), Long("set")],
            unknown: &[],
        },
    ),
    (
        "file",
        Options {
            spec: OptSpec {
                short_arg: "efFmP",
                short_opt_arg: "",
                long_arg: &[
                    "exclude",
                    "files-from",
                    "separator",
                    "magic-file",
                    "parameter",
                ],
                stop_at_operand: false,
            },
            write: &[Short('C'), Long("compile")],
            unknown: &[],
        },
    ),
    // tree reads the value of -L/-P/-I/-o from the next word and goes on with the cluster,
    // so every letter of a cluster is an option: `-R` reruns itself with `-o 00Tree.html`.
    ("tree", flags(&[Short('o'), Short('R')], &[])),
    // --pre and --hostname-bin run programs.
    ("rg", flags(&[], &[Long("pre"), Long("hostname-bin")])),
    ("find", Custom(wrappers::find)),
    ("fd", Custom(wrappers::fd)),
    ("fdfind", Custom(wrappers::fd)),
    ("sed", Custom(sed::sed)),
    ("awk", Custom(awk::awk)),
    ("gawk", Custom(awk::awk)),
    ("mawk", Custom(awk::awk)),
    ("nawk", Custom(awk::awk)),
    // Run another command.
    ("env", Custom(wrappers::env)),
    ("nice", Custom(wrappers::nice)),
    ("timeout", Custom(wrappers::timeout)),
    ("time", Custom(wrappers::time)),
    ("command", Custom(wrappers::command)),
    ("builtin", Custom(wrappers::builtin)),
    ("stdbuf", Custom(wrappers::stdbuf)),
    ("nohup", Custom(wrappers::unknown_wrapper)),
    ("sudo", Custom(wrappers::unknown_wrapper)),
    ("doas", Custom(wrappers::unknown_wrapper)),
    ("exec", Custom(wrappers::exec)),
    ("xargs", Custom(wrappers::xargs)),
    ("eval", Custom(wrappers::eval)),
    ("trap", Custom(wrappers::trap)),
    ("sh", Custom(wrappers::shell)),
    ("bash", Custom(wrappers::shell)),
    ("dash", Custom(wrappers::shell)),
    ("zsh", Custom(wrappers::shell)),
    ("ksh", Custom(wrappers::shell)),
    // Version control and package managers.
    ("git", Custom(git::git)),
    ("cargo", Custom(packages::cargo)),
    ("npm", Custom(packages::npm)),
    ("yarn", Custom(packages::yarn_pnpm)),
    ("pnpm", Custom(packages::yarn_pnpm)),
    ("pip", Custom(packages::pip)),
    ("pip3", Custom(packages::pip)),
    ("go", Custom(packages::go)),
    ("apt", Custom(packages::apt)),
    ("apt-get", Custom(packages::apt)),
    ("tar", Custom(packages::tar)),
    ("gzip", Custom(packages::compressor)),
    ("gunzip", Custom(packages::compressor)),
    ("bzip2", Custom(packages::compressor)),
    ("bunzip2", Custom(packages::compressor)),
    ("xz", Custom(packages::compressor)),
    ("unxz", Custom(packages::compressor)),
    ("unzip", Custom(packages::unzip)),
    ("dd", Custom(packages::dd)),
    ("curl", Custom(packages::curl)),
    ("wget", Custom(packages::wget)),
];

/// Directories whose programs are the ones the table means.
const SYSTEM_DIRS: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
];

/// Classifies a command given as words, program first.
pub(crate) fn classify_argv(ctx: Ctx, argv: &[Arg]) -> Safety {
    let Some((program, args)) = argv.split_first() else {
        return Safety::ReadOnly;
    };
    let Some(name) = program.lit().and_then(program_name) else {
        return Safety::Unknown;
    };
    if READ_ONLY.contains(&name) {
        Safety::ReadOnly
    } else if WRITE.contains(&name) {
        Safety::Write
    } else {
        match RULES.iter().find(|(n, _)| *n == name) {
            Some((_, rule)) => apply(rule, ctx, args),
            None => Safety::Unknown,
        }
    }
}

/// Table name of a program word: `ls`, or `/usr/bin/ls`; a program in any other directory
/// (`./ls`) is not the one the table knows.
fn program_name(word: &str) -> Option<&str> {
    if !word.contains('/') {
        return (!word.is_empty()).then_some(word);
    }
    SYSTEM_DIRS
        .iter()
        .find_map(|dir| word.strip_prefix(dir))
        .filter(|rest| !rest.is_empty() && !rest.contains('/'))
}

fn apply(rule: &Rule, ctx: Ctx, args: &[Arg]) -> Safety {
    match rule {
        Custom(rule) => rule(ctx, args),
        Options {
            spec,
            write,
            unknown,
        } => {
            let found = scan(spec, args);
            if found.has(write) {
                Safety::Write
            } else if found.has(unknown) || found.dynamic {
                Safety::Unknown
            } else {
                Safety::ReadOnly
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_no_duplicates() {
        let mut names: Vec<&str> = READ_ONLY.iter().chain(WRITE).copied().collect();
        names.extend(RULES.iter().map(|(name, _)| *name));
        for (i, name) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(name), "{name} twice");
        }
    }

    #[test]
    fn program_names() {
        assert_eq!(program_name("/usr/bin/ls"), Some("ls"));
        assert_eq!(program_name("./ls"), None);
        assert_eq!(program_name("/usr/bin/x/ls"), None);
        assert_eq!(program_name(""), None);
    }
}
