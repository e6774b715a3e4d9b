#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Images in each protocol's own format, checked on the bodies the mock server recorded:
//! a prompt's image (`@path`), and an image a tool returned with its result.

use futures::StreamExt;
use saki_llm_client::*;
use saki_testkit::MockServer;
use saki_testkit::Turn;
use serde_json::{json, Value};

const PNG_B64: &str = "iVBORw0KGgo=";

fn png() -> ImagePart {
    ImagePart {
        media_type: "image/png".into(),
        data: Base64::from_encoded(PNG_B64),
    }
}

/// `look at @a.png` with its image message, an assistant call to read_file, its result
/// with the returned image, and a second call's plain result.
fn request() -> Request {
    Request {
        model: "m".into(),
        system: Some("sys".into()),
        messages: vec![
            Message::user_text("look at @a.png"),
            Message {
                role: Role::User,
                content: vec![
                    ContentPart::Text {
                        text: "[Image: a.png]".into(),
                    },
                    ContentPart::Image {
                        image: png(),
                        tool_use_id: None,
                    },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentPart::ToolUse {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"b.png"}"#.into(),
                        signature: None,
                    },
                    ContentPart::ToolUse {
                        id: "call_2".into(),
                        name: "ls".into(),
                        arguments: "{}".into(),
                        signature: None,
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentPart::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "[Image: b.png]".into(),
                        is_error: false,
                    },
                    ContentPart::Image {
                        image: png(),
                        tool_use_id: Some("call_1".into()),
                    },
                    ContentPart::ToolResult {
                        tool_use_id: "call_2".into(),
                        content: "a.png\nb.png".into(),
                        is_error: false,
                    },
                ],
            },
        ],
        ..Request::default()
    }
}

async fn body(wire: WireApi, request: &Request) -> Value {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("ok"));
    let base = match wire {
        WireApi::Chat | WireApi::Responses => server.openai_url(),
        _ => server.url(),
    };
    let client = Client::new(ClientConfig::new(wire, base)).unwrap();
    let _: Vec<_> = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap()
        .collect()
        .await;
    server.requests().remove(0).body
}

#[tokio::test]
async fn chat_sends_image_url_parts_and_returned_images_after_the_tool_messages() {
    let body = body(WireApi::Chat, &request()).await;
    let url = format!("data:image/png;base64,{PNG_B64}");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "look at @a.png"})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "text", "text": "[Image: a.png]"},
            {"type": "image_url", "image_url": {"url": url}},
        ]})
    );
    // Tool messages follow their assistant message without a gap; the image after them.
    assert_eq!(messages[4]["role"], "tool");
    assert_eq!(messages[4]["content"], "[Image: b.png]");
    assert_eq!(messages[5]["role"], "tool");
    assert_eq!(
        messages[6],
        json!({"role": "user", "content": [
            {"type": "text", "text": "[image returned by tool call call_1]"},
            {"type": "image_url", "image_url": {"url": url}},
        ]})
    );
    assert_eq!(messages.len(), 7);
}

#[tokio::test]
async fn responses_sends_input_image_and_puts_returned_images_in_the_call_output() {
    let body = body(WireApi::Responses, &request()).await;
    let url = format!("data:image/png;base64,{PNG_B64}");
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[1],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "[Image: a.png]"},
            {"type": "input_image", "image_url": url},
        ]})
    );
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "[Image: b.png]"},
            {"type": "input_image", "image_url": url},
        ]})
    );
    // A result without an image keeps its plain string output.
    assert_eq!(input[5]["output"], "a.png\nb.png");
}

#[tokio::test]
async fn anthropic_sends_base64_image_blocks_also_inside_the_tool_result() {
    let body = body(WireApi::Anthropic, &request()).await;
    let block = json!({"type": "image", "source":
        {"type": "base64", "media_type": "image/png", "data": PNG_B64}});
    let messages = body["messages"].as_array().unwrap();
    // The prompt and its image message fold into one user turn of separate blocks.
    let first = messages[0]["content"].as_array().unwrap();
    assert_eq!(first[0]["text"], "look at @a.png");
    assert_eq!(first[1]["text"], "[Image: a.png]");
    assert_eq!(first[2], block);
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(
        results[0]["content"],
        json!([{"type": "text", "text": "[Image: b.png]"}, block])
    );
    assert_eq!(results[1]["content"], "a.png\nb.png");
}

#[tokio::test]
async fn gemini_sends_inline_data_and_returned_images_after_the_function_responses() {
    let body = body(WireApi::Gemini, &request()).await;
    let part = json!({"inlineData": {"mimeType": "image/png", "data": PNG_B64}});
    let contents = body["contents"].as_array().unwrap();
    let first = contents[0]["parts"].as_array().unwrap();
    assert_eq!(first[1], json!({"text": "[Image: a.png]"}));
    assert_eq!(first[2], part);
    let results = contents[2]["parts"].as_array().unwrap();
    assert!(results[0].get("functionResponse").is_some());
    assert!(results[1].get("functionResponse").is_some());
    assert_eq!(results[2], part);
    assert_eq!(results.len(), 3);
}

#[test]
fn a_request_without_images_encodes_as_before() {
    // The same conversation minus its images: no part lists where strings were.
    let mut request = request();
    for message in &mut request.messages {
        message
            .content
            .retain(|p| !matches!(p, ContentPart::Image { .. }));
    }
    let chat = WireApi::Chat.encode(&request);
    assert_eq!(chat["messages"][2]["content"], "[Image: a.png]");
    let responses = WireApi::Responses.encode(&request);
    assert_eq!(responses["input"][4]["output"], "[Image: b.png]");
    let anthropic = WireApi::Anthropic.encode(&request);
    assert_eq!(
        anthropic["messages"][2]["content"][0]["content"],
        "[Image: b.png]"
    );
}

#[test]
fn base64_debug_never_prints_the_data() {
    let shown = format!("{:?}", png());
    assert!(!shown.contains(PNG_B64), "{shown}");
}
