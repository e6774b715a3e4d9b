//! Package managers, archivers and network clients: mostly writing, a few listing forms.

use super::options::{scan, Flag, OptSpec};
use super::walk::Ctx;
use super::words::Arg;
use super::Safety;
use Flag::{Long, Short};

/// First word that is not an option, and the words after it.
fn subcommand(args: &[Arg]) -> Option<(&Arg, &[Arg])> {
    let i = args
        .iter()
        .position(|a| !a.lit().is_some_and(|w| w.starts_with('-')))?;
    Some((&args[i], &args[i + 1..]))
}

/// Verdict from a subcommand table: `read` reads, `write` writes, anything else unknown.
fn by_subcommand(sub: &Arg, read: &[&str], write: &[&str]) -> Safety {
    match sub.lit() {
        Some(s) if read.contains(&s) => Safety::ReadOnly,
        Some(s) if write.contains(&s) => Safety::Write,
        _ => Safety::Unknown,
    }
}

/// `cargo`: builds, installs and edits write. `metadata` and `tree` resolve the
/// dependency graph: they write `Cargo.lock` when it is missing or stale and download
/// registry data, so they are read-only only with `--frozen` (or `--locked --offline`), or
/// as `metadata --no-deps`.
pub(crate) fn cargo(_: Ctx, args: &[Arg]) -> Safety {
    let args = match args.first().and_then(Arg::lit) {
        Some(toolchain) if toolchain.starts_with('+') => &args[1..],
        _ => args,
    };
    if args.iter().any(|a| a.is_dynamic()) {
        return Safety::Unknown;
    }
    // Global options before the subcommand.
    let mut i = 0;
    while let Some(word) = args.get(i).and_then(Arg::lit) {
        match word {
            "-V" | "--version" | "--list" if i + 1 == args.len() => return Safety::ReadOnly,
            "-q" | "--quiet" | "-v" | "-vv" | "--verbose" | "--offline" | "--frozen"
            | "--locked" => i += 1,
            "--color" => i += 2,
            _ if word.starts_with("--color=") => i += 1,
            _ if word.starts_with('-') => return Safety::Unknown, // --config, -Z, -C, --help
            _ => break,
        }
    }
    let Some(sub) = args.get(i).and_then(Arg::lit) else {
        return Safety::Unknown;
    };
    let has = |flag: &str| args.iter().any(|a| a.is(flag));
    // Without the network and with the lock file as it is, nothing gets downloaded into
    // `~/.cargo` and `Cargo.lock` is not rewritten.
    let frozen = has("--frozen") || (has("--locked") && has("--offline"));
    // `--config build.rustc=...` and `-Z` options reach the subcommand too: cargo runs
    // `rustc -vV` even for `tree` and `metadata`.
    let configures = args.iter().any(|a| {
        a.lit()
            .is_some_and(|w| w.starts_with("--config") || w.starts_with("-Z"))
    });
    match sub {
        _ if configures => Safety::Unknown,
        "version" | "locate-project" | "verify-project" | "read-manifest" => Safety::ReadOnly,
        "metadata" if frozen || has("--no-deps") => Safety::ReadOnly,
        "tree" if frozen => Safety::ReadOnly,
        "metadata" | "tree" => Safety::Unknown,
        "fmt" if has("--check") => Safety::Unknown,
        "build" | "b" | "check" | "c" | "test" | "t" | "run" | "r" | "bench" | "install"
        | "uninstall" | "add" | "remove" | "rm" | "update" | "fmt" | "clippy" | "clean" | "doc"
        | "d" | "new" | "init" | "publish" | "fetch" | "generate-lockfile" | "vendor"
        | "package" | "fix" | "yank" | "login" | "logout" | "owner" => Safety::Write,
        _ => Safety::Unknown, // search/info (network), help, extensions
    }
}

/// `npm`: installs write. Nothing is read-only: every run writes a debug log and
/// update-check state under `~/.npm`.
pub(crate) fn npm(_: Ctx, args: &[Arg]) -> Safety {
    let Some((sub, _)) = subcommand(args) else {
        return Safety::Unknown;
    };
    by_subcommand(
        sub,
        &[],
        &[
            "install",
            "i",
            "in",
            "ci",
            "add",
            "uninstall",
            "remove",
            "rm",
            "un",
            "unlink",
            "update",
            "up",
            "upgrade",
            "publish",
            "unpublish",
            "link",
            "ln",
            "init",
            "create",
            "prune",
            "dedupe",
            "rebuild",
            "version",
            "pack",
            "deprecate",
            "dist-tag",
            "owner",
        ],
    )
}

/// `yarn` / `pnpm`: installs and edits write (a bare `yarn` installs).
pub(crate) fn yarn_pnpm(_: Ctx, args: &[Arg]) -> Safety {
    let Some((sub, _)) = subcommand(args) else {
        return if args.is_empty() {
            Safety::Write
        } else {
            Safety::Unknown
        };
    };
    by_subcommand(
        sub,
        &[],
        &[
            "add", "install", "i", "remove", "rm", "up", "upgrade", "update", "link", "unlink",
            "publish", "init", "import", "dedupe", "prune",
        ],
    )
}

pub(crate) fn pip(_: Ctx, args: &[Arg]) -> Safety {
    match subcommand(args) {
        Some((sub, _)) => by_subcommand(sub, &[], &["install", "uninstall", "download", "wheel"]),
        None => Safety::Unknown,
    }
}

/// `go`: builds write their cache, `go env -w` the configuration. Nothing is read-only:
/// every run may update the local telemetry counters (Go 1.23+).
pub(crate) fn go(_: Ctx, args: &[Arg]) -> Safety {
    match subcommand(args) {
        Some((sub, rest)) if sub.is("env") && rest.iter().any(|a| a.is("-w") || a.is("-u")) => {
            Safety::Write
        }
        Some((sub, _)) => by_subcommand(
            sub,
            &[],
            &[
                "build", "install", "get", "generate", "test", "run", "mod", "fmt", "clean",
                "work", "fix",
            ],
        ),
        None => Safety::Unknown,
    }
}

pub(crate) fn apt(_: Ctx, args: &[Arg]) -> Safety {
    match subcommand(args) {
        Some((sub, _)) => by_subcommand(
            sub,
            &[],
            &[
                "install",
                "remove",
                "purge",
                "upgrade",
                "full-upgrade",
                "dist-upgrade",
                "update",
                "autoremove",
                "build-dep",
            ],
        ),
        None => Safety::Unknown,
    }
}

/// `tar`: creating, extracting and appending write; listing can run programs
/// (`--to-command`, `--use-compress-program`, checkpoint actions), so it is unknown.
pub(crate) fn tar(_: Ctx, args: &[Arg]) -> Safety {
    let writes = args.iter().enumerate().any(|(i, a)| match a.lit() {
        Some(w) if w.starts_with("--") => [
            "--create",
            "--extract",
            "--get",
            "--append",
            "--update",
            "--delete",
            "--catenate",
            "--concatenate",
        ]
        .iter()
        .any(|o| o.starts_with(w) && w.len() > 3),
        Some(w) if w.starts_with('-') => w.contains(['c', 'x', 'r', 'u', 'A']),
        // Old style: the first word holds the mode letters without a dash.
        Some(w) if i == 0 => w.contains(['c', 'x', 'r', 'u', 'A']),
        _ => false,
    });
    if writes {
        Safety::Write
    } else {
        Safety::Unknown
    }
}

/// `gzip` and friends replace their input file unless they write to standard output,
/// list or test.
pub(crate) fn compressor(_: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&OptSpec::FLAGS, args);
    let stdout = [
        Short('c'),
        Long("stdout"),
        Long("to-stdout"),
        Short('l'),
        Long("list"),
        Short('t'),
        Long("test"),
    ];
    if !found.has(&stdout) {
        Safety::Write
    } else if found.dynamic {
        Safety::Unknown
    } else {
        Safety::ReadOnly
    }
}

/// `unzip` extracts unless it lists (`-l`, `-v`, `-Z`), tests (`-t`), prints to standard
/// output (`-p`) or shows the comment (`-z`).
pub(crate) fn unzip(_: Ctx, args: &[Arg]) -> Safety {
    let modes = args.iter().any(|a| {
        a.lit().is_some_and(|w| {
            w.starts_with('-') && !w.starts_with("--") && w.contains(['l', 'v', 'Z', 't', 'p', 'z'])
        })
    });
    if !modes {
        Safety::Write
    } else if args.iter().any(Arg::is_dynamic) {
        Safety::Unknown
    } else {
        Safety::ReadOnly
    }
}

/// `dd of=FILE` writes; without it, dd is rarely what it seems.
pub(crate) fn dd(_: Ctx, args: &[Arg]) -> Safety {
    if args
        .iter()
        .any(|a| a.lit().is_some_and(|w| w.starts_with("of=")))
    {
        Safety::Write
    } else {
        Safety::Unknown
    }
}

/// `curl`: network access is never read-only; saving to files writes.
pub(crate) fn curl(_: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&OptSpec::FLAGS, args);
    let writes = [
        Short('o'),
        Long("output"),
        Short('O'),
        Long("remote-name"),
        Long("remote-name-all"),
        Short('D'),
        Long("dump-header"),
        Short('c'),
        Long("cookie-jar"),
        Long("trace"),
        Long("trace-ascii"),
        Long("stderr"),
        Long("output-dir"),
        Long("etag-save"),
        Long("hsts"),
        Long("alt-svc"),
    ];
    if found.has(&writes) {
        Safety::Write
    } else {
        Safety::Unknown
    }
}

/// `wget` saves to a file unless told to write to standard output (`-O -`) or to only
/// check (`--spider`); either way it uses the network.
pub(crate) fn wget(_: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "Oo",
        short_opt_arg: "",
        long_arg: &["output-document", "output-file"],
        stop_at_operand: false,
    };
    let found = scan(&spec, args);
    let to_stdout = found
        .values(Short('O'))
        .chain(found.values(Long("output-document")))
        .any(|v| v.is_some_and(|v| v.is("-")));
    let log_file = found.has(&[
        Short('o'),
        Long("output-file"),
        Short('a'),
        Long("append-output"),
    ]);
    if log_file || !(to_stdout || found.has(&[Long("spider")])) {
        Safety::Write
    } else {
        Safety::Unknown
    }
}
