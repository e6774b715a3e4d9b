//! Custom slash commands: Markdown files in `~/.config/saki/commands/*.md` (global) and
//! `.saki/commands/*.md` (the workspace's) become `/name`. The body is the prompt;
//! `$ARGUMENTS` is everything after the name, `$1`…`$9` its words (quotes group words),
//! and `@path` references in it resolve like a typed prompt's.
//!
//! Optional front matter between `---` lines sets `description`, `model` and `approval`.
//! It is parsed by hand: three `key: value` lines do not need a YAML parser, and a
//! malformed header must not cost the command (it is then read as plain text).
//!
//! A workspace command is text from a repository: it never changes the model or the
//! approval mode unless the workspace is trusted, and it is read only when it lives
//! inside the workspace (a symlink cannot make saki send another file as a prompt).

use std::path::{Path, PathBuf};

/// Largest command file read (a prompt, not a document).
const MAX_BYTES: u64 = 64 * 1024;
/// Where a built-in command is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// By the engine, for every front end (an editor too).
    Everywhere,
    /// By the engine, but an editor has its own way (it quits, resumes and picks).
    NotInEditors,
    /// By the terminal UI itself (it holds what the command needs).
    Terminal,
}

/// One built-in slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltIn {
    /// `/name`, without the slash.
    pub name: &'static str,
    /// Other names for it.
    pub aliases: &'static [&'static str],
    /// Its `/help` lines: the arguments after the name (may be empty), and what it does.
    pub usage: &'static [(&'static str, &'static str)],
    pub place: Place,
}

const fn built_in(
    name: &'static str,
    aliases: &'static [&'static str],
    usage: &'static [(&'static str, &'static str)],
    place: Place,
) -> BuiltIn {
    BuiltIn {
        name,
        aliases,
        usage,
        place,
    }
}

/// Every built-in slash command, in `/help`'s order: the one list the front ends' help,
/// popups and editor command lists are made from, and the names a custom command cannot
/// take (it would run a repository's text in their place).
pub const BUILT_INS: &[BuiltIn] = &[
    built_in("help", &["?"], &[("", "this list")], Place::Everywhere),
    built_in(
        "compress",
        &["compact"],
        &[(
            "",
            "compact the context now (shows tokens before and after)",
        )],
        Place::Everywhere,
    ),
    built_in(
        "model",
        &[],
        &[
            ("NAME", "switch the model for the next turns"),
            (
                "--fast NAME",
                "switch the fast model (suggestions, speculation, summaries)",
            ),
        ],
        Place::Everywhere,
    ),
    built_in(
        "approval",
        &[],
        &[(
            "MODE",
            "plan, default, auto-edit or yolo (Shift+Tab cycles)",
        )],
        Place::Everywhere,
    ),
    built_in(
        "new",
        &["clear"],
        &[("", "start a new session")],
        Place::Everywhere,
    ),
    built_in(
        "resume",
        &[],
        &[("[ID]", "continue a recent session (a picker without ID)")],
        Place::NotInEditors,
    ),
    built_in(
        "stats",
        &[],
        &[("", "what reading ahead did and cost (tokens by kind)")],
        Place::Everywhere,
    ),
    built_in(
        "undo",
        &[],
        &[(
            "[N] [--force]",
            "take back the last turn's file changes (or the last N turns')",
        )],
        Place::Everywhere,
    ),
    built_in(
        "redo",
        &[],
        &[("[--force]", "put back what the last /undo took back")],
        Place::Everywhere,
    ),
    built_in(
        "rewind",
        &[],
        &[(
            "[--force]",
            "pick a turn: files and conversation go back to before it",
        )],
        Place::NotInEditors,
    ),
    built_in(
        "mcp",
        &[],
        &[("", "the MCP servers, their state and their tools")],
        Place::Everywhere,
    ),
    built_in(
        "lsp",
        &[],
        &[("", "the language servers, their states and their counts")],
        Place::Everywhere,
    ),
    built_in(
        "skills",
        &[],
        &[("", "the skills the model can load")],
        Place::Everywhere,
    ),
    built_in(
        "memory",
        &[],
        &[(
            "",
            "the AGENTS.md files in effect and where remember writes",
        )],
        Place::Everywhere,
    ),
    built_in(
        "export",
        &[],
        &[(
            "[md|html|json] [FILE]",
            "write this session as Markdown, HTML or JSON",
        )],
        Place::Terminal,
    ),
    built_in(
        "shells",
        &[],
        &[("", "the background shell commands and their state")],
        Place::Terminal,
    ),
    built_in(
        "quit",
        &["exit"],
        &[("", "leave (also Ctrl+D on an empty prompt)")],
        Place::NotInEditors,
    ),
];

/// Whether `name` (without the slash) is a built-in command or one of its aliases.
pub fn is_built_in(name: &str) -> bool {
    BUILT_INS
        .iter()
        .any(|b| b.name == name || b.aliases.contains(&name))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// `/name`, without the slash.
    pub name: String,
    pub description: Option<String>,
    /// The model this command runs with (only honoured from a trusted file).
    pub model: Option<String>,
    /// The approval mode this command runs in (only honoured from a trusted file).
    pub approval: Option<String>,
    pub body: String,
    pub path: PathBuf,
    pub from_workspace: bool,
}

impl CustomCommand {
    /// The prompt for `/name ARGS`.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words = split_words(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                used = true;
                rest = tail;
            } else if let Some(d) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
                let n = d as usize - '1' as usize;
                out.push_str(words.get(n).map_or("", String::as_str));
                used = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        let mut out = out.trim().to_owned();
        if !used && !args.is_empty() {
            // A body that names no arguments still gets them, after it.
            out.push_str("\n\n");
            out.push_str(args);
        }
        out
    }
}

/// Words of `args`, with "double" or 'single' quotes grouping words.
fn split_words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut any = false;
    for c in args.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

/// The commands of the global directory and the workspace's (a workspace command of the
/// same name wins); problems found, for alerts. `workspace_trusted` decides whether a
/// workspace command's `model` and `approval` count.
pub fn load(
    global_dir: Option<&Path>,
    workspace: &Path,
    workspace_trusted: bool,
) -> (Vec<CustomCommand>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut commands: Vec<CustomCommand> = Vec::new();
    let sources = global_dir
        .map(|d| (d.join("commands"), false))
        .into_iter()
        .chain(std::iter::once((workspace.join(".saki/commands"), true)));
    for (dir, from_workspace) in sources {
        for command in read_dir(&dir, from_workspace, workspace, &mut warnings) {
            let mut command = command;
            if from_workspace && !workspace_trusted {
                let model = command.model.take();
                let approval = command.approval.take();
                if model.is_some() || approval.is_some() {
                    warnings.push(format!(
                        "/{}: its model and approval are ignored: this workspace is not trusted \
                         (`saki trust` trusts it)",
                        command.name
                    ));
                }
            }
            commands.retain(|c| c.name != command.name);
            commands.push(command);
        }
    }
    commands.sort_by(|a, b| a.name.cmp(&b.name));
    (commands, warnings)
}

fn read_dir(
    dir: &Path,
    from_workspace: bool,
    workspace: &Path,
    warnings: &mut Vec<String>,
) -> Vec<CustomCommand> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let shown = path.display();
        if !valid_name(&name) {
            warnings.push(format!(
                "{shown}: `{}` is not a command name (letters, digits, - and _)",
                name.escape_debug()
            ));
            continue;
        }
        if is_built_in(&name) {
            warnings.push(format!(
                "{shown}: /{name} is a built-in command; the file is ignored"
            ));
            continue;
        }
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        if from_workspace && !real.starts_with(&root) {
            warnings.push(format!("{shown}: leads outside the workspace; ignored"));
            continue;
        }
        match std::fs::metadata(&real) {
            Ok(meta) if meta.is_file() && meta.len() <= MAX_BYTES => {}
            Ok(meta) if meta.is_file() => {
                warnings.push(format!("{shown}: larger than {MAX_BYTES} bytes; ignored"));
                continue;
            }
            _ => continue,
        }
        let text = match std::fs::read(&real) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                warnings.push(format!("{shown}: {e}"));
                continue;
            }
        };
        out.push(parse(name, &text, path, from_workspace));
    }
    out
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A command from its file's text: front matter (when well formed), then the body.
pub fn parse(name: String, text: &str, path: PathBuf, from_workspace: bool) -> CustomCommand {
    let mut command = CustomCommand {
        name,
        description: None,
        model: None,
        approval: None,
        body: text.trim().to_owned(),
        path,
        from_workspace,
    };
    let text = text.trim_start_matches('\u{feff}');
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return command;
    };
    let Some(end) = rest.find("\n---") else {
        return command;
    };
    let header = &rest[..end];
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    for line in header.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        let value = (!value.is_empty()).then(|| value.to_owned());
        match key.trim() {
            "description" => command.description = value,
            "model" => command.model = value,
            "approval" => command.approval = value,
            _ => {}
        }
    }
    command.body = body.trim().to_owned();
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(text: &str) -> CustomCommand {
        parse("review".into(), text, PathBuf::from("review.md"), false)
    }

    #[test]
    fn arguments_fill_their_places() {
        let c = command("Review $1 against $2.\nAll: $ARGUMENTS. Cost: $5 and $x.");
        assert_eq!(
            c.expand(r#"src/a.rs "the old one""#),
            "Review src/a.rs against the old one.\nAll: src/a.rs \"the old one\". Cost:  and $x."
        );
        let plain = command("Review the diff.");
        assert_eq!(plain.expand(""), "Review the diff.");
        assert_eq!(plain.expand("carefully"), "Review the diff.\n\ncarefully");
    }

    #[test]
    fn front_matter_sets_description_model_and_approval() {
        let c = command("---\ndescription: \"Review a file\"\nmodel: fast-one\napproval: plan\nother: x\n---\nReview @$1\n");
        assert_eq!(c.description.as_deref(), Some("Review a file"));
        assert_eq!(c.model.as_deref(), Some("fast-one"));
        assert_eq!(c.approval.as_deref(), Some("plan"));
        assert_eq!(c.body, "Review @$1");
        // An unclosed header is text.
        let c = command("---\ndescription: x\nReview");
        assert_eq!(c.description, None);
        assert!(c.body.starts_with("---"));
    }

    #[test]
    fn workspace_commands_need_trust_for_model_and_approval_and_stay_inside() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let global = home.path().join("saki");
        std::fs::create_dir_all(global.join("commands")).unwrap();
        std::fs::write(global.join("commands/review.md"), "global review").unwrap();
        std::fs::write(global.join("commands/help.md"), "shadow help").unwrap();
        // A terminal's own command is reserved too (the UI would never run the file).
        std::fs::write(global.join("commands/export.md"), "shadow export").unwrap();
        std::fs::write(global.join("commands/bad name.md"), "x").unwrap();
        let local = ws.path().join(".saki/commands");
        std::fs::create_dir_all(&local).unwrap();
        std::fs::write(
            local.join("review.md"),
            "---\nmodel: big\napproval: yolo\n---\nlocal review",
        )
        .unwrap();
        std::fs::write(home.path().join("secret"), "TOP SECRET").unwrap();
        std::os::unix::fs::symlink(home.path().join("secret"), local.join("leak.md")).unwrap();

        let (commands, warnings) = load(Some(&global), ws.path(), false);
        let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["review"]);
        assert_eq!(commands[0].body, "local review");
        assert_eq!(
            (commands[0].model.clone(), commands[0].approval.clone()),
            (None, None)
        );
        let all = warnings.join("\n");
        assert!(all.contains("/help is a built-in"), "{all}");
        assert!(all.contains("/export is a built-in"), "{all}");
        assert!(all.contains("not a command name"), "{all}");
        assert!(
            all.contains("leak.md: leads outside the workspace"),
            "{all}"
        );
        assert!(all.contains("not trusted"), "{all}");

        let (trusted, _) = load(Some(&global), ws.path(), true);
        assert_eq!(trusted[0].model.as_deref(), Some("big"));
        assert_eq!(trusted[0].approval.as_deref(), Some("yolo"));
    }
}
