//! Interceptors: the privileged, internal extension points of the Worker. Only they can
//! add items to history. User hooks (`hook.rs`) are adapted onto this trait with a
//! smaller, read-only vocabulary.

use crate::item::{Item, ToolResultStatus};
use crate::tool::ToolExecutionContext;

#[derive(Debug, Clone, PartialEq)]
pub enum PromptAction {
    Continue,
    Cancel(String),
    /// Continue, and append these items right after the user item.
    ContinueWith(Vec<Item>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAction {
    Allow,
    Deny(String),
    /// End the turn here, before this call: a boundary (a speculation's gate). No call of
    /// the batch runs; each gets a `Skipped` result naming the reason, and the turn ends
    /// with [`crate::TurnStatus::Stopped`].
    Stop(String),
    /// Run the call with these arguments instead of the model's (the same tool): the
    /// interceptors after this one, approval included, judge the new arguments, and
    /// `note` starts the call's result, so the model and the person see what ran.
    Replace {
        arguments: String,
        note: String,
    },
}

/// How the call id of a call saki made itself ([`TurnEndAction::Call`]) starts.
pub const OWN_CALL_PREFIX: &str = "saki_";

#[derive(Debug, Clone, PartialEq)]
pub enum TurnEndAction {
    Finish,
    /// Append these items and ask the model again.
    ContinueWithMessages(Vec<Item>),
    /// Make this call on the model's behalf, then ask the model again: the call passes
    /// every interceptor and approval a call of the model's own would, and its note
    /// follows its result. At most one per turn end (the first wins).
    Call(OwnCall),
    /// The answer is not one (a note copied from a tool result): with text-call recovery
    /// on, ask for it once more the way a turn the loop guard stopped is asked, giving
    /// this reason. Once per turn, and only when no interceptor adds items or a call;
    /// otherwise the same as `Finish`.
    AskAgain(String),
}

/// A call saki makes on the model's behalf ([`TurnEndAction::Call`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OwnCall {
    pub name: String,
    pub arguments: String,
    /// Why saki made it, committed after its result.
    pub note: String,
}

/// What the last request of a turn the loop guard stopped asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopStopAction {
    /// The answer, in text (what every turn gets when no interceptor asks otherwise).
    Answer,
    /// The answer, asked for with this instruction in place of the usual one (a turn
    /// that made the change it was asked for is asked to say what it changed).
    AnswerWith(String),
    /// Before the answer, once: one call of one of `tools`, asked for as `instruction`
    /// after the turn's request and tool results. Only with text-call recovery on (the
    /// call is asked for as structured output); a request offering none of `tools` asks
    /// for the answer instead. When the call succeeds, the turn ends on its result,
    /// unless an interceptor's turn end still makes a call ([`TurnEndAction::Call`]):
    /// then that call runs and the model answers after it.
    Call {
        tools: Vec<String>,
        instruction: String,
    },
}

/// A tool call about to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallInfo {
    pub name: String,
    pub arguments: String,
    /// The parsed arguments (calls with invalid JSON never reach interceptors).
    pub input: serde_json::Value,
    pub ctx: ToolExecutionContext,
}

/// A tool call that has run (or was refused).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultInfo {
    pub call: ToolCallInfo,
    pub content: String,
    pub status: ToolResultStatus,
}

#[async_trait::async_trait]
pub trait Interceptor: Send + Sync {
    async fn on_prompt_submit(&self, _user: &Item) -> PromptAction {
        PromptAction::Continue
    }

    /// Runs for every call of a batch, in call order, before any of them executes.
    async fn pre_tool_call(&self, _call: &ToolCallInfo) -> ToolAction {
        ToolAction::Allow
    }

    /// Runs for every call of a batch, in call order, after all of them finished.
    async fn post_tool_call(&self, _result: &ToolResultInfo) {}

    /// Runs when a response has no tool calls.
    async fn on_turn_end(&self, _history: &[Item]) -> TurnEndAction {
        TurnEndAction::Finish
    }

    /// Runs once when the loop guard has stopped a turn, before its last request.
    async fn on_loop_stop(&self, _history: &[Item]) -> LoopStopAction {
        LoopStopAction::Answer
    }
}
