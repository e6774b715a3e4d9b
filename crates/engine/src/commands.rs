//! Custom slash commands in a session: a prompt `/name ARGS` naming one of the person's
//! commands (`saki_pod::commands`) runs as the command's prompt, with its model and
//! approval mode for that turn only.

use saki_pod::commands::CustomCommand;
use saki_tools::ApprovalMode;

/// What a submitted prompt stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// The prompt the model gets (the text itself when it names no command).
    pub text: String,
    /// The command's model and approval mode, for this turn.
    pub model: Option<String>,
    pub approval: Option<ApprovalMode>,
    /// A problem with the command's header, for an alert.
    pub warning: Option<String>,
}

impl Expanded {
    /// Whether the turn runs differently from the session's settings (then it is not
    /// speculated: a speculation runs on the session's model and mode).
    pub fn overrides(&self) -> bool {
        self.model.is_some() || self.approval.is_some()
    }
}

/// `text` with a leading `/name` expanded when `name` is one of `commands`.
pub(crate) fn expand(commands: &[CustomCommand], text: &str) -> Expanded {
    let plain = || Expanded {
        text: text.to_owned(),
        model: None,
        approval: None,
        warning: None,
    };
    let trimmed = text.trim_start();
    let Some(rest) = trimmed.strip_prefix('/') else {
        return plain();
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let Some(command) = commands.iter().find(|c| c.name == name) else {
        return plain();
    };
    let (approval, warning) = match command.approval.as_deref().map(str::parse::<ApprovalMode>) {
        None => (None, None),
        Some(Ok(mode)) => (Some(mode), None),
        Some(Err(e)) => (
            None,
            Some(format!("/{name}: {e}; the session's mode applies")),
        ),
    };
    Expanded {
        text: command.expand(args),
        model: command.model.clone(),
        approval,
        warning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn commands() -> Vec<CustomCommand> {
        vec![
            saki_pod::commands::parse(
                "review".into(),
                "---\napproval: plan\nmodel: big\n---\nReview @$1 for bugs.",
                PathBuf::from("review.md"),
                false,
            ),
            saki_pod::commands::parse(
                "odd".into(),
                "---\napproval: maybe\n---\nx",
                PathBuf::new(),
                false,
            ),
        ]
    }

    #[test]
    fn a_known_command_expands_with_its_overrides_and_others_stay_text() {
        let got = expand(&commands(), "/review src/a.rs");
        assert_eq!(got.text, "Review @src/a.rs for bugs.");
        assert_eq!(got.model.as_deref(), Some("big"));
        assert_eq!(got.approval, Some(ApprovalMode::Plan));
        assert!(got.overrides());
        for text in ["/unknown x", "review src/a.rs", "/reviewer"] {
            assert_eq!(expand(&commands(), text).text, text);
        }
        let odd = expand(&commands(), "/odd");
        assert_eq!(odd.approval, None);
        assert!(odd.warning.unwrap().contains("unknown approval mode"));
    }
}
