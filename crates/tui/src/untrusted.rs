//! Everything the engine reports is sanitised on arrival (see `saki_engine::sanitize`):
//! model text, tool calls and output, alerts, approval prompts, suggestions, session
//! titles and the names in the status line can all hold terminal escape sequences. Text
//! can also turn into control characters after that, when it is decoded: JSON escapes in
//! tool arguments (`\u001b`), character references in Markdown (`&#27;`). ratatui puts
//! such characters into cells as they are, so every line is also passed through
//! [`printable`] right before it is drawn.

use crate::protocol::{EngineEvent, SessionEntry, Status};
use saki_engine::sanitize::{sanitize_in_place as clean, sanitize_json};
use saki_engine::{Item, TextBlockEvent, ThinkingBlockEvent, WorkerEvent};

/// `event` with every string in it sanitised.
pub fn sanitized(event: EngineEvent) -> EngineEvent {
    match event {
        EngineEvent::Status(status) => EngineEvent::Status(status_of(status)),
        EngineEvent::Text(TextBlockEvent::Delta(mut t)) => {
            clean(&mut t);
            EngineEvent::Text(TextBlockEvent::Delta(t))
        }
        EngineEvent::Thinking(ThinkingBlockEvent::Delta(mut t)) => {
            clean(&mut t);
            EngineEvent::Thinking(ThinkingBlockEvent::Delta(t))
        }
        EngineEvent::Worker(event) => EngineEvent::Worker(worker_event_of(event)),
        EngineEvent::TurnFinished { note, end } => EngineEvent::TurnFinished {
            note: note.map(|(level, mut m)| {
                clean(&mut m);
                (level, m)
            }),
            end,
        },
        EngineEvent::Alert { level, mut message } => {
            clean(&mut message);
            EngineEvent::Alert { level, message }
        }
        EngineEvent::Approval(mut request) => {
            clean(&mut request.call.name);
            clean(&mut request.call.arguments);
            sanitize_json(&mut request.call.input);
            request.grant_label.as_mut().map(clean);
            request.why.as_mut().map(clean);
            EngineEvent::Approval(request)
        }
        EngineEvent::Suggestion(mut text) => {
            clean(&mut text);
            EngineEvent::Suggestion(text)
        }
        EngineEvent::Accepted {
            items,
            mut files,
            commands_run,
            saved_ms,
            mut pipelined,
        } => {
            files.iter_mut().for_each(clean);
            pipelined.as_mut().map(clean);
            EngineEvent::Accepted {
                items: items.into_iter().map(item_of).collect(),
                files,
                commands_run,
                saved_ms,
                pipelined,
            }
        }
        EngineEvent::History(items) => {
            EngineEvent::History(items.into_iter().map(item_of).collect())
        }
        EngineEvent::Sessions(sessions) => {
            EngineEvent::Sessions(sessions.into_iter().map(session_of).collect())
        }
        EngineEvent::Undone { level, mut message } => {
            clean(&mut message);
            EngineEvent::Undone { level, message }
        }
        EngineEvent::Turns(mut turns) => {
            turns.iter_mut().for_each(|t| clean(&mut t.prompt));
            EngineEvent::Turns(turns)
        }
        EngineEvent::Rewound { mut prompt } => {
            clean(&mut prompt);
            EngineEvent::Rewound { prompt }
        }
        EngineEvent::Plan { mut plan, restored } => {
            plan.explanation.as_mut().map(clean);
            plan.steps.iter_mut().for_each(|s| clean(&mut s.step));
            EngineEvent::Plan { plan, restored }
        }
        EngineEvent::Question(mut request) => {
            clean(&mut request.question);
            request.options.iter_mut().for_each(clean);
            if let crate::protocol::QuestionKind::LeavePlan { plan } = &mut request.kind {
                clean(plan);
            }
            EngineEvent::Question(request)
        }
        EngineEvent::Subagent(mut event) => {
            clean(&mut event.agent);
            event.event = worker_event_of(event.event);
            EngineEvent::Subagent(event)
        }
        other @ (EngineEvent::Tokens(_)
        | EngineEvent::TurnStarted
        | EngineEvent::Text(_)
        | EngineEvent::Thinking(_)
        | EngineEvent::NoSuggestion(_)
        | EngineEvent::SpeculationEnded(_)
        | EngineEvent::Speculation(_)
        | EngineEvent::Stats(_)
        | EngineEvent::Synced(_)) => other,
        // The person's own prompts, back as they typed them.
        other @ (EngineEvent::Queued(_) | EngineEvent::Unqueued(_)) => other,
    }
}

/// A Worker report with the strings the UI shows sanitised.
fn worker_event_of(event: WorkerEvent) -> WorkerEvent {
    match event {
        WorkerEvent::Committed(item) => WorkerEvent::Committed(item_of(item)),
        WorkerEvent::CommittedMany(items) => {
            WorkerEvent::CommittedMany(items.into_iter().map(item_of).collect())
        }
        WorkerEvent::ToolStarted { mut name, ctx } => {
            clean(&mut name);
            WorkerEvent::ToolStarted { name, ctx }
        }
        WorkerEvent::LoopDetected { mut reason } => {
            clean(&mut reason);
            WorkerEvent::LoopDetected { reason }
        }
        WorkerEvent::Retrying { mut reason } => {
            clean(&mut reason);
            WorkerEvent::Retrying { reason }
        }
        WorkerEvent::Compacted(mut compaction) => {
            compaction.report.auto_read.iter_mut().for_each(clean);
            compaction.report.message.as_mut().map(clean);
            WorkerEvent::Compacted(compaction)
        }
        other @ (WorkerEvent::RequestStarted { .. }
        | WorkerEvent::Usage(_)
        | WorkerEvent::CallsRecovered(_)) => other,
    }
}

/// `lines` with every span's text sanitised (the last step before drawing).
pub fn printable(lines: Vec<ratatui::text::Line<'_>>) -> Vec<ratatui::text::Line<'_>> {
    lines
        .into_iter()
        .map(|mut line| {
            for span in &mut line.spans {
                if let std::borrow::Cow::Owned(clean) =
                    saki_engine::sanitize::sanitize(&span.content)
                {
                    span.content = clean.into();
                }
            }
            line
        })
        .collect()
}

fn item_of(mut item: Item) -> Item {
    match &mut item {
        Item::User { text } | Item::System { text } | Item::AssistantText { text } => clean(text),
        Item::Thinking { text, .. } => clean(text),
        Item::ToolCall {
            name, arguments, ..
        } => {
            clean(name);
            clean(arguments);
        }
        Item::ToolResult { name, content, .. } => {
            clean(name);
            clean(content);
        }
        Item::Image { path, image, .. } => {
            clean(path);
            clean(&mut image.media_type);
        }
    }
    item
}

fn status_of(mut status: Status) -> Status {
    clean(&mut status.provider);
    clean(&mut status.model);
    status.fast_model.as_mut().map(clean);
    status.sandbox.as_mut().map(clean);
    status
}

fn session_of(mut session: SessionEntry) -> SessionEntry {
    clean(&mut session.title);
    clean(&mut session.model);
    session
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_escapes_are_cleaned_before_drawing() {
        use ratatui::text::{Line, Span};
        let lines = vec![Line::from(vec![
            Span::raw("ok"),
            Span::raw("a\u{1b}]52;c;x\u{7}b"),
        ])];
        let shown = printable(lines);
        assert_eq!(shown[0].spans[0].content, "ok");
        assert_eq!(shown[0].spans[1].content, "a\u{241B}]52;c;x\u{2407}b");
    }

    #[test]
    fn nothing_the_engine_sends_keeps_an_escape() {
        let esc = "x\x1b]52;c;ZWNobw==\x07\x1b[2J";
        let events = [
            EngineEvent::text_delta(esc),
            EngineEvent::Worker(WorkerEvent::LoopDetected { reason: esc.into() }),
            EngineEvent::Worker(WorkerEvent::Retrying { reason: esc.into() }),
            EngineEvent::committed(Item::ToolResult {
                name: "shell".into(),
                content: esc.into(),
                status: saki_engine::ToolResultStatus::Success,
                ctx: saki_engine::ToolExecutionContext {
                    call_id: "c".into(),
                    batch_id: "b".into(),
                    call_index: 0,
                },
            }),
            EngineEvent::Alert {
                level: crate::protocol::Level::Warn,
                message: esc.into(),
            },
            EngineEvent::Suggestion(esc.into()),
        ];
        for event in events {
            let shown = format!("{:?}", sanitized(event));
            assert!(
                !shown.contains("\\u{1b}") && !shown.contains("\\u{7}"),
                "{shown}"
            );
        }
    }
}
