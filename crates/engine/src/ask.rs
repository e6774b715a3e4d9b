//! `ask_user` and `exit_plan_mode`: tools that put a question to the person through the
//! front end ([`EngineEvent::Question`]) and wait for the reply, like approvals do. A
//! front end with nobody to ask (`saki exec`) replies `None` at once, so neither ever
//! hangs: `ask_user` then fails with a result saying so, and `exit_plan_mode` ends the
//! turn with the plan.
//!
//! `exit_plan_mode` asks before the call runs, in [`LeavePlanGate`] (an interceptor): the
//! answer can switch the approval mode, and with nobody to answer the turn must end
//! there ([`ToolAction::Stop`]), which only an interceptor can do. The tool then only
//! tells the model what the person chose.

use crate::bridge::UiSender;
use crate::protocol::{EngineEvent, QuestionKind, QuestionRequest, LEAVE_PLAN_OPTIONS};
use saki_llm_worker::{
    Interceptor, Tool, ToolAction, ToolCallInfo, ToolError, ToolExecutionContext, ToolOutput,
};
use saki_tools::common::parse_args;
use saki_tools::{ApprovalMode, SharedMode};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

pub const ASK_USER: &str = "ask_user";
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";
/// Options offered at most, and the longest question shown.
const OPTIONS_MAX: usize = 10;
const QUESTION_MAX_BYTES: usize = 2_000;

/// Sends a question to the front end and waits for the reply; `None`: nobody answered.
async fn ask(
    ui: &UiSender,
    call_id: &str,
    question: String,
    options: Vec<String>,
    free_text: bool,
    kind: QuestionKind,
) -> Option<String> {
    let (reply, answer) = oneshot::channel();
    let request = QuestionRequest {
        call_id: call_id.to_owned(),
        question,
        options,
        free_text,
        kind,
        reply,
    };
    if ui.send(EngineEvent::Question(request)).is_err() {
        return None;
    }
    answer.await.ok().flatten()
}

pub struct AskUser(pub UiSender);

/// A string field of a call's arguments (the schema check has made it one).
fn text_field(input: &Value, key: &str) -> String {
    input
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[async_trait::async_trait]
impl Tool for AskUser {
    fn name(&self) -> &str {
        ASK_USER
    }
    fn description(&self) -> &str {
        "Ask the person a question and wait for the answer: for a decision only they can make, or when the request is ambiguous. Offer likely answers as options; they may also type their own."
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}, "description": "Suggested answers"}
            },
            "required": ["question"]
        })
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        input: &str,
        ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let input: Value = parse_args(input)?;
        let asked = text_field(&input, "question");
        let question = saki_tools::common::prefix_at_boundary(asked.trim(), QUESTION_MAX_BYTES);
        if question.is_empty() {
            return Err(ToolError::InvalidInput("`question` is empty".into()));
        }
        let offered = input.get("options").and_then(Value::as_array);
        let mut options: Vec<String> = offered
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|o| o.trim().to_owned())
            .filter(|o| !o.is_empty())
            .collect();
        options.dedup();
        options.truncate(OPTIONS_MAX);
        let answer = ask(
            &self.0,
            &ctx.call_id,
            question.to_owned(),
            options,
            true,
            QuestionKind::Ask,
        )
        .await;
        match answer {
            Some(answer) => {
                Ok(ToolOutput::new(format!("The person answered: {answer}")).with_summary(answer))
            }
            None => Err(ToolError::Failed(
                "no person can answer in this run (it runs without one, e.g. saki exec); \
                 decide yourself, and say in your answer what you assumed"
                    .into(),
            )),
        }
    }
}

/// What the person chose for each `exit_plan_mode` call, by call id.
type Choices = Arc<Mutex<HashMap<String, String>>>;

/// Asks whether to leave plan mode before an `exit_plan_mode` call runs (see the module
/// doc); install after the approval policy.
pub struct LeavePlanGate {
    ui: UiSender,
    mode: SharedMode,
    choices: Choices,
}

#[async_trait::async_trait]
impl Interceptor for LeavePlanGate {
    async fn pre_tool_call(&self, call: &ToolCallInfo) -> ToolAction {
        if call.name != EXIT_PLAN_MODE || self.mode.get() != ApprovalMode::Plan {
            return ToolAction::Allow;
        }
        let plan = text_field(&call.input, "plan");
        let answer = ask(
            &self.ui,
            &call.ctx.call_id,
            "Leave plan mode and carry out this plan?".to_owned(),
            LEAVE_PLAN_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            false,
            QuestionKind::LeavePlan { plan },
        )
        .await;
        let Some(answer) = answer else {
            return ToolAction::Stop(
                "the plan is presented; nobody can approve it in this run".to_owned(),
            );
        };
        if let Ok(mode) = answer.parse::<ApprovalMode>() {
            if mode != ApprovalMode::Plan {
                self.mode.set(mode);
            }
        }
        self.choices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call.ctx.call_id.clone(), answer);
        ToolAction::Allow
    }
}

/// The `exit_plan_mode` tool: tells the model what the person chose (asked by
/// [`LeavePlanGate`]).
pub struct ExitPlanMode {
    mode: SharedMode,
    choices: Choices,
}

/// The gate and the tool, sharing the person's choices.
pub fn exit_plan_mode(ui: UiSender, mode: SharedMode) -> (LeavePlanGate, ExitPlanMode) {
    let choices = Choices::default();
    (
        LeavePlanGate {
            ui,
            mode: mode.clone(),
            choices: choices.clone(),
        },
        ExitPlanMode { mode, choices },
    )
}

#[async_trait::async_trait]
impl Tool for ExitPlanMode {
    fn name(&self) -> &str {
        EXIT_PLAN_MODE
    }
    fn description(&self) -> &str {
        "In plan mode, when your plan is ready: present it (Markdown) for the person to approve. They choose whether to switch to default or auto-edit mode and let you carry it out, or to stay in plan mode."
    }
    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "The plan, in Markdown"}},
            "required": ["plan"]
        })
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn execute(&self, _: &str, ctx: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        let choice = self
            .choices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&ctx.call_id);
        let text = match choice {
            None if self.mode.get() != ApprovalMode::Plan => format!(
                "Not in plan mode (the mode is {}): go ahead with the work.",
                self.mode.get()
            ),
            None => "The plan was not answered.".to_owned(),
            Some(answer) => match answer.parse::<ApprovalMode>() {
                Ok(mode) if mode != ApprovalMode::Plan => format!(
                    "The person approved the plan and switched to {mode} mode. Carry it out now."
                ),
                _ => "The person wants to stay in plan mode: do not change anything. Ask what to change in the plan, or refine it."
                    .to_owned(),
            },
        };
        Ok(ToolOutput::new(text))
    }
}
