//! The slash commands an editor is offered (`available_commands_update`).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};
use saki_engine::slash;

/// The slash commands an editor offers: the built-in ones that make sense there, and
/// the person's own.
pub(crate) fn available_commands(custom: &[(String, String)]) -> SessionUpdate {
    let mut commands: Vec<AvailableCommand> = slash::HELP
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('/')?;
            let (usage, description) = rest.split_once("  ")?;
            let mut words = usage.split_whitespace();
            let name = words.next()?;
            // The editor owns these: it quits, resumes and picks.
            if matches!(name, "quit" | "resume" | "rewind") {
                return None;
            }
            let hint: Vec<&str> = words.collect();
            let command = AvailableCommand::new(name, description.trim());
            Some(if hint.is_empty() {
                command
            } else {
                command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint.join(" ")),
                ))
            })
        })
        .collect();
    // `/model NAME` and `/model --fast NAME` share a name: the first one stays.
    commands.dedup_by(|a, b| a.name == b.name);
    commands.extend(custom.iter().map(|(name, description)| {
        AvailableCommand::new(name.clone(), description.clone()).input(
            AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("arguments")),
        )
    }));
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_command_list_names_what_an_editor_can_run() {
        let update = serde_json::to_value(available_commands(&[(
            "review".into(),
            "review the diff".into(),
        )]))
        .unwrap();
        let names: Vec<&str> = update["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"compress") && names.contains(&"undo") && names.contains(&"review")
        );
        assert!(!names.contains(&"quit"));
        assert_eq!(names.iter().filter(|n| **n == "model").count(), 1);
    }
}
