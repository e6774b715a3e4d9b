//! The model's checklist (`update_plan`), pinned above the input: whole while a turn
//! runs, folded to one line when the turn is over (the plan is kept: a resumed session
//! shows its last one folded).

use crate::app::App;
use crate::tool_row::truncate;
use ratatui::text::{Line, Span};
use saki_engine::{Plan, StepStatus};

/// Most steps shown at once; a longer plan shows a window around the current step.
const MAX_STEPS_SHOWN: usize = 6;

impl App {
    /// The plan's rows above the input rule (none without a plan).
    pub(crate) fn plan_lines(&self, width: u16) -> Vec<Line<'static>> {
        let Some(plan) = self.plan.as_ref().filter(|p| !p.is_empty()) else {
            return Vec::new();
        };
        let width = usize::from(width);
        if !self.busy {
            return vec![self.folded(plan, width)];
        }
        let (start, end) = window(plan);
        let mut head = format!("Plan {}", plan.summary());
        if end - start < plan.steps.len() {
            head.push_str(&format!(
                " (steps {}–{} of {})",
                start + 1,
                end,
                plan.steps.len()
            ));
        }
        if let Some(why) = &plan.explanation {
            head.push_str(" · ");
            head.push_str(why);
        }
        let mut lines = vec![Line::styled(
            truncate(&format!(" {head}"), width),
            self.theme.bold(),
        )];
        let room = width.saturating_sub(5);
        for step in &plan.steps[start..end] {
            let (mark, mark_style, text_style) = match step.status {
                StepStatus::Completed => ("✓", self.theme.ok(), self.theme.dim()),
                StepStatus::InProgress => ("▸", self.theme.accent(), self.theme.bold()),
                StepStatus::Pending => ("○", self.theme.dim(), self.theme.text()),
            };
            lines.push(Line::from(vec![
                Span::styled(format!("   {mark} "), mark_style),
                Span::styled(truncate(&step.step, room), text_style),
            ]));
        }
        lines
    }

    /// `▸ Plan 2/5 done · next: run the tests`.
    fn folded(&self, plan: &Plan, width: usize) -> Line<'static> {
        let mut text = format!(" ▸ Plan {}", plan.summary());
        if let Some(step) = plan.current() {
            let label = match step.status {
                StepStatus::InProgress => "now",
                _ => "next",
            };
            text.push_str(&format!(" · {label}: {}", step.step));
        }
        Line::styled(truncate(&text, width), self.theme.dim())
    }
}

/// The steps to show: all of a short plan; of a long one, a window that starts one step
/// before the current one (or ends with the last step).
fn window(plan: &Plan) -> (usize, usize) {
    let total = plan.steps.len();
    if total <= MAX_STEPS_SHOWN {
        return (0, total);
    }
    let current = plan
        .current()
        .and_then(|c| plan.steps.iter().position(|s| std::ptr::eq(s, c)))
        .unwrap_or(total - 1);
    let start = current.saturating_sub(1).min(total - MAX_STEPS_SHOWN);
    (start, start + MAX_STEPS_SHOWN)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_plan_shows_the_steps_around_the_current_one() {
        let steps: Vec<_> = (0..10)
            .map(|i| {
                let status = match i {
                    0..=4 => "completed",
                    5 => "in_progress",
                    _ => "pending",
                };
                json!({"step": format!("s{i}"), "status": status})
            })
            .collect();
        let plan = Plan::from_value(&json!({ "plan": steps })).unwrap();
        assert_eq!(window(&plan), (4, 10));
        let short =
            Plan::from_value(&json!({"plan": [{"step": "a", "status": "pending"}]})).unwrap();
        assert_eq!(window(&short), (0, 1));
    }
}
