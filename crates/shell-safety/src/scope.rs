//! Scope: may a read-only command run unasked *here*?
//!
//! [`classify`](super::classify) proves that a command writes nothing; it says nothing
//! about what the command reads. `cat ~/.ssh/id_rsa` and `echo $ANTHROPIC_API_KEY` are
//! read-only, and their output goes to the model. [`check_scope`] is the second proof a
//! command needs before it runs without the person's say-so:
//!
//! - every word that could name a path resolves (symlinks followed) inside the workspace
//!   roots, relative to the workspace root and to every directory the command `cd`s to;
//!   a few devices (`/dev/null`, ...) are fine. Words are split at quotes, blanks and
//!   separators (`=`, `:`, `,`, ...), so `--file=/x`, `-f/x`, `HEAD:../x` and a path
//!   inside an awk or sed program are all seen;
//! - it reads no environment: no `$VAR` the command did not set itself (bash's own
//!   counters such as `$?`, `$1`, `$RANDOM` are fine), no `env` / `printenv` / `set` /
//!   `export -p` listing, no `ps e`, no awk `ENVIRON`, no jq `env` / `$ENV`;
//! - words are read as bash reads them: quotes join (`.""./x` is `../x`), braces expand
//!   (`{.,.}./x` is `../x`), a backslash-newline is removed;
//! - no word is computed at run time: an argument holding a command substitution, an
//!   arithmetic expansion or a variable is out of scope, unless the variable is one of
//!   bash's numeric ones (`$?`), a `for` loop's variable standing alone over checked
//!   words, or set once, before, to a plain literal at the top level (then its value is
//!   checked); `xargs`, which takes its arguments from its input, is out of scope;
//! - when it can reach files chosen at run time (a glob, `find -L`, `grep -R`, `rg -L`,
//!   ...), the workspace holds no symlink that leads outside it, and no glob can match
//!   `..`;
//! - when it runs git: git uses the workspace's own repository (no `-C`, `--git-dir`,
//!   `--work-tree` or `GIT_*` variable pointing elsewhere, no `cd` into a directory that
//!   is a repository of its own, bare ones included), `git config` is not run (it prints
//!   the person's global configuration), and the repository's configuration, as git
//!   itself reads it, holds nothing that makes git run a program (see
//!   [`super::git_config`]).
//!
//! A word that is not a path at all (`grep -n fn src`) resolves inside the workspace and
//! costs nothing; a pattern that looks like an outside path (`grep /usr x`) is asked
//! about. Being wrong in that direction is the point.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser};

mod computed;

use super::git_config;
use super::walk::children;
use super::words;
use crate::roots::Roots;
use computed::{expansions, has_expansion, literal_value, whole_variable, Computed};

/// Most path-like words checked before the command counts as too large to prove.
const MAX_WORDS: usize = 4096;
/// Most workspace entries looked at for outbound symlinks.
const MAX_SYMLINK_SCAN: usize = 200_000;

/// Devices a command may name.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/0",
    "/dev/fd/1",
    "/dev/fd/2",
];

/// Variables bash sets itself; reading them reveals nothing from the environment.
const SHELL_VARIABLES: &[&str] = &[
    "PWD",
    "RANDOM",
    "SRANDOM",
    "LINENO",
    "SECONDS",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "PIPESTATUS",
    "BASH_REMATCH",
    "OSTYPE",
    "HOSTTYPE",
    "MACHTYPE",
    "BASH_VERSION",
    "REPLY",
    "OPTARG",
    "OPTIND",
    "IFS",
];

/// What keeps a command from running unasked: empty when it stays in scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeVerdict {
    problems: Vec<String>,
}

impl ScopeVerdict {
    pub fn in_scope(&self) -> bool {
        self.problems.is_empty()
    }

    /// Why the command is out of scope, one reason per entry (at most a few).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    fn add(&mut self, problem: String) {
        if self.problems.len() < 8 && !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
    }
}

/// Checks that a command reads only inside `workspace` and no environment. Meant for
/// commands [`classify`](super::classify) proved read-only; anything it cannot parse is
/// out of scope.
pub fn check_scope(command: &str, workspace: &Roots) -> ScopeVerdict {
    let mut verdict = ScopeVerdict::default();
    let mut parser = Parser::new();
    let tree = parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()
        .and_then(|()| parser.parse(command, None));
    let Some(tree) = tree.filter(|t| !t.root_node().has_error()) else {
        verdict.add("the command could not be parsed".into());
        return verdict;
    };
    let mut facts = Facts::default();
    facts.collect(command, tree.root_node());
    facts.judge(workspace, &mut verdict);
    verdict
}

/// What one walk over the syntax tree found.
#[derive(Default)]
struct Facts {
    /// Words after quote removal, as they may name paths.
    words: Vec<String>,
    /// Directories the command changes to (`cd`, `pushd`), in order.
    cd_targets: Vec<String>,
    assigned: BTreeSet<String>,
    referenced: BTreeSet<String>,
    /// Reasons it reads the environment other than variable references.
    env_reads: Vec<String>,
    /// Other reasons the words cannot be checked.
    unchecked: Vec<String>,
    /// A command that can open files chosen at run time (and follow symlinks there).
    runtime_paths: Option<String>,
    runs_git: bool,
    /// Directories git is pointed at (`-C DIR`); each must hold the workspace's own
    /// repository.
    git_dirs: Vec<String>,
    /// Arguments and redirect targets whose value is computed at run time.
    computed: Vec<Computed>,
    /// How often each variable is assigned (`x=`, `for x in`, `export x=`).
    assignments: BTreeMap<String, usize>,
    /// Variables set once at the top level to a literal: value and where it ends.
    literals: BTreeMap<String, (String, usize)>,
    /// `for` variables whose list holds a computed word.
    computed_loops: BTreeSet<String>,
    /// Variables may be set by means this walk does not follow (`read`, `declare`,
    /// `printf -v`, ...).
    other_assignments: bool,
}

impl Facts {
    fn collect(&mut self, src: &str, node: Node<'_>) {
        let text = src.get(node.byte_range()).unwrap_or("");
        match node.kind() {
            "variable_assignment" => {
                if let Some(name) = node.child_by_field_name("name") {
                    let name = src.get(name.byte_range()).unwrap_or("").to_owned();
                    *self.assignments.entry(name.clone()).or_default() += 1;
                    let top_level = node.parent().is_some_and(|p| p.kind() == "program");
                    let value = node
                        .child_by_field_name("value")
                        .and_then(|v| literal_value(src, v));
                    if let (true, Some(value)) = (top_level, value) {
                        self.literals.insert(name.clone(), (value, node.end_byte()));
                    }
                    self.assigned.insert(name);
                }
            }
            "for_statement" => {
                if let Some(var) = node.child_by_field_name("variable") {
                    let name = src.get(var.byte_range()).unwrap_or("").to_owned();
                    *self.assignments.entry(name.clone()).or_default() += 1;
                    let computed_list = children(node)
                        .into_iter()
                        .filter(|(field, _)| *field == Some("value"))
                        .any(|(_, v)| has_expansion(v));
                    if computed_list {
                        self.computed_loops.insert(name.clone());
                    }
                    self.assigned.insert(name);
                }
            }
            "declaration_command" | "unset_command" => self.other_assignments = true,
            "file_redirect" => {
                if let Some(target) = node.child_by_field_name("destination") {
                    self.computed_word(src, target);
                }
            }
            "variable_name" => {
                self.referenced.insert(text.to_owned());
            }
            "expansion" if text.starts_with("${!") => {
                self.env_reads
                    .push(format!("`{text}` lists or reads variables by name"));
            }
            "command" => self.command(src, node),
            // The program itself is run, not read: only expansions in its name matter.
            "command_name" => {
                for (_, child) in children(node) {
                    self.collect_expansions(src, child);
                }
                return;
            }
            "word" | "raw_string" | "string" | "ansi_c_string" | "concatenation" | "number"
            | "heredoc_content" | "regex" | "extglob_pattern" => {
                if node.kind() == "word" && words::unquote_word(text).is_none() {
                    self.runtime_paths
                        .get_or_insert_with(|| format!("`{text}` is expanded at run time"));
                }
                // `$'...'` decodes escapes (`\x2e` is `.`), also as part of a longer word.
                if words::has_ansi_c_escape(text) {
                    self.unchecked
                        .push(format!("`{text}` has escapes that are not checked"));
                }
                // Bash expands braces before it removes quotes; a here-document body is
                // not a word.
                let expanded = match node.kind() {
                    "heredoc_content" => Some(vec![text.to_owned()]),
                    _ => words::expand_braces(text),
                };
                match expanded {
                    Some(alternatives) => {
                        for alternative in alternatives {
                            self.words.push(plain_text(&alternative));
                        }
                    }
                    None => self
                        .unchecked
                        .push(format!("`{text}` expands to too many words to check")),
                }
            }
            _ => {}
        }
        for (_, child) in children(node) {
            // Parts of a word were taken whole above; only expansions inside matter.
            if is_word(node.kind()) && is_word(child.kind()) {
                self.collect_expansions(src, child);
            } else {
                self.collect(src, child);
            }
        }
    }

    /// Inside a word already taken: only variable references.
    fn collect_expansions(&mut self, src: &str, node: Node<'_>) {
        if is_word(node.kind()) {
            for (_, child) in children(node) {
                self.collect_expansions(src, child);
            }
        } else {
            self.collect(src, node);
        }
    }

    fn command(&mut self, src: &str, node: Node<'_>) {
        for (field, child) in children(node) {
            if field == Some("argument") {
                self.computed_word(src, child);
            }
        }
        let argv: Vec<String> = children(node)
            .into_iter()
            .filter(|(field, _)| matches!(field, Some("name" | "argument")))
            .map(|(_, c)| plain_text(src.get(c.byte_range()).unwrap_or("")))
            .collect();
        let Some((program, args)) = argv.split_first() else {
            return;
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let has = |flags: &[&str]| args.iter().any(|a| flags.contains(a));
        let short = |letter: char| {
            args.iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(letter))
        };
        let operands = || args.iter().filter(|a| !a.starts_with('-'));
        match name {
            "cd" | "pushd" => match operands().next() {
                Some(dir) if *dir != "-" => self.cd_targets.push((*dir).to_owned()),
                _ => self.env_reads.push(format!(
                    "`{name}` without a directory goes to $HOME or $OLDPWD"
                )),
            },
            "printenv" => self
                .env_reads
                .push("`printenv` prints the environment".into()),
            "env" if env_prints(&args) => {
                self.env_reads.push("`env` prints the environment".into())
            }
            "set" | "export" | "declare" | "typeset"
                if args.is_empty() || has(&["-p"]) || args.iter().all(|a| a.starts_with('-')) =>
            {
                self.env_reads.push(format!("`{name}` lists variables"))
            }
            // Other processes' command lines carry tokens (`--token=…`) and their
            // environments keys; the kernel hides /proc from unasked commands anyway.
            "ps" | "pgrep" | "pkill" | "pstree" | "top" | "htop" | "pidof" => self.env_reads.push(
                format!("`{name}` shows other processes and their command lines"),
            ),
            "awk" | "gawk" | "mawk" | "nawk" if args.iter().any(|a| a.contains("ENVIRON")) => {
                self.env_reads.push("awk reads ENVIRON".into())
            }
            "jq" | "gojq" | "jaq" if args.iter().any(|a| mentions_jq_env(a)) => {
                self.env_reads.push("jq reads `env` / `$ENV`".into())
            }
            "read" | "mapfile" | "readarray" | "getopts" | "let" | "eval" | "source" | "."
            | "declare" | "typeset" | "local" | "export" | "readonly" | "unset" => {
                self.other_assignments = true
            }
            "printf" if args.iter().any(|a| a.starts_with("-v")) => self.other_assignments = true,
            "git" => {
                self.runs_git = true;
                self.git_arguments(&args);
                if args.contains(&"var") {
                    self.env_reads
                        .push("`git var` prints variables and configuration".into());
                }
                if args.iter().any(|a| {
                    matches!(*a, "--global" | "--system" | "--file" | "-f" | "--blob")
                        || a.starts_with("--file=")
                        || a.starts_with("--blob=")
                }) && args.contains(&"config")
                {
                    self.env_reads
                        .push("`git config` outside the repository's own file".into());
                }
            }
            "xargs" => self
                .unchecked
                .push("`xargs` runs a command on words it reads at run time".into()),
            "find" if has(&["-L", "-follow", "-H"]) => self.follows("find -L"),
            "grep" | "egrep" | "fgrep" | "zgrep"
                if short('R') || has(&["--dereference-recursive"]) =>
            {
                self.follows("grep -R")
            }
            "rg" | "fd" | "fdfind" if short('L') || has(&["--follow"]) => self.follows(name),
            "ls" | "du" | "stat" | "file" if short('L') || has(&["--dereference"]) => {
                self.follows(name)
            }
            "tree" if short('l') => self.follows("tree -l"),
            _ => {}
        }
    }

    /// What a git command line says about which repository git uses and whether it
    /// prints configuration.
    fn git_arguments(&mut self, args: &[&str]) {
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match *arg {
                "-C" => {
                    if let Some(dir) = rest.next() {
                        self.git_dirs.push((*dir).to_owned());
                    }
                }
                "-c" | "--config-env" | "--namespace" | "--exec-path" => {
                    rest.next();
                }
                a if a.starts_with("--git-dir")
                    || a.starts_with("--work-tree")
                    || a.starts_with("--exec-path")
                    || a.starts_with("--config-env") =>
                {
                    self.unchecked.push(format!(
                        "`git {a}` points git at another repository or program"
                    ));
                    return;
                }
                a if a.starts_with('-') => {}
                "config" => {
                    self.env_reads
                        .push("`git config` prints the person's git configuration".into());
                    return;
                }
                _ => return,
            }
        }
    }

    /// Records `node` (an argument or a redirect target) when it holds an expansion.
    fn computed_word(&mut self, src: &str, node: Node<'_>) {
        if !has_expansion(node) {
            return;
        }
        let mut names = Vec::new();
        let mut opaque = false;
        expansions(src, node, &mut names, &mut opaque);
        self.computed.push(Computed {
            text: src.get(node.byte_range()).unwrap_or("").to_owned(),
            start: node.start_byte(),
            names,
            whole: whole_variable(src, node),
            opaque,
        });
    }

    fn follows(&mut self, what: &str) {
        self.runtime_paths
            .get_or_insert_with(|| format!("`{what}` opens files chosen at run time"));
    }

    fn judge(mut self, workspace: &Roots, verdict: &mut ScopeVerdict) {
        for reason in &self.unchecked {
            verdict.add(reason.clone());
        }
        for reason in &self.env_reads {
            verdict.add(format!("reads the environment: {reason}"));
        }
        for name in self.referenced.difference(&self.assigned) {
            let positional = name.bytes().all(|b| b.is_ascii_digit());
            if !positional && !SHELL_VARIABLES.contains(&name.as_str()) {
                verdict.add(format!("reads the environment: ${name}"));
            }
        }
        let computed = std::mem::take(&mut self.computed);
        for word in &computed {
            match self.computed_value(word) {
                Ok(Some(value)) => self.words.push(value),
                Ok(None) => {}
                Err(why) => verdict.add(why),
            }
        }
        let mut bases = vec![workspace.root().to_path_buf()];
        for target in &self.cd_targets {
            let more: Vec<PathBuf> = bases
                .iter()
                .filter_map(|base| resolve(workspace, base, target).ok())
                .collect();
            bases.extend(more);
        }
        let tokens: Vec<&str> = self.words.iter().flat_map(|w| path_tokens(w)).collect();
        if tokens.len() > MAX_WORDS {
            verdict.add(format!(
                "names {} words; too many to check their paths",
                tokens.len()
            ));
            return;
        }
        for token in tokens {
            if let Err(problem) = check_token(workspace, &bases, token) {
                verdict.add(problem);
            }
        }
        if let Some(why) = &self.runtime_paths {
            if let Some(link) = outbound_symlink(workspace) {
                verdict.add(format!(
                    "{why}, and the workspace has a symlink leading outside it: {link}"
                ));
            }
        }
        if self.runs_git {
            let own = git_config::repository_of(workspace.root());
            let mut git_bases = bases.clone();
            for dir in &self.git_dirs {
                match bases
                    .iter()
                    .map(|base| resolve(workspace, base, dir))
                    .collect::<Result<Vec<_>, _>>()
                {
                    Ok(found) => git_bases.extend(found),
                    Err(_) => verdict.add(format!("`git -C {dir}` leads outside the workspace")),
                }
            }
            for base in &git_bases {
                let repository = git_config::repository_of(base);
                if repository != own {
                    verdict.add(format!(
                        "git in {} would use {}, not the workspace's own repository",
                        workspace.display(base),
                        repository
                            .as_deref()
                            .map_or("no repository".into(), |r| r.display().to_string())
                    ));
                } else if let Some(problem) = git_config::danger(base) {
                    verdict.add(problem);
                }
            }
            if self.assigned.iter().any(|name| name.starts_with("GIT_"))
                || self
                    .words
                    .iter()
                    .any(|w| w.starts_with("GIT_") && w.contains('='))
            {
                verdict.add("sets a GIT_ variable, which can point git elsewhere".into());
            }
        }
    }
}

fn is_word(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "raw_string"
            | "string"
            | "ansi_c_string"
            | "concatenation"
            | "number"
            | "string_content"
            | "heredoc_content"
            | "regex"
            | "extglob_pattern"
    )
}

/// A word's text after quote removal as bash does it ([`words::quote_removed`]): what
/// the program sees for a literal word, and a fair stand-in for the literal parts of
/// others.
fn plain_text(raw: &str) -> String {
    words::quote_removed(raw)
}

/// Whether `env ARGS` runs no command (and so prints the environment).
fn env_prints(args: &[&str]) -> bool {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "-u" | "--unset" | "-C" | "--chdir" => {
                rest.next();
            }
            a if a.starts_with('-') || a.contains('=') => {}
            _ => return false,
        }
    }
    true
}

fn mentions_jq_env(program: &str) -> bool {
    program.contains("$ENV")
        || program
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .any(|t| t == "env")
}

/// Pieces of a word that could name a path: split at blanks, quotes and separators that
/// option syntaxes use (`--x=/p`, `a:b`, `a,b`), with URLs left out, and for an option
/// with its value attached (`-f/etc/x`) the value from its first `/`, `~` or `.`.
fn path_tokens(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for piece in word.split(|c: char| c.is_whitespace() || "=,;|&()<>{}[]'\"`".contains(c)) {
        if piece.is_empty() || piece.contains("://") {
            continue;
        }
        for part in piece.split(':') {
            if part.is_empty() {
                continue;
            }
            if part.starts_with('-') {
                if let Some(at) = part.find(['/', '~', '.']) {
                    out.push(&part[at..]);
                }
            } else {
                out.push(part);
            }
        }
    }
    out
}

/// `Ok` when `token`, as a path, stays inside the workspace from every base directory.
fn check_token(workspace: &Roots, bases: &[PathBuf], token: &str) -> Result<(), String> {
    if token.starts_with('~') {
        return Err(format!("`{token}` is in a home directory"));
    }
    let glob = token.contains(['*', '?', '[']);
    // A glob is checked through its fixed leading directories.
    let fixed = if glob {
        let cut = token.find(['*', '?', '[']).unwrap_or(token.len());
        token[..cut].rfind('/').map_or("", |slash| &token[..=slash])
    } else {
        token
    };
    // `.*` matches `..` in bash before 5.2 (and with `globskipdots` off).
    if glob
        && token
            .split('/')
            .any(|c| c.starts_with('.') && c.contains(['*', '?', '[']))
    {
        return Err(format!("`{token}` can match `..`"));
    }
    if fixed.starts_with('/') {
        if DEVICES.contains(&fixed) {
            return Ok(());
        }
        return resolve(workspace, Path::new("/"), fixed)
            .map(drop)
            .map_err(|_| format!("`{token}` is outside the workspace"));
    }
    if fixed.is_empty() {
        if glob && token.split('/').any(|c| c == "..") {
            return Err(format!("`{token}` reaches outside the workspace"));
        }
        return Ok(());
    }
    for base in bases {
        // A name without a slash only matters when it is a symlink.
        if !fixed.contains('/') && fixed != ".." {
            let is_link = std::fs::symlink_metadata(base.join(fixed))
                .is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                continue;
            }
        }
        if resolve(workspace, base, fixed).is_err() {
            return Err(format!("`{token}` leads outside the workspace"));
        }
    }
    if glob && token[fixed.len()..].split('/').any(|c| c == "..") {
        return Err(format!("`{token}` reaches outside the workspace"));
    }
    Ok(())
}

/// `path` from `base`, resolved like a tool path (symlinks followed, missing tails allowed).
fn resolve(workspace: &Roots, base: &Path, path: &str) -> Result<PathBuf, String> {
    let full = base.join(path);
    let full = full.to_str().ok_or("not UTF-8")?;
    workspace
        .resolve_literal_for_write(full)
        .map_err(|e| e.to_string())
}

/// The first symlink under the workspace roots whose target is outside them, as
/// `link -> target`; also `Some` when the tree is too large to look through.
fn outbound_symlink(workspace: &Roots) -> Option<String> {
    let mut seen = 0usize;
    for root in workspace.roots() {
        let walk = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .follow_links(false)
            .build();
        for entry in walk.flatten() {
            seen += 1;
            if seen > MAX_SYMLINK_SCAN {
                return Some(format!(
                    "(more than {MAX_SYMLINK_SCAN} entries, not all checked)"
                ));
            }
            if !entry.path_is_symlink() {
                continue;
            }
            let inside = entry
                .path()
                .canonicalize()
                .is_ok_and(|real| workspace.roots().iter().any(|r| real.starts_with(r)));
            if !inside {
                let target = std::fs::read_link(entry.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                return Some(format!("{} -> {target}", workspace.display(entry.path())));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_at_separators_and_attached_values() {
        assert_eq!(path_tokens("--file=/etc/x"), ["/etc/x"]);
        assert_eq!(path_tokens("-f/etc/x"), ["/etc/x"]);
        assert_eq!(path_tokens("HEAD:../x"), ["HEAD", "../x"]);
        assert_eq!(path_tokens("see https://x.io/a b"), ["see", "b"]);
        assert_eq!(
            path_tokens("{ getline < \"/etc/passwd\" }"),
            ["getline", "/etc/passwd"]
        );
        assert_eq!(path_tokens("-n"), Vec::<&str>::new());
    }

    #[test]
    fn plain_text_drops_quotes_and_escapes() {
        assert_eq!(plain_text("\\/etc/passwd"), "/etc/passwd");
        assert_eq!(plain_text("'a b'"), "a b");
        assert_eq!(plain_text(".\"\"./x"), "../x");
    }

    #[test]
    fn jq_env_is_a_word_not_a_substring() {
        assert!(mentions_jq_env("env.HOME"));
        assert!(mentions_jq_env("$ENV.PATH"));
        assert!(!mentions_jq_env(".environment"));
    }
}
