//! Shell safety classifier: can a shell command be run without writing anything?
//!
//! [`classify`] parses a command line with tree-sitter-bash and answers with a [`Safety`]:
//!
//! - [`Safety::ReadOnly`] only when it can *prove* that every part of the command — every
//!   element of every list, pipeline, subshell, group, loop and conditional — is a known
//!   read-only command with read-only options, with no output redirection to a file, no
//!   command or process substitution and no construct that makes the shell run code it
//!   cannot see.
//! - [`Safety::Write`] when it can tell that some part writes (`rm`, `tee`, `sed -i`,
//!   `git commit`, `> file`, ...).
//! - [`Safety::Unknown`] for everything else: unknown programs, interpreters, `eval`,
//!   variables in command position, parse errors, network tools, interactive programs.
//!
//! Parts combine by the strongest verdict: `Write` over `Unknown` over `ReadOnly`, so
//! `ls; rm x` is `Write` and `ls; make-believe` is `Unknown`.
//!
//! Model of the shell. The classifier keeps, for every word, either its literal value
//! (after quote removal) or the fact that it is only known at run time ("dynamic":
//! variables, globs, brace expansion, substitutions). A command whose behaviour depends on
//! a dynamic word in a position where it could turn into a dangerous option is `Unknown`.
//! Variables set by the command itself are harmless as long as nothing evaluates them as
//! code, so the contexts where bash does that (arithmetic, `[[ -eq ]]`, `-v`, `${!x}`,
//! array subscripts, `${x@P}`) are accepted only with literal numbers or names.
//!
//! Where tree-sitter-bash is known to read text differently from bash (here-document
//! ends, expansions it leaves unparsed inside patterns and here-documents, control
//! characters), the verdict is `Unknown`.
//!
//! Assumptions: the command runs under `bash -c` (non-interactive: no aliases, no history
//! expansion) with output to a pipe (so git and others start no pager). The person's own
//! configuration is trusted (`PATH`, the environment, global git and cargo config); the
//! text of the command is not, and neither is the repository's own git configuration
//! (checked by [`check_scope`]).
//!
//! Read-only is not enough to run unasked: [`check_scope`] proves that a read-only
//! command reads nothing outside the workspace and no environment.
//!
//! Layout: `walk` parses and walks statements and commands, `expand` evaluates words,
//! `redirects` and `conditions` handle redirections and `[ ]` / `[[ ]]`; `words` removes
//! quotes and `options` scans command-line options; `commands` holds the table of command
//! rules, with the rules that need code in `rules`, `wrappers` (commands that run
//! commands), `git`, `sed`, `awk` and `packages`.

mod awk;
mod commands;
mod conditions;
mod expand;
mod git;
mod git_config;
mod options;
mod packages;
mod redirects;
pub mod roots;
mod rules;
mod scope;
mod sed;
mod walk;
mod words;
mod wrappers;

pub use scope::{check_scope, ScopeVerdict};

/// Verdict of [`classify`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Safety {
    /// Proven read-only: every command in it is known and reads only.
    ReadOnly,
    /// Some part of the command writes (files, repository state, packages, processes).
    Write,
    /// Neither could be proven.
    Unknown,
}

impl Safety {
    /// Stable lowercase name: `"read-only"`, `"write"` or `"unknown"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::ReadOnly => "read-only",
            Safety::Write => "write",
            Safety::Unknown => "unknown",
        }
    }

    /// Verdict of running both parts: `Write` wins over `Unknown`, which wins over
    /// `ReadOnly`.
    pub(crate) fn join(self, other: Safety) -> Safety {
        match (self, other) {
            (Safety::Write, _) | (_, Safety::Write) => Safety::Write,
            (Safety::Unknown, _) | (_, Safety::Unknown) => Safety::Unknown,
            (Safety::ReadOnly, Safety::ReadOnly) => Safety::ReadOnly,
        }
    }

    /// This verdict, but never `ReadOnly`.
    pub(crate) fn at_least_unknown(self) -> Safety {
        self.join(Safety::Unknown)
    }

    /// Joins the verdicts of several parts (`ReadOnly` for none).
    pub(crate) fn all(parts: impl IntoIterator<Item = Safety>) -> Safety {
        parts.into_iter().fold(Safety::ReadOnly, Safety::join)
    }
}

/// Classifies a shell command line (bash syntax) as read-only, writing or unknown.
///
/// Never panics; anything it cannot parse or understand is [`Safety::Unknown`].
pub fn classify(command: &str) -> Safety {
    walk::Ctx::top().script(command)
}
