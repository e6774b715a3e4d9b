//! The slash commands an editor is offered (`available_commands_update`).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};
use saki_engine::slash;

/// The slash commands an editor offers: the built-in ones that make sense there, and
/// the person's own.
pub(crate) fn available_commands(custom: &[(String, String)]) -> SessionUpdate {
    // The editor owns quitting, resuming and picking; the terminal's own are the UI's.
    let mut commands: Vec<AvailableCommand> = slash::BUILT_INS
        .iter()
        .filter(|b| b.place == slash::Place::Everywhere)
        .map(|b| {
            let (hint, description) = b.usage.first().copied().unwrap_or(("", ""));
            let command = AvailableCommand::new(b.name, description);
            if hint.is_empty() {
                command
            } else {
                command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                ))
            }
        })
        .collect();
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
