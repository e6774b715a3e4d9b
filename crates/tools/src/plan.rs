//! `update_plan`: the model keeps a short checklist of the task's steps for the person.
//!
//! The tool is stateless: it checks the plan and answers "Plan updated."; the plan itself
//! lives in history as the call's arguments, so a resumed session finds it again
//! ([`latest_plan`]) and front ends learn of it from the committed call (the engine turns
//! it into an event). A compaction that summarizes the last call away restates the plan
//! as a `System` item ([`restatement`]), which [`latest_plan`] also reads.
//!
//! What small models send is taken leniently (`"in progress"`, `"done"`, a plan given as
//! a JSON string); what cannot be read is an error that says the expected shape, never a
//! panic and never a silently empty plan.

use saki_llm_worker::{Item, Tool, ToolError, ToolExecutionContext, ToolOutput, ToolResultStatus};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const TOOL_NAME: &str = "update_plan";
/// Most steps a plan may have: a checklist for a person, not a task tracker.
pub const MAX_STEPS: usize = 30;
/// A step longer than this is cut (with an ellipsis): it is one line above the input.
const MAX_STEP_CHARS: usize = 200;
const MAX_EXPLANATION_CHARS: usize = 500;
/// The first line of a plan restated after a compaction.
pub const RESTATED_TAG: &str = "[Current plan (update_plan), kept through the summary]";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Completed => "completed",
        }
    }

    /// A status as models write it: any case, `-` or space for `_`, and the common
    /// synonyms (`done`, `todo`, `active`).
    pub fn parse(text: &str) -> Option<StepStatus> {
        let norm: String = text
            .trim()
            .chars()
            .map(|c| match c {
                '-' | ' ' => '_',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        match norm.as_str() {
            "pending" | "todo" | "to_do" | "not_started" => Some(StepStatus::Pending),
            "in_progress" | "inprogress" | "active" | "doing" | "current" => {
                Some(StepStatus::InProgress)
            }
            "completed" | "complete" | "done" | "finished" => Some(StepStatus::Completed),
            _ => None,
        }
    }

    /// The checkbox of a checklist line.
    fn mark(self) -> &'static str {
        match self {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[~]",
            StepStatus::Completed => "[x]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

/// A checklist, in the tool's own shape: `{"explanation"?, "plan": [{step, status}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Plan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    #[serde(rename = "plan")]
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// Reads a call's arguments; `Err` says what is wrong in words the model can act on.
    pub fn from_arguments(arguments: &str) -> Result<Plan, String> {
        let value: Value = serde_json::from_str(arguments)
            .map_err(|e| format!("the arguments are not JSON ({e}); {SHAPE}"))?;
        Plan::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Result<Plan, String> {
        let Some(args) = value.as_object() else {
            return Err(format!("the arguments must be an object; {SHAPE}"));
        };
        let steps = match args.get("plan") {
            Some(Value::Array(steps)) => steps.clone(),
            // Small models send the list as a string holding JSON.
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Array(steps)) => steps,
                _ => return Err(format!("`plan` must be an array; {SHAPE}")),
            },
            Some(Value::Null) | None => return Err(format!("`plan` is missing; {SHAPE}")),
            Some(_) => return Err(format!("`plan` must be an array; {SHAPE}")),
        };
        if steps.len() > MAX_STEPS {
            return Err(format!(
                "the plan has {} steps; keep it to at most {MAX_STEPS} short steps",
                steps.len()
            ));
        }
        let mut problems = Vec::new();
        let mut out = Vec::with_capacity(steps.len());
        for (i, entry) in steps.iter().enumerate() {
            match step_of(entry) {
                Ok(step) => out.push(step),
                Err(problem) => problems.push(format!("step {}: {problem}", i + 1)),
            }
        }
        if !problems.is_empty() {
            return Err(format!("{}; {SHAPE}", problems.join("; ")));
        }
        let explanation = args
            .get("explanation")
            .and_then(Value::as_str)
            .map(|e| one_line(e, MAX_EXPLANATION_CHARS))
            .filter(|e| !e.is_empty());
        Ok(Plan {
            explanation,
            steps: out,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Completed steps and all steps.
    pub fn progress(&self) -> (usize, usize) {
        let done = self
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Completed)
            .count();
        (done, self.steps.len())
    }

    /// The step being worked on: the first in progress, else the first pending one.
    pub fn current(&self) -> Option<&PlanStep> {
        self.steps
            .iter()
            .find(|s| s.status == StepStatus::InProgress)
            .or_else(|| self.steps.iter().find(|s| s.status == StepStatus::Pending))
    }

    /// `2/5 done`.
    pub fn summary(&self) -> String {
        let (done, total) = self.progress();
        format!("{done}/{total} done")
    }

    /// One `- [x] step` line per step (`[~]` in progress, `[ ]` pending).
    pub fn checklist(&self) -> String {
        self.steps
            .iter()
            .map(|s| format!("- {} {}", s.status.mark(), s.step))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Reads a plan back from [`restatement`]'s text.
    fn from_restatement(text: &str) -> Option<Plan> {
        let mut lines = text.lines();
        if lines.next()? != RESTATED_TAG {
            return None;
        }
        let steps = lines
            .filter_map(|line| {
                let rest = line.strip_prefix("- ")?;
                let (status, step) = match rest.get(..3)? {
                    "[ ]" => (StepStatus::Pending, &rest[3..]),
                    "[~]" => (StepStatus::InProgress, &rest[3..]),
                    "[x]" => (StepStatus::Completed, &rest[3..]),
                    _ => return None,
                };
                Some(PlanStep {
                    step: step.trim().to_owned(),
                    status,
                })
            })
            .collect();
        Some(Plan {
            explanation: None,
            steps,
        })
    }
}

const SHAPE: &str = "send {\"plan\": [{\"step\": \"...\", \"status\": \"pending\" | \"in_progress\" | \"completed\"}], \"explanation\"?: \"...\"}";

fn step_of(entry: &Value) -> Result<PlanStep, String> {
    let Some(fields) = entry.as_object() else {
        return Err("must be an object with `step` and `status`".into());
    };
    let step = match fields.get("step") {
        Some(Value::String(s)) => one_line(s, MAX_STEP_CHARS),
        _ => return Err("`step` must be a string".into()),
    };
    if step.is_empty() {
        return Err("`step` is empty".into());
    }
    let status = match fields.get("status") {
        Some(Value::String(s)) => StepStatus::parse(s)
            .ok_or_else(|| format!("status `{s}` is not pending, in_progress or completed"))?,
        // A step without a status has not been started.
        Some(Value::Null) | None => StepStatus::Pending,
        Some(other) => return Err(format!("status {other} must be a string")),
    };
    Ok(PlanStep { step, status })
}

/// Whitespace (newlines included) collapsed, cut at `max` characters with an ellipsis.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The plan history holds last: the newest successful `update_plan` call, or a plan
/// restated by a compaction, whichever is later. `None` when there is neither.
pub fn latest_plan(items: &[Item]) -> Option<Plan> {
    for (i, item) in items.iter().enumerate().rev() {
        match item {
            Item::ToolResult {
                name,
                status: ToolResultStatus::Success,
                ctx,
                ..
            } if name == TOOL_NAME => {
                // The call is before its result; a call whose arguments cannot be read
                // (it would not have succeeded) is passed over.
                let arguments = items[..i].iter().rev().find_map(|it| match it {
                    Item::ToolCall {
                        arguments, ctx: c, ..
                    } if c.call_id == ctx.call_id => Some(arguments),
                    _ => None,
                });
                if let Some(plan) = arguments.and_then(|a| Plan::from_arguments(a).ok()) {
                    return Some(plan);
                }
            }
            Item::System { text } => {
                if let Some(plan) = Plan::from_restatement(text) {
                    return Some(plan);
                }
            }
            _ => {}
        }
    }
    None
}

/// What a compaction keeps of the plan: when `summarized` holds the latest plan and
/// `kept` has none of its own, the plan as a `System` item (the summary's own
/// `current_plan` is the model's prose; this is the checklist itself, which the person
/// sees and a resumed session shows).
pub fn restatement(summarized: &[Item], kept: &[Item]) -> Option<Item> {
    if latest_plan(kept).is_some() {
        return None;
    }
    let plan = latest_plan(summarized).filter(|p| !p.is_empty())?;
    Some(Item::system(format!(
        "{RESTATED_TAG}\n{}",
        plan.checklist()
    )))
}

/// The `update_plan` tool.
pub struct UpdatePlan;

#[async_trait::async_trait]
impl Tool for UpdatePlan {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "Show the person a short checklist of a multi-step task's steps. Send the whole plan each time a step starts or ends; at most one step in_progress."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "explanation": {"type": "string"},
            "plan": {"type": "array", "items": {"type": "object", "properties": {
                "step": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
            }, "required": ["step", "status"]}}
        }, "required": ["plan"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let plan = Plan::from_arguments(input).map_err(ToolError::InvalidInput)?;
        Ok(ToolOutput::new("Plan updated.").with_summary(plan.summary()))
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
