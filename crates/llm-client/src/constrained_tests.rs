#![allow(clippy::unwrap_used)]
use super::*;
use crate::event::{BlockAbort, BlockMetadata, BlockStart, BlockStop};
use crate::request::{Message, ToolDefinition};

fn request(choice: ToolChoice) -> Request {
    Request {
        model: "m".into(),
        system: Some("You are saki.".into()),
        messages: vec![Message::user_text("What is the word?")],
        tools: vec![ToolDefinition {
            name: "read_file".into(),
            description: "Reads a file.".into(),
            input_schema: json!({"type": "object",
                "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        tool_choice: choice,
        ..Request::default()
    }
}

#[test]
fn each_reply_is_a_call_of_an_offered_tool_or_an_answer() {
    let rewritten = rewrite(&request(ToolChoice::Auto));
    assert!(rewritten.tools.is_empty(), "the tools are in the prompt");
    let system = rewritten.system.unwrap();
    assert!(system.ends_with(ANSWER_INSTRUCTION), "{system}");
    // After the session's facts, with the call format: the last words before the
    // conversation.
    let mut with_facts = request(ToolChoice::Auto);
    with_facts.system = Some(format!(
        "You are saki.{}Workspace: /w.",
        crate::prompted::SESSION_FACTS
    ));
    let system = rewrite(&with_facts).system.unwrap();
    let facts_at = system.find(crate::prompted::SESSION_FACTS).unwrap();
    assert!(system[facts_at..].ends_with(ANSWER_INSTRUCTION), "{system}");
    let schema = rewritten.response_schema.unwrap().schema;
    let shapes = schema["anyOf"].as_array().unwrap();
    assert_eq!(shapes.len(), 2);
    assert_eq!(shapes[0]["properties"]["name"]["const"], "read_file");
    assert_eq!(
        shapes[0]["properties"]["arguments"]["required"][0], "path",
        "the tool's own argument schema"
    );
    assert_eq!(shapes[1]["required"][0], "answer");
    // The same bytes every time: the prompt prefix stays cached.
    assert_eq!(
        rewrite(&request(ToolChoice::Auto)),
        rewrite(&request(ToolChoice::Auto))
    );
}

#[test]
fn a_request_for_text_allows_only_an_answer_and_an_own_schema_wins() {
    let schema = rewrite(&request(ToolChoice::None)).response_schema.unwrap();
    assert_eq!(schema.schema["anyOf"].as_array().unwrap().len(), 1);
    let mut own = request(ToolChoice::Auto);
    own.response_schema = Some(ResponseSchema {
        name: "out".into(),
        schema: json!({"type": "object"}),
    });
    assert_eq!(rewrite(&own).response_schema.unwrap().name, "out");
}

#[test]
fn only_an_answer_object_is_unwrapped() {
    assert_eq!(
        answer_of(r#"{"answer": "MANGO"}"#).as_deref(),
        Some("MANGO")
    );
    assert_eq!(
        answer_of(" {\"answer\":\"a\\nb\"}\n").as_deref(),
        Some("a\nb")
    );
    assert_eq!(answer_of(r#"{"name": "read_file", "arguments": {}}"#), None);
    assert_eq!(answer_of(r#"{"answer": "x", "more": 1}"#), None);
    assert_eq!(answer_of("plain text"), None);
}

fn text_block(pieces: &[&str]) -> Vec<Event> {
    let mut events = vec![Event::BlockStart(BlockStart {
        index: 0,
        block_type: BlockType::Text,
        metadata: BlockMetadata::Text,
    })];
    for piece in pieces {
        events.push(Event::BlockDelta(BlockDelta {
            index: 0,
            delta: DeltaContent::Text((*piece).into()),
        }));
    }
    events
}

fn stop() -> Event {
    Event::BlockStop(BlockStop {
        index: 0,
        block_type: BlockType::Text,
        stop_reason: None,
    })
}

fn texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::BlockDelta(BlockDelta {
                delta: DeltaContent::Text(t),
                ..
            }) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_answer_is_let_out_when_its_block_ends_and_a_call_as_written() {
    for (pieces, shown) in [
        (
            vec!["{\"ans", "wer\": \"The word", " is MANGO.\"}"],
            "The word is MANGO.",
        ),
        (
            vec![
                "{\"name\": \"read_file\", ",
                "\"arguments\": {\"path\": \"a\"}}",
            ],
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
        ),
    ] {
        let mut unwrap = AnswerUnwrap::default();
        let mut out = Vec::new();
        for event in text_block(&pieces) {
            unwrap.push(event, &mut out);
        }
        assert!(texts(&out).is_empty(), "held until the block ends");
        unwrap.push(stop(), &mut out);
        assert_eq!(texts(&out), vec![shown.to_owned()]);
        assert!(matches!(out.last(), Some(Event::BlockStop(_))));
    }
    // Cut off: nothing held is shown.
    let mut unwrap = AnswerUnwrap::default();
    let mut out = Vec::new();
    for event in text_block(&["{\"answer\": \"hal"]) {
        unwrap.push(event, &mut out);
    }
    unwrap.push(
        Event::BlockAbort(BlockAbort {
            index: 0,
            block_type: BlockType::Text,
            reason: "cut".into(),
        }),
        &mut out,
    );
    assert!(texts(&out).is_empty());
}
