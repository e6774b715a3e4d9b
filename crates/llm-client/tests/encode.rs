#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Each encoder writes its provider's documented request body, path and headers,
//! checked on the requests the mock server recorded.

use futures::StreamExt;
use saki_llm_client::*;
use saki_testkit::{MockServer, RecordedRequest, Turn};
use serde_json::json;

fn conversation(thinking: bool) -> Request {
    Request {
        model: "m-1".into(),
        system: Some("You are terse.".into()),
        messages: vec![
            Message::user_text("Read a.txt"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentPart::Thinking {
                        text: "need the file".into(),
                        signature: Some("sig-1".into()),
                    },
                    ContentPart::Text {
                        text: "Reading.".into(),
                    },
                    ContentPart::ToolUse {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a.txt"}"#.into(),
                        signature: Some("gsig".into()),
                    },
                    ContentPart::ToolUse {
                        id: "call_2".into(),
                        name: "grep".into(),
                        arguments: "{not json".into(),
                        signature: None,
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentPart::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "hello".into(),
                        is_error: false,
                    },
                    ContentPart::ToolResult {
                        tool_use_id: "call_2".into(),
                        content: "bad args".into(),
                        is_error: true,
                    },
                ],
            },
        ],
        tools: vec![ToolDefinition {
            name: "read_file".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_output_tokens: Some(1000),
        temperature: Some(0.2),
        thinking: thinking.then(ThinkingConfig::default),
        response_schema: None,
        tool_choice: Default::default(),
    }
}

async fn record(wire: WireApi, request: &Request) -> RecordedRequest {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("ok"));
    let base = match wire {
        WireApi::Chat | WireApi::Responses => server.openai_url(),
        _ => server.url(),
    };
    let mut config = ClientConfig::new(wire, base);
    config.api_key = Some("sk-test".into());
    config.extra_headers = vec![("x-extra".into(), "1".into())];
    let client = Client::new(config).unwrap();
    let events: Vec<_> = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap()
        .collect()
        .await;
    assert!(
        matches!(events.last(), Some(Event::Status(s)) if s.status == ResponseStatus::Completed)
    );
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = requests.remove(0);
    assert_eq!(r.header("x-extra"), Some("1"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    r
}

#[tokio::test]
async fn openai_chat_body() {
    let r = record(WireApi::Chat, &conversation(false)).await;
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    let b = &r.body;
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"]["include_usage"], true);
    assert_eq!(b["max_tokens"], 1000);
    assert_eq!(
        b["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        b["messages"][1],
        json!({"role": "user", "content": "Read a.txt"})
    );
    let assistant = &b["messages"][2];
    assert_eq!(assistant["content"], "Reading.");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a.txt"}"#
    );
    assert_eq!(
        assistant["tool_calls"][1]["function"]["arguments"],
        "{not json"
    );
    assert_eq!(
        b["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "hello"})
    );
    assert_eq!(b["messages"][4]["tool_call_id"], "call_2");
    assert_eq!(b["messages"].as_array().unwrap().len(), 5);
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(
        b["tools"][0]["function"]["parameters"]["required"][0],
        "path"
    );
    assert!(b.get("reasoning_effort").is_none());
}

#[tokio::test]
async fn openai_responses_body() {
    let r = record(WireApi::Responses, &conversation(true)).await;
    assert_eq!(r.path, "/v1/responses");
    let b = &r.body;
    assert_eq!(b["instructions"], "You are terse.");
    assert_eq!(b["store"], false);
    assert_eq!(b["max_output_tokens"], 1000);
    assert_eq!(b["reasoning"]["summary"], "auto");
    let input = b["input"].as_array().unwrap();
    assert_eq!(
        input[0],
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read a.txt"}]})
    );
    assert_eq!(input[1]["content"][0]["type"], "output_text");
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": r#"{"path":"a.txt"}"#})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "hello"})
    );
    assert_eq!(b["tools"][0]["name"], "read_file");
    assert_eq!(b["tools"][0]["parameters"]["type"], "object");
}

#[tokio::test]
async fn anthropic_body() {
    let r = record(WireApi::Anthropic, &conversation(true)).await;
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("sk-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert!(r.header("authorization").is_none());
    let b = &r.body;
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(b["thinking"]["type"], "enabled");
    assert!(b["max_tokens"].as_u64().unwrap() > b["thinking"]["budget_tokens"].as_u64().unwrap());
    assert!(
        b.get("temperature").is_none(),
        "temperature must stay default with thinking"
    );
    let assistant = &b["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "need the file", "signature": "sig-1"})
    );
    assert_eq!(assistant[2]["input"], json!({"path": "a.txt"}));
    assert_eq!(
        assistant[3]["input"],
        json!({}),
        "invalid arguments are sent as an empty object"
    );
    let results = &b["messages"][2]["content"];
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "call_1", "content": "hello"})
    );
    assert_eq!(results[1]["is_error"], true);
    // The newest message's last block is the second cache breakpoint.
    assert_eq!(results[1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");

    let r = record(WireApi::Anthropic, &conversation(false)).await;
    assert_eq!(r.body["max_tokens"], 1000);
    let t = r.body["temperature"].as_f64().unwrap();
    assert!((t - 0.2).abs() < 1e-6);
}

#[tokio::test]
async fn gemini_body() {
    let r = record(WireApi::Gemini, &conversation(true)).await;
    assert_eq!(r.path, "/v1beta/models/m-1:streamGenerateContent");
    assert_eq!(r.query.as_deref(), Some("alt=sse"));
    assert_eq!(r.header("x-goog-api-key"), Some("sk-test"));
    let b = &r.body;
    assert_eq!(b["systemInstruction"]["parts"][0]["text"], "You are terse.");
    assert_eq!(b["contents"][1]["role"], "model");
    let model_parts = &b["contents"][1]["parts"];
    assert_eq!(model_parts[0], json!({"text": "Reading."}));
    assert_eq!(
        model_parts[1]["functionCall"],
        json!({"name": "read_file", "args": {"path": "a.txt"}})
    );
    assert_eq!(model_parts[1]["thoughtSignature"], "gsig");
    let results = &b["contents"][2]["parts"];
    assert_eq!(
        results[0],
        json!({"functionResponse": {"name": "read_file", "response": {"output": "hello"}}})
    );
    assert_eq!(
        results[1],
        json!({"functionResponse": {"name": "grep", "response": {"error": "bad args"}}})
    );
    assert_eq!(b["generationConfig"]["maxOutputTokens"], 1000);
    assert_eq!(
        b["generationConfig"]["thinkingConfig"]["includeThoughts"],
        true
    );
    assert_eq!(
        b["tools"][0]["functionDeclarations"][0]["name"],
        "read_file"
    );
}

#[test]
fn encoding_is_byte_stable() {
    for wire in WireApi::ALL {
        let a = serde_json::to_vec(&wire.encode(&conversation(false))).unwrap();
        let b = serde_json::to_vec(&wire.encode(&conversation(false))).unwrap();
        assert_eq!(a, b, "{wire}");
    }
}

#[test]
fn a_response_schema_asks_for_structured_output_where_the_protocol_has_it() {
    let schema =
        json!({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]});
    let mut request = conversation(false);
    request.response_schema = Some(ResponseSchema {
        name: "reply".into(),
        schema: schema.clone(),
    });
    let chat = WireApi::Chat.encode(&request);
    assert_eq!(
        chat["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": true}})
    );
    let responses = WireApi::Responses.encode(&request);
    assert_eq!(
        responses["text"]["format"],
        json!({"type": "json_schema", "name": "reply", "schema": schema, "strict": true})
    );
    let gemini = WireApi::Gemini.encode(&request);
    assert_eq!(
        gemini["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(gemini["generationConfig"]["responseJsonSchema"], schema);
    let anthropic = WireApi::Anthropic.encode(&request);
    assert!(!anthropic.to_string().contains("\"reply\""));
    // Without one, nothing is added.
    let plain = WireApi::Chat.encode(&conversation(false));
    assert!(plain.get("response_format").is_none());
}

#[test]
fn tool_choice_none_keeps_the_tools_and_asks_for_text_in_each_protocol() {
    let mut request = conversation(false);
    for wire in WireApi::ALL {
        let body = wire.encode(&request);
        assert!(body.get("tool_choice").is_none() && body.get("toolConfig").is_none());
    }
    request.tool_choice = ToolChoice::None;
    let expected = [
        (WireApi::Chat, "tool_choice", json!("none")),
        (WireApi::Responses, "tool_choice", json!("none")),
        (WireApi::Anthropic, "tool_choice", json!({"type": "none"})),
        (
            WireApi::Gemini,
            "toolConfig",
            json!({"functionCallingConfig": {"mode": "NONE"}}),
        ),
    ];
    for (wire, key, value) in expected {
        let body = wire.encode(&request);
        assert_eq!(body[key], value, "{wire}");
        assert!(body.get("tools").is_some(), "{wire}: the tool list stays");
        // The prefix before the choice is the same bytes as with tools allowed.
        let mut auto = request.clone();
        auto.tool_choice = ToolChoice::Auto;
        assert_eq!(wire.encode(&auto)["tools"], body["tools"], "{wire}");
    }
}

/// A prompt with two `@path` files after an answered turn: three user messages in a row.
fn prompt_with_two_files() -> Request {
    Request {
        model: "m-1".into(),
        messages: vec![
            Message::user_text("hi"),
            Message::assistant_text("hello"),
            Message::user_text("compare @a.txt and @b.txt"),
            Message::user_text("[File: a.txt]\nalpha"),
            Message::user_text("[File: b.txt]\nbeta"),
        ],
        ..Default::default()
    }
}

#[tokio::test]
async fn referenced_files_stay_apart_from_the_prompt_in_every_protocol() {
    let prompt = "compare @a.txt and @b.txt";
    let (a, b) = ("[File: a.txt]\nalpha", "[File: b.txt]\nbeta");

    // Chat Completions: a user message each, in order.
    let chat = record(WireApi::Chat, &prompt_with_two_files()).await.body;
    assert_eq!(
        chat["messages"].as_array().unwrap()[2..],
        [
            json!({"role": "user", "content": prompt}),
            json!({"role": "user", "content": a}),
            json!({"role": "user", "content": b}),
        ]
    );

    // Responses: a user message item each, in order.
    let responses = record(WireApi::Responses, &prompt_with_two_files())
        .await
        .body;
    let text = |t: &str| json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]});
    assert_eq!(
        responses["input"].as_array().unwrap()[2..],
        [text(prompt), text(a), text(b)]
    );

    // Anthropic: roles alternate, so one user message with a text block each, in order.
    let anthropic = record(WireApi::Anthropic, &prompt_with_two_files())
        .await
        .body;
    let messages = anthropic["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[2]["role"], "user");
    let blocks = messages[2]["content"].as_array().unwrap();
    let block_texts: Vec<&str> = blocks.iter().map(|b| b["text"].as_str().unwrap()).collect();
    assert_eq!(block_texts, [prompt, a, b]);
    assert!(blocks.iter().all(|b| b["type"] == "text"));
    // The cache breakpoint closes the whole turn, files included.
    assert_eq!(blocks[2]["cache_control"], json!({"type": "ephemeral"}));
    assert!(blocks[0].get("cache_control").is_none());

    // Gemini: contents alternate, so one user content with a part each, in order.
    let gemini = record(WireApi::Gemini, &prompt_with_two_files()).await.body;
    let contents = gemini["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(
        contents[2]["parts"],
        json!([{"text": prompt}, {"text": a}, {"text": b}])
    );
}

#[test]
fn a_turn_encoded_empty_leaves_no_two_user_messages_side_by_side() {
    // Unsigned thinking cannot be sent back to Anthropic or Gemini, so that assistant
    // message encodes to nothing; the user messages around it become one.
    let mut request = prompt_with_two_files();
    request.messages[1] = Message {
        role: Role::Assistant,
        content: vec![ContentPart::Thinking {
            text: "hm".into(),
            signature: None,
        }],
    };
    let anthropic = WireApi::Anthropic.encode(&request);
    assert_eq!(anthropic["messages"].as_array().unwrap().len(), 1);
    assert_eq!(
        anthropic["messages"][0]["content"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let gemini = WireApi::Gemini.encode(&request);
    assert_eq!(gemini["contents"].as_array().unwrap().len(), 1);
    assert_eq!(gemini["contents"][0]["parts"].as_array().unwrap().len(), 4);
}
