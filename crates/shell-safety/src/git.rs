//! `git`: global options, then a table of subcommands.
//!
//! What the command line can add is not trusted: `-c`, `--config-env` and `--exec-path`
//! can make git run any program, and `--ext-diff` / `--textconv` run the diff drivers the
//! configuration names, so they are `Unknown`. The repository's own configuration is
//! checked separately (`git_config`, through `check_scope`). Output goes to a pipe, so
//! no pager starts unless `-p`/`--paginate` asks for one.

use super::options::{scan, Flag, OptSpec};
use super::walk::Ctx;
use super::words::Arg;
use super::Safety;
use Flag::{Long, Short};

/// Subcommands that only read, whatever their options (except those in [`check_read`]).
const READ: &[&str] = &[
    "status",
    "log",
    "show",
    "diff",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "blame",
    "annotate",
    "grep",
    "describe",
    "shortlog",
    "cat-file",
    "rev-list",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "check-ignore",
    "check-attr",
    "count-objects",
    "whatchanged",
    "diff-tree",
    "diff-files",
    "diff-index",
    "show-branch",
    "cherry",
    "var",
    "version",
];

/// Subcommands that change the repository, the work tree, or a remote.
const WRITE: &[&str] = &[
    "add",
    "am",
    "apply",
    "archive",
    "bisect",
    "checkout",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "commit-tree",
    "fetch",
    "filter-branch",
    "format-patch",
    "gc",
    "hash-object",
    "init",
    "maintenance",
    "merge",
    "mv",
    "prune",
    "pull",
    "push",
    "read-tree",
    "rebase",
    "repack",
    "replace",
    "reset",
    "restore",
    "revert",
    "rm",
    "sparse-checkout",
    "switch",
    "symbolic-ref",
    "update-index",
    "update-ref",
    "write-tree",
];

/// Global options that take the next word as their value.
const GLOBAL_WITH_VALUE: &[&str] = &["-C", "--git-dir", "--work-tree", "--namespace"];

/// Global options without a value that change nothing that matters here.
const GLOBAL_FLAGS: &[&str] = &[
    "--no-pager",
    "-P",
    "--bare",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
];

pub(crate) fn git(_: Ctx, args: &[Arg]) -> Safety {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let Some(word) = arg.lit() else {
            return Safety::Unknown;
        };
        if GLOBAL_WITH_VALUE.contains(&word) {
            // An unquoted value could split and shift the subcommand.
            if matches!(args.get(i + 1), Some(Arg::Dynamic)) {
                return Safety::Unknown;
            }
            i += 2;
        } else if GLOBAL_FLAGS.contains(&word)
            || ["--git-dir=", "--work-tree=", "--namespace="]
                .iter()
                .any(|p| word.starts_with(p))
        {
            i += 1;
        } else if word == "--version" {
            return Safety::ReadOnly;
        } else if word.starts_with('-') {
            return Safety::Unknown; // -c, --config-env, --exec-path, -p, --help (man page)
        } else {
            break;
        }
    }
    let Some(sub) = args.get(i) else {
        return Safety::Unknown; // prints usage
    };
    let Some(sub) = sub.lit() else {
        return Safety::Unknown;
    };
    let rest = args.get(i + 1..).unwrap_or(&[]);
    match sub {
        "branch" => listing(rest, &BRANCH),
        "tag" if rest.iter().any(|a| a.is("-v") || a.is("--verify")) => Safety::Unknown,
        "tag" => listing(rest, &TAG),
        "remote" => remote(rest),
        "config" => config(rest),
        "stash" => sub_read(rest, &["list", "show"], None),
        "reflog" => sub_read(rest, &["show", "exists"], Some("show")),
        "worktree" => sub_read(rest, &["list"], None),
        "notes" => sub_read(rest, &["list", "show"], Some("list")),
        "submodule" => sub_read(rest, &["status", "summary"], Some("status")),
        _ if READ.contains(&sub) => check_read(sub, rest),
        _ if WRITE.contains(&sub) => Safety::Write,
        _ => Safety::Unknown, // aliases, extensions (`git-foo`), help
    }
}

/// Options of read-only subcommands that still write or run programs.
fn check_read(sub: &str, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: if sub == "grep" { "efABCm" } else { "" },
        ..OptSpec::FLAGS
    };
    let found = scan(&spec, args);
    if found.has(&[Long("output")]) {
        Safety::Write // diff options: --output=<file>
    } else if found.dynamic
        || found.has(&[Long("ext-diff"), Long("textconv")])
        || (sub == "grep" && found.has(&[Short('O'), Long("open-files-in-pager")]))
    {
        Safety::Unknown
    } else {
        Safety::ReadOnly
    }
}

/// `git stash`, `git reflog`, `git worktree`, ...: only some subcommands read; `default`
/// is what no subcommand means (`git stash` pushes).
fn sub_read(args: &[Arg], read: &[&str], default: Option<&str>) -> Safety {
    let mut sub = default;
    let mut rest: &[Arg] = &[];
    for (i, arg) in args.iter().enumerate() {
        match arg.lit() {
            None => return Safety::Unknown,
            Some(w) if w.starts_with('-') => {}
            Some(w) => {
                sub = Some(w);
                rest = &args[i + 1..];
                break;
            }
        }
    }
    match sub {
        Some(s) if read.contains(&s) => check_read("log", rest),
        _ => Safety::Write,
    }
}

/// How `git branch` or `git tag` lists: options that only list, and the subset that makes
/// operands patterns to list (without one, an operand names a branch or tag to create).
struct Listing {
    flags: &'static [Flag],
    lists_with_operands: &'static [Flag],
    short_opt_arg: &'static str,
}

const BRANCH: Listing = Listing {
    flags: &[
        Short('l'),
        Long("list"),
        Short('v'),
        Long("verbose"),
        Short('a'),
        Long("all"),
        Short('r'),
        Long("remotes"),
        Short('i'),
        Long("ignore-case"),
        Long("show-current"),
        Long("color"),
        Long("no-color"),
        Long("column"),
        Long("no-column"),
        Long("sort"),
        Long("format"),
        Long("contains"),
        Long("no-contains"),
        Long("merged"),
        Long("no-merged"),
        Long("points-at"),
        Long("abbrev"),
        Long("no-abbrev"),
        Long("omit-empty"),
    ],
    lists_with_operands: &[
        Short('l'),
        Long("list"),
        Short('v'),
        Long("verbose"),
        Long("contains"),
        Long("no-contains"),
        Long("merged"),
        Long("no-merged"),
        Long("points-at"),
    ],
    short_opt_arg: "",
};

const TAG: Listing = Listing {
    flags: &[
        Short('l'),
        Long("list"),
        Short('n'),
        Short('i'),
        Long("ignore-case"),
        Long("color"),
        Long("no-color"),
        Long("column"),
        Long("no-column"),
        Long("sort"),
        Long("format"),
        Long("contains"),
        Long("no-contains"),
        Long("merged"),
        Long("no-merged"),
        Long("points-at"),
        Long("omit-empty"),
    ],
    lists_with_operands: &[
        Short('l'),
        Long("list"),
        Short('n'),
        Long("contains"),
        Long("no-contains"),
        Long("merged"),
        Long("no-merged"),
        Long("points-at"),
    ],
    short_opt_arg: "n",
};

/// `git branch` / `git tag`: listing reads; -d, -m, -c, -f, -u, -a (tag), -s, a bare name,
/// ... write; `git tag -v` runs gpg.
fn listing(args: &[Arg], how: &Listing) -> Safety {
    let spec = OptSpec {
        short_arg: "",
        short_opt_arg: how.short_opt_arg,
        long_arg: &["sort", "format", "points-at"],
        stop_at_operand: false,
    };
    let found = scan(&spec, args);
    if !found.only(how.flags) {
        return Safety::Write;
    }
    if found.dynamic {
        return Safety::Unknown;
    }
    if found.operands.is_empty() || found.has(how.lists_with_operands) {
        Safety::ReadOnly
    } else {
        Safety::Write
    }
}

fn remote(args: &[Arg]) -> Safety {
    let found = scan(&OptSpec::FLAGS, args);
    if found.dynamic || !found.only(&[Short('v'), Long("verbose")]) {
        return Safety::Unknown;
    }
    match found.operands.first().and_then(Arg::lit) {
        None | Some("get-url") => Safety::ReadOnly,
        Some("show") => Safety::Unknown, // contacts the remote
        Some(
            "add" | "rename" | "remove" | "rm" | "set-head" | "set-branches" | "set-url" | "prune"
            | "update",
        ) => Safety::Write,
        Some(_) => Safety::Unknown,
    }
}

/// `git config`: reads with `--get*`, `--list`, `get`, `list`, or a single key.
fn config(args: &[Arg]) -> Safety {
    const SCOPE: &[Flag] = &[
        Long("global"),
        Long("system"),
        Long("local"),
        Long("worktree"),
        Short('f'),
        Long("file"),
        Long("blob"),
        Long("type"),
        Long("bool"),
        Long("int"),
        Long("bool-or-int"),
        Long("bool-or-str"),
        Long("path"),
        Long("expiry-date"),
        Short('z'),
        Long("null"),
        Long("name-only"),
        Long("show-origin"),
        Long("show-scope"),
        Long("includes"),
        Long("no-includes"),
        Long("default"),
        Long("all"),
        Long("regexp"),
        Long("value"),
        Long("fixed-value"),
    ];
    const READ_ACTIONS: &[Flag] = &[
        Long("get"),
        Long("get-all"),
        Long("get-regexp"),
        Long("get-urlmatch"),
        Long("get-color"),
        Long("get-colorbool"),
        Long("list"),
        Short('l'),
    ];
    let spec = OptSpec {
        short_arg: "f",
        short_opt_arg: "",
        long_arg: &["file", "blob", "type", "default", "value"],
        stop_at_operand: false,
    };
    let found = scan(&spec, args);
    if found.has(&[Short('e'), Long("edit")]) {
        return Safety::Unknown; // opens an editor
    }
    if !found.only(&[SCOPE, READ_ACTIONS].concat()) {
        return Safety::Write; // --add, --unset, --replace-all, --rename-section, ...
    }
    if found.dynamic {
        return Safety::Unknown;
    }
    if found.has(READ_ACTIONS) {
        return Safety::ReadOnly;
    }
    match found.operands.first().and_then(Arg::lit) {
        Some("get" | "list") => Safety::ReadOnly,
        Some("set" | "unset" | "rename-section" | "remove-section") => Safety::Write,
        Some("edit") => Safety::Unknown,
        Some(_) if found.operands.len() == 1 => Safety::ReadOnly, // `git config KEY`
        Some(_) => Safety::Write,                                 // `git config KEY VALUE`
        None => Safety::Unknown,
    }
}
