#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What keeps provider prompt caches warm: Anthropic `cache_control` breakpoints after
//! the tools and system prompt and on the two newest messages, and OpenAI's
//! `prompt_cache_key`, shared by every clone of a client and sent only where it means
//! something.

use futures::StreamExt;
use saki_llm_client::*;
use saki_testkit::{MockServer, Turn};
use serde_json::{json, Value};

fn request(system: Option<&str>, last: Vec<ContentPart>) -> Request {
    Request {
        model: "m".into(),
        system: system.map(str::to_owned),
        messages: vec![
            Message::user_text("first"),
            Message::assistant_text("answer"),
            Message {
                role: Role::User,
                content: last,
            },
        ],
        tools: vec![
            ToolDefinition {
                name: "a".into(),
                description: "a".into(),
                input_schema: json!({"type": "object"}),
            },
            ToolDefinition {
                name: "b".into(),
                description: "b".into(),
                input_schema: json!({"type": "object"}),
            },
        ],
        ..Default::default()
    }
}

/// Every `cache_control` in a body, by where it sits.
fn breakpoints(body: &Value) -> Vec<String> {
    fn walk(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    if k == "cache_control" {
                        out.push(at.clone());
                    } else {
                        walk(v, format!("{at}.{k}"), out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, format!("{at}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, String::new(), &mut out);
    out
}

#[test]
fn anthropic_requests_carry_breakpoints_after_the_prefix_and_on_the_two_newest_messages() {
    let text = |t: &str| ContentPart::Text { text: t.into() };
    let body = WireApi::Anthropic.encode(&request(Some("sys"), vec![text("now")]));
    // The message before the newest marks where a fork leaves the conversation.
    assert_eq!(
        breakpoints(&body),
        [
            ".messages[1].content[0]",
            ".messages[2].content[0]",
            ".system[0]"
        ]
    );
    // Without a system prompt, the last tool closes the cached prefix.
    let body = WireApi::Anthropic.encode(&request(None, vec![text("now")]));
    assert_eq!(
        breakpoints(&body),
        [
            ".messages[1].content[0]",
            ".messages[2].content[0]",
            ".tools[1]"
        ]
    );
    assert!(body.get("system").is_none());
    // Several blocks: the last one carries it.
    let results = vec![
        ContentPart::ToolResult {
            tool_use_id: "c1".into(),
            content: "x".into(),
            is_error: false,
        },
        ContentPart::ToolResult {
            tool_use_id: "c2".into(),
            content: "y".into(),
            is_error: false,
        },
    ];
    let body = WireApi::Anthropic.encode(&request(Some("sys"), results));
    assert_eq!(
        breakpoints(&body),
        [
            ".messages[1].content[0]",
            ".messages[2].content[1]",
            ".system[0]"
        ]
    );
    // At most four, the provider's limit.
    assert!(breakpoints(&body).len() <= 4);
    // The other protocols have no such field.
    for wire in [WireApi::Chat, WireApi::Responses, WireApi::Gemini] {
        let body = wire.encode(&request(Some("sys"), vec![text("now")]));
        assert!(breakpoints(&body).is_empty(), "{wire}");
    }
}

#[test]
fn an_anthropic_breakpoint_never_lands_on_a_thinking_block() {
    let mut r = request(Some("sys"), vec![ContentPart::Text { text: "q".into() }]);
    r.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            ContentPart::Text {
                text: "partial".into(),
            },
            ContentPart::Thinking {
                text: "hm".into(),
                signature: Some("s".into()),
            },
        ],
    });
    let body = WireApi::Anthropic.encode(&r);
    assert_eq!(
        breakpoints(&body),
        [
            ".messages[2].content[0]",
            ".messages[3].content[0]",
            ".system[0]"
        ]
    );
}

async fn sent(client: &Client, server: &MockServer) -> Value {
    server.push(Turn::text("ok"));
    let r = request(Some("sys"), vec![ContentPart::Text { text: "q".into() }]);
    let _: Vec<_> = client
        .stream(&r, CancellationToken::new())
        .await
        .unwrap()
        .collect()
        .await;
    server.requests().last().unwrap().body.clone()
}

#[tokio::test]
async fn the_prompt_cache_key_goes_with_openai_style_requests_of_every_clone() {
    for wire in WireApi::ALL {
        let server = MockServer::start().unwrap();
        let base = match wire {
            WireApi::Chat | WireApi::Responses => server.openai_url(),
            _ => server.url(),
        };
        let client = Client::new(ClientConfig::new(wire, base)).unwrap();
        assert!(sent(&client, &server)
            .await
            .get("prompt_cache_key")
            .is_none());
        // Set on one handle, it holds for the clones made before and after (a fork's).
        let fork = client.clone();
        client.set_prompt_cache_key(Some("session-1".into()));
        let body = sent(&fork, &server).await;
        match wire {
            WireApi::Chat | WireApi::Responses => {
                assert_eq!(body["prompt_cache_key"], "session-1", "{wire}")
            }
            _ => assert!(body.get("prompt_cache_key").is_none(), "{wire}"),
        }
        client.set_prompt_cache_key(None);
        assert!(sent(&fork, &server).await.get("prompt_cache_key").is_none());
    }
}
