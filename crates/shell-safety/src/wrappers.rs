//! Programs that run another command or script: the verdict is mostly the wrapped one's.

use super::options::{matches, scan, Flag, Opt, OptSpec, Scan};
use super::walk::Ctx;
use super::words::{self, Arg};
use super::Safety;
use Flag::{Long, Short};

/// Options ending at the first operand, with these taking an argument.
const fn posix(short_arg: &'static str, long_arg: &'static [&'static str]) -> OptSpec {
    OptSpec {
        short_arg,
        short_opt_arg: "",
        long_arg,
        stop_at_operand: true,
    }
}

/// The words after the options (the wrapped command).
fn rest<'a>(args: &'a [Arg], found: &Scan) -> &'a [Arg] {
    args.get(found.rest..).unwrap_or(&[])
}

/// `env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... [COMMAND [ARG]...]`
pub(crate) fn env(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("uC", &["unset", "chdir"]), args);
    let known = [
        Short('i'),
        Long("ignore-environment"),
        Short('u'),
        Long("unset"),
        Short('0'),
        Long("null"),
        Short('C'),
        Long("chdir"),
        Short('v'),
        Long("debug"),
    ];
    if found.dynamic || !found.only(&known) {
        return Safety::Unknown; // -S splits a string into a command, signal options, ...
    }
    let mut command = rest(args, &found);
    let mut verdict = Safety::ReadOnly;
    while let Some((first, tail)) = command.split_first() {
        match first.lit() {
            Some("-") => {}
            Some(word) if word.contains('=') && !word.starts_with('=') => {
                let (name, value) = word.split_once('=').unwrap_or((word, ""));
                if !words::is_harmless_env(name, value) {
                    verdict = Safety::Unknown;
                }
            }
            _ => break,
        }
        command = tail;
    }
    if command.is_empty() {
        verdict // prints the environment
    } else {
        verdict.join(ctx.argv(command))
    }
}

/// `nice [-n N | -N] [COMMAND...]`
pub(crate) fn nice(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("n", &["adjustment"]), args);
    // `-n N`, `--adjustment=N`, or the obsolete `-N`.
    let numeric = found.opts.iter().all(|opt| match opt {
        Opt::Short(c, _) => *c == 'n' || c.is_ascii_digit(),
        Opt::Long(..) => matches(opt, Long("adjustment")),
    });
    match rest(args, &found) {
        _ if !numeric || found.dynamic => Safety::Unknown,
        [] => Safety::ReadOnly,
        command => ctx.argv(command),
    }
}

/// `timeout [OPTION] DURATION COMMAND...`
pub(crate) fn timeout(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("sk", &["signal", "kill-after"]), args);
    let known = [
        Short('s'),
        Long("signal"),
        Short('k'),
        Long("kill-after"),
        Short('v'),
        Long("verbose"),
        Long("preserve-status"),
        Long("foreground"),
    ];
    match rest(args, &found) {
        [_, command @ ..] if found.only(&known) && !found.dynamic && !command.is_empty() => {
            ctx.argv(command)
        }
        _ => Safety::Unknown,
    }
}

/// `time [-p] COMMAND` (bash keyword), or GNU `time [-o FILE] ...`.
pub(crate) fn time(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("fo", &["format", "output"]), args);
    if found.has(&[Short('o'), Long("output")]) {
        return Safety::Write;
    }
    let known = [
        Short('p'),
        Long("portability"),
        Short('f'),
        Long("format"),
        Short('v'),
        Long("verbose"),
        Short('q'),
        Long("quiet"),
    ];
    match rest(args, &found) {
        _ if !found.only(&known) || found.dynamic => Safety::Unknown,
        [] => Safety::ReadOnly,
        command => ctx.argv(command),
    }
}

/// `command [-p] COMMAND...` runs it; `command -v/-V NAME` only looks it up.
pub(crate) fn command(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("", &[]), args);
    if !found.only(&[Short('p'), Short('v'), Short('V')]) {
        return Safety::Unknown;
    }
    if found.has(&[Short('v'), Short('V')]) {
        return Safety::ReadOnly; // whatever the names looked up
    }
    ctx.argv(rest(args, &found))
}

/// `builtin NAME ARGS...`
pub(crate) fn builtin(ctx: Ctx, args: &[Arg]) -> Safety {
    ctx.argv(args)
}

/// `stdbuf -oL COMMAND...`
pub(crate) fn stdbuf(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("ioe", &["input", "output", "error"]), args);
    let known = [
        Short('i'),
        Short('o'),
        Short('e'),
        Long("input"),
        Long("output"),
        Long("error"),
    ];
    match rest(args, &found) {
        command if found.only(&known) && !found.dynamic && !command.is_empty() => ctx.argv(command),
        _ => Safety::Unknown,
    }
}

/// `nohup` (may create `nohup.out`), `sudo`, `doas` (other privileges): never read-only,
/// but a wrapped command that writes makes them `Write`.
pub(crate) fn unknown_wrapper(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(
        &posix(
            "ugCDhprtTU",
            &["user", "group", "chdir", "host", "prompt", "role", "type"],
        ),
        args,
    );
    match rest(args, &found) {
        [] => Safety::Unknown,
        command => ctx.argv(command).at_least_unknown(),
    }
}

/// `exec COMMAND` replaces the shell; `exec` with redirections only changes its descriptors.
pub(crate) fn exec(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("a", &[]), args);
    match rest(args, &found) {
        [] => Safety::Unknown,
        command => ctx.argv(command).at_least_unknown(),
    }
}

/// Joins literal words into the script `eval` or `trap` would run.
fn literal_script(args: &[Arg]) -> Option<String> {
    let parts: Option<Vec<&str>> = args.iter().map(Arg::lit).collect();
    parts.map(|p| p.join(" "))
}

/// `eval WORDS...`: runs code built at run time; a literal one is classified to find writes.
pub(crate) fn eval(ctx: Ctx, args: &[Arg]) -> Safety {
    match literal_script(args) {
        Some(script) => ctx.script(&script).at_least_unknown(),
        None => Safety::Unknown,
    }
}

/// `trap ACTION SIGNALS...`: the action runs later.
pub(crate) fn trap(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("", &[]), args);
    match rest(args, &found).first() {
        Some(Arg::Lit(action)) => ctx.script(action).at_least_unknown(),
        _ => Safety::Unknown,
    }
}

/// `sh -c SCRIPT`, `bash -lc SCRIPT`: another shell with its own startup files and options;
/// never read-only, but a script that writes makes it `Write`.
pub(crate) fn shell(ctx: Ctx, args: &[Arg]) -> Safety {
    let found = scan(&posix("oO", &["rcfile", "init-file"]), args);
    if !found.has(&[Short('c')]) {
        return Safety::Unknown; // a script file, or commands from standard input
    }
    match rest(args, &found).first() {
        Some(Arg::Lit(script)) => ctx.script(script).at_least_unknown(),
        _ => Safety::Unknown,
    }
}

/// `xargs [OPTIONS] [COMMAND [ARGS]]`: runs COMMAND (default `echo`) with words read from
/// standard input appended, or put in place of the replacement string.
pub(crate) fn xargs(ctx: Ctx, args: &[Arg]) -> Safety {
    let spec = OptSpec {
        short_arg: "aEIdLnPs",
        short_opt_arg: "eil",
        long_arg: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        stop_at_operand: true,
    };
    let found = scan(&spec, args);
    let known = [
        Short('0'),
        Long("null"),
        Short('a'),
        Long("arg-file"),
        Short('d'),
        Long("delimiter"),
        Short('E'),
        Short('e'),
        Long("eof"),
        Short('I'),
        Short('i'),
        Long("replace"),
        Short('L'),
        Short('l'),
        Long("max-lines"),
        Short('n'),
        Long("max-args"),
        Short('P'),
        Long("max-procs"),
        Short('r'),
        Long("no-run-if-empty"),
        Short('s'),
        Long("max-chars"),
        Short('t'),
        Long("verbose"),
        Short('x'),
        Long("exit"),
        Short('o'),
        Long("open-tty"),
        Long("process-slot-var"),
        Long("show-limits"),
    ];
    if found.dynamic || !found.only(&known) {
        return Safety::Unknown; // -p asks on the terminal; unknown options
    }
    let mut replace = None;
    for flag in [Short('I'), Short('i'), Long("replace")] {
        for value in found.values(flag) {
            replace = match value {
                None => Some("{}"),
                Some(Arg::Lit(r)) => Some(r.as_str()),
                Some(_) => return Safety::Unknown,
            };
        }
    }
    let mut command: Vec<Arg> = match rest(args, &found) {
        [] => words::lits(&["echo"]),
        words => words.to_vec(),
    };
    match replace {
        Some(r) => {
            for arg in &mut command {
                if arg.lit().is_some_and(|w| w.contains(r)) {
                    *arg = Arg::DynamicWord;
                }
            }
        }
        None => command.push(Arg::Dynamic),
    }
    ctx.argv(&command)
}

/// `find`: read-only unless it deletes, writes files (`-fprint*`, `-fls`) or runs commands
/// (`-exec`, `-execdir`, `-ok`, `-okdir`: never read-only, `Write` when the command writes).
/// A dynamic word could be any of these.
pub(crate) fn find(ctx: Ctx, args: &[Arg]) -> Safety {
    let mut verdict = Safety::ReadOnly;
    let mut i = 0;
    while i < args.len() {
        match args[i].lit() {
            None => verdict = verdict.join(Safety::Unknown),
            Some("-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls") => {
                verdict = Safety::Write
            }
            Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let start = i + 1;
                let end = (start..args.len()).find(|&j| {
                    args[j].is(";") || (args[j].is("+") && j > start && args[j - 1].is("{}"))
                });
                let Some(end) = end else {
                    return verdict.join(Safety::Unknown);
                };
                verdict = verdict.join(run_with_placeholders(ctx, &args[start..end], false));
                i = end;
            }
            Some(_) => {}
        }
        i += 1;
    }
    verdict
}

/// A command run per found file, where words holding `{...}` become the file name; with
/// `append`, the file name is added at the end when no word holds a placeholder (fd).
fn run_with_placeholders(ctx: Ctx, command: &[Arg], append: bool) -> Safety {
    let mut placeholder = false;
    let mut argv: Vec<Arg> = command
        .iter()
        .map(|arg| match arg.lit() {
            Some(w) if w.contains('{') && w.contains('}') => {
                placeholder = true;
                Arg::DynamicWord
            }
            _ => arg.clone(),
        })
        .collect();
    if append && !placeholder {
        argv.push(Arg::DynamicWord);
    }
    ctx.argv(&argv).at_least_unknown()
}

/// `fd`: read-only unless `-x`/`--exec`/`-X`/`--exec-batch` runs a command (up to `;`).
pub(crate) fn fd(ctx: Ctx, args: &[Arg]) -> Safety {
    let mut verdict = Safety::ReadOnly;
    let mut i = 0;
    while i < args.len() {
        let Some(word) = args[i].lit() else {
            verdict = verdict.join(Safety::Unknown);
            i += 1;
            continue;
        };
        i += 1;
        let runs = match word {
            "--exec" | "--exec-batch" => true,
            _ if word.starts_with("--exec") => return verdict.join(Safety::Unknown),
            _ if word.starts_with("--") => false,
            _ if word.starts_with('-') && word.contains(['x', 'X']) => {
                if !word.ends_with(['x', 'X']) {
                    return verdict.join(Safety::Unknown); // value attached to -x
                }
                true
            }
            _ => false,
        };
        if runs {
            let end = (i..args.len())
                .find(|&j| args[j].is(";"))
                .unwrap_or(args.len());
            if end == i {
                return verdict.join(Safety::Unknown);
            }
            verdict = verdict.join(run_with_placeholders(ctx, &args[i..end], true));
            i = end + 1;
        }
    }
    verdict
}
