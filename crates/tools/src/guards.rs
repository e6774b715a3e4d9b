//! The interceptors that hold a small local model's turn to what its prompt asks and
//! repair what such a model gets wrong, in the order they run. One list, so the
//! person's turn and a speculation of the next prompt run behind the same repairs: a
//! speculated change is the change the turn itself would make.

use crate::rewrite::RewriteEdits;
use crate::workspace::Workspace;
use saki_llm_worker::interceptor::Interceptor;
use std::sync::Arc;

/// The small-model interceptors over `workspace` (the files the loop's tools see: a
/// speculation's overlay for a speculation), with `rewrite` first when rewrites are on,
/// so that the change guard and approval judge the call as it will run. They go before
/// approval (or a speculation's gate): a change the prompt did not ask for is refused,
/// not put to the person.
pub fn small_model_guards(
    workspace: &Arc<Workspace>,
    rewrite: Option<RewriteEdits>,
) -> Vec<Arc<dyn Interceptor>> {
    let mut guards: Vec<Arc<dyn Interceptor>> = Vec::new();
    if let Some(rewrite) = rewrite {
        guards.push(Arc::new(rewrite));
    }
    guards.push(Arc::new(crate::intent::ChangeGuard::new()));
    guards.push(Arc::new(crate::unsaved::UnsavedAnswer::new(
        workspace.clone(),
    )));
    guards.push(Arc::new(crate::unlooked::UnlookedAnswer::new(
        workspace.clone(),
    )));
    guards.push(Arc::new(crate::mentions::PromptMentions::new(
        workspace.clone(),
    )));
    guards.push(Arc::new(crate::project_commands::ProjectCommands::new(
        workspace.clone(),
    )));
    guards.push(Arc::new(crate::echo::NoteAnswer));
    guards
}
