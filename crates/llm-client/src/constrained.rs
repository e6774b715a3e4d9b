//! Constrained tool calling: prompted tool calling whose every reply the server must
//! write as JSON matching a schema, either a call of one offered tool with arguments that
//! match that tool's schema, or `{"answer": …}`.
//!
//! Why: a small model writing calls as free text invents tools (`set_version`, a file
//! name used as a tool name) and malformed arguments, which text-call recovery can only
//! repair after the fact. A server that constrains its output to a schema (llama.cpp
//! turns `response_format`'s JSON schema into a grammar; Ollama takes the same field on
//! its OpenAI-compatible endpoint) makes them impossible instead.
//!
//! The request is the prompted one ([`crate::prompted::rewrite`]) with one more sentence
//! after its call format, so the prompt prefix is stable; the reply is decoded by
//! [`AnswerUnwrap`]: an answer object becomes its text, a call stays the JSON text that
//! the worker's recovery turns into a call, as it does in prompted mode.

use crate::event::{BlockDelta, BlockType, DeltaContent, Event};
use crate::request::{Request, ResponseSchema, ToolChoice};
use serde_json::{json, Value};

/// Tells the model the second shape its reply may take.
pub const ANSWER_INSTRUCTION: &str =
    "To reply to the user instead, write only a JSON object with your reply:\n{\"answer\": <your reply>}";

/// `request` in the prompted form, asking for a reply that is a call or an answer (only
/// an answer when the request asks for text). A request that already asks for its own
/// schema (`saki exec --output-schema`) keeps it, and is only prompted.
pub fn rewrite(request: &Request) -> Request {
    if request.tools.is_empty() || request.response_schema.is_some() {
        return crate::prompted::rewrite(request);
    }
    let mut prompted = crate::prompted::rewrite_with(request, Some(ANSWER_INSTRUCTION));
    let calls = request.tool_choice != ToolChoice::None;
    prompted.response_schema = Some(schema(request, calls));
    prompted
}

/// One object per offered tool (its name as a constant, its arguments' schema), and the
/// answer object.
fn schema(request: &Request, calls: bool) -> ResponseSchema {
    let mut shapes: Vec<Value> = Vec::new();
    if calls {
        for tool in &request.tools {
            shapes.push(json!({
                "type": "object",
                "properties": {
                    "name": {"const": tool.name},
                    "arguments": tool.input_schema,
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            }));
        }
    }
    shapes.push(json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false,
    }));
    ResponseSchema {
        name: "step".to_owned(),
        schema: json!({"anyOf": shapes}),
    }
}

/// The answer inside `text` when it is an answer object.
pub fn answer_of(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    object.get("answer")?.as_str().map(str::to_owned)
}

/// Between the decoder and the consumer: holds each text block until it ends, then lets
/// out the answer an answer object holds, or the text as it came (a call, or whatever a
/// server that ignored the schema wrote). An aborted block lets out nothing it held.
#[derive(Debug, Default)]
pub struct AnswerUnwrap {
    /// The open text block's index and its text so far.
    held: Option<(usize, String)>,
}

impl AnswerUnwrap {
    /// Feeds one event; what may go on now goes to `out`, in order.
    pub fn push(&mut self, event: Event, out: &mut Vec<Event>) {
        match event {
            Event::BlockStart(start) if start.block_type == BlockType::Text => {
                self.held = Some((start.index, String::new()));
                out.push(Event::BlockStart(start));
            }
            Event::BlockDelta(BlockDelta {
                index,
                delta: DeltaContent::Text(piece),
            }) if self.held.as_ref().is_some_and(|(i, _)| *i == index) => {
                if let Some((_, text)) = self.held.as_mut() {
                    text.push_str(&piece);
                }
            }
            Event::BlockStop(stop) if self.held.as_ref().is_some_and(|(i, _)| *i == stop.index) => {
                if let Some((index, text)) = self.held.take() {
                    let text = answer_of(&text).unwrap_or(text);
                    if !text.is_empty() {
                        out.push(Event::BlockDelta(BlockDelta {
                            index,
                            delta: DeltaContent::Text(text),
                        }));
                    }
                }
                out.push(Event::BlockStop(stop));
            }
            Event::BlockAbort(abort)
                if self.held.as_ref().is_some_and(|(i, _)| *i == abort.index) =>
            {
                self.held = None;
                out.push(Event::BlockAbort(abort));
            }
            other => out.push(other),
        }
    }
}

#[cfg(test)]
#[path = "constrained_tests.rs"]
mod tests;
