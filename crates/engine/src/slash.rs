//! Slash commands: one parser and one list for every front end (the UI, `saki acp`); a
//! front end carries out the local ones (`/help`, `/quit`) and sends the rest as actions.

use saki_tools::ApprovalMode;

pub use saki_pod::commands::{is_built_in, BuiltIn, Place, BUILT_INS};

/// `/help`'s lines for the built-in commands `keep` keeps, in the list's order: the
/// usage, padded, then what it does.
pub fn help_lines(keep: impl Fn(&BuiltIn) -> bool) -> Vec<String> {
    BUILT_INS
        .iter()
        .filter(|b| keep(b))
        .flat_map(|b| {
            b.usage.iter().map(move |(args, what)| {
                let usage = if args.is_empty() {
                    format!("/{}", b.name)
                } else {
                    format!("/{} {args}", b.name)
                };
                format!("{usage:<21} {what}")
            })
        })
        .collect()
}

/// `/help` for a terminal: every built-in command.
pub fn help() -> String {
    help_lines(|_| true).join("\n")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Compress,
    /// `None`: show the current models.
    Model {
        name: Option<String>,
        fast: bool,
    },
    /// `None`: show the current mode.
    Approval(Option<ApprovalMode>),
    New,
    Resume(Option<String>),
    Stats,
    /// `/undo [N] [--force]`.
    Undo {
        turns: usize,
        force: bool,
    },
    Redo {
        force: bool,
    },
    Rewind {
        force: bool,
    },
    Mcp,
    Lsp,
    Skills,
    Memory,
    Quit,
}

/// Parses a line starting with `/`. `Err` says what is wrong, for an alert.
pub fn parse(line: &str) -> Result<Command, String> {
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or("/");
    let args: Vec<&str> = words.collect();
    let no_args = |command: Command| {
        if args.is_empty() {
            Ok(command)
        } else {
            Err(format!("{name} takes no arguments"))
        }
    };
    match name {
        "/help" | "/?" => no_args(Command::Help),
        "/compress" | "/compact" => no_args(Command::Compress),
        "/quit" | "/exit" => no_args(Command::Quit),
        "/new" | "/clear" => no_args(Command::New),
        "/stats" => no_args(Command::Stats),
        "/mcp" => no_args(Command::Mcp),
        "/lsp" => no_args(Command::Lsp),
        "/skills" => no_args(Command::Skills),
        "/memory" => no_args(Command::Memory),
        "/model" => match args.as_slice() {
            [] => Ok(Command::Model {
                name: None,
                fast: false,
            }),
            ["--fast"] => Ok(Command::Model {
                name: None,
                fast: true,
            }),
            ["--fast", model] => Ok(Command::Model {
                name: Some((*model).to_owned()),
                fast: true,
            }),
            [model] if !model.starts_with('-') => Ok(Command::Model {
                name: Some((*model).to_owned()),
                fast: false,
            }),
            _ => Err("usage: /model NAME or /model --fast NAME".into()),
        },
        "/approval" => match args.as_slice() {
            [] => Ok(Command::Approval(None)),
            [mode] => mode.parse().map(|m| Command::Approval(Some(m))),
            _ => Err("usage: /approval plan|default|auto-edit|yolo".into()),
        },
        "/resume" => match args.as_slice() {
            [] => Ok(Command::Resume(None)),
            [id] => Ok(Command::Resume(Some((*id).to_owned()))),
            _ => Err("usage: /resume [SESSION_ID]".into()),
        },
        "/undo" => {
            let force = args.contains(&"--force");
            match args.iter().filter(|a| **a != "--force").collect::<Vec<_>>()[..] {
                [] => Ok(Command::Undo { turns: 1, force }),
                [n] => match n.parse::<usize>() {
                    Ok(turns) if turns > 0 => Ok(Command::Undo { turns, force }),
                    _ => Err("usage: /undo [N] [--force] (N: how many turns, 1 or more)".into()),
                },
                _ => Err("usage: /undo [N] [--force]".into()),
            }
        }
        "/redo" | "/rewind" => {
            let force = match args.as_slice() {
                [] => false,
                ["--force"] => true,
                _ => return Err(format!("usage: {name} [--force]")),
            };
            Ok(if name == "/redo" {
                Command::Redo { force }
            } else {
                Command::Rewind { force }
            })
        }
        other => Err(format!("unknown command {other} (try /help)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_command() {
        assert_eq!(parse("/help"), Ok(Command::Help));
        assert_eq!(parse("/compress"), Ok(Command::Compress));
        assert_eq!(
            parse("/model gpt-5"),
            Ok(Command::Model {
                name: Some("gpt-5".into()),
                fast: false
            })
        );
        assert_eq!(
            parse("/model --fast mini"),
            Ok(Command::Model {
                name: Some("mini".into()),
                fast: true
            })
        );
        assert_eq!(
            parse("/approval auto-edit"),
            Ok(Command::Approval(Some(ApprovalMode::AutoEdit)))
        );
        assert_eq!(
            parse("/resume abc"),
            Ok(Command::Resume(Some("abc".into())))
        );
        assert_eq!(parse("/quit"), Ok(Command::Quit));
        assert_eq!(parse("/new"), Ok(Command::New));
        assert_eq!(parse("/stats"), Ok(Command::Stats));
        assert_eq!(parse("/lsp"), Ok(Command::Lsp));
        assert_eq!(parse("/skills"), Ok(Command::Skills));
        assert_eq!(parse("/memory"), Ok(Command::Memory));
        assert_eq!(
            parse("/undo"),
            Ok(Command::Undo {
                turns: 1,
                force: false
            })
        );
        assert_eq!(
            parse("/undo 3 --force"),
            Ok(Command::Undo {
                turns: 3,
                force: true
            })
        );
        assert_eq!(parse("/redo"), Ok(Command::Redo { force: false }));
        assert_eq!(
            parse("/rewind --force"),
            Ok(Command::Rewind { force: true })
        );
        assert!(parse("/undo 0").unwrap_err().contains("usage"));
        assert!(parse("/undo x y").unwrap_err().contains("usage"));
        assert!(parse("/rewind now").unwrap_err().contains("usage"));
    }

    #[test]
    fn bad_input_says_what_is_wrong() {
        assert_eq!(
            parse("/frob"),
            Err("unknown command /frob (try /help)".into())
        );
        assert!(parse("/approval sometimes")
            .unwrap_err()
            .contains("unknown approval mode"));
        assert!(parse("/help me").unwrap_err().contains("no arguments"));
        assert!(parse("/model --slow x").unwrap_err().contains("usage"));
    }

    /// A command the app parses that a repository's `.saki/commands/NAME.md` could
    /// replace would run the repository's text instead: the one list holds every name
    /// the engine parses, and the engine parses every name it lists for itself.
    #[test]
    fn the_one_list_and_the_parser_agree() {
        let known = |name: &str| !parse(&format!("/{name}")).is_err_and(|e| e.contains("unknown"));
        for b in BUILT_INS {
            for name in std::iter::once(&b.name).chain(b.aliases) {
                assert!(is_built_in(name));
                // A terminal's own commands are the UI's to carry out, before the engine.
                assert_eq!(known(name), b.place != Place::Terminal, "/{name}");
            }
        }
        for line in help().lines() {
            let name = line[1..].split_whitespace().next().unwrap();
            assert!(is_built_in(name), "{line}");
        }
        assert!(!is_built_in("review"));
    }
}
