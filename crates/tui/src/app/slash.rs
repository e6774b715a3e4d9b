//! Slash commands in the input: typing `/` at the start opens a popup of the built-in and
//! the person's custom commands, narrowed as the name is typed (Tab or Enter completes
//! it). A custom command is sent as a prompt: the engine expands it.

use super::{App, Popup};
use crate::finder::FileMatch;

/// One command the popup and `/help` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEntry {
    pub name: String,
    pub description: String,
    pub custom: bool,
}

/// The built-in commands (the engine's one list, a terminal's own included), each with
/// what its first `/help` line says it does.
pub fn built_in() -> Vec<CommandEntry> {
    crate::commands::BUILT_INS
        .iter()
        .map(|b| CommandEntry {
            name: b.name.to_owned(),
            description: b.usage.first().map_or("", |(_, what)| what).to_owned(),
            custom: false,
        })
        .collect()
}

impl App {
    /// The person's custom commands (name, description), for the popup and `/help`.
    pub fn set_custom_commands(&mut self, commands: Vec<(String, String)>) {
        self.commands.retain(|c| !c.custom);
        self.commands.extend(
            commands
                .into_iter()
                .map(|(name, description)| CommandEntry {
                    name,
                    description,
                    custom: true,
                }),
        );
    }

    /// `/help`'s lines for the custom commands (empty without any).
    pub(super) fn custom_help(&self) -> String {
        let lines: Vec<String> = self
            .commands
            .iter()
            .filter(|c| c.custom)
            .map(|c| format!("{:<21} {}", format!("/{}", c.name), c.description))
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        format!("your commands:\n{}", lines.join("\n"))
    }

    /// Whether `line` runs one of the person's commands; then it is sent as a prompt.
    pub(super) fn is_custom(&self, line: &str) -> bool {
        let name = line
            .trim_start()
            .strip_prefix('/')
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("");
        self.commands.iter().any(|c| c.custom && c.name == name)
    }

    pub(super) fn open_command_popup(&mut self) {
        self.popup = Some(Popup {
            start: 0,
            matches: Vec::new(),
            selected: 0,
            commands: true,
        });
    }

    /// The commands whose names match what follows the `/` (prefix matches first).
    pub(super) fn command_matches(&self, query: &str) -> Vec<FileMatch> {
        let query = query.to_ascii_lowercase();
        let mut prefix = Vec::new();
        let mut inside = Vec::new();
        for c in &self.commands {
            let name = c.name.to_ascii_lowercase();
            // Char indices in `/name`: the slash is index 0.
            let at = |start: usize| (start..start + query.len()).map(|i| i + 1).collect();
            if name.starts_with(&query) {
                prefix.push(FileMatch {
                    path: format!("/{}", c.name),
                    indices: at(0),
                });
            } else if let Some(start) = name.find(&query) {
                inside.push(FileMatch {
                    path: format!("/{}", c.name),
                    indices: at(start),
                });
            }
        }
        prefix.extend(inside);
        prefix.truncate(super::POPUP_ROWS);
        prefix
    }

    /// The description the popup shows beside `/name`.
    pub fn command_description(&self, shown: &str) -> Option<&str> {
        let name = shown.strip_prefix('/')?;
        self.commands
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.description.as_str())
    }
}
