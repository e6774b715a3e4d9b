//! The actions a front end sends while a turn runs: kept in order and carried out once it
//! is over, so no front end keeps its own queue and nothing sent meanwhile is dropped.

use crate::protocol::Action;
use std::collections::VecDeque;

/// A prompt for the model (not a command).
pub(crate) fn is_prompt(action: &Action) -> bool {
    matches!(action, Action::Submit { .. } | Action::SubmitParts { .. })
}

/// The prompts waiting, in order.
pub(crate) fn prompts(pending: &VecDeque<Action>) -> Vec<String> {
    pending
        .iter()
        .filter_map(|action| match action {
            Action::Submit { text } | Action::SubmitParts { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Takes the prompts out of `pending` (commands stay), in order.
pub(crate) fn take_prompts(pending: &mut VecDeque<Action>) -> Vec<String> {
    let taken = prompts(pending);
    pending.retain(|action| !is_prompt(action));
    taken
}
