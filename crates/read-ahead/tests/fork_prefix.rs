#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A forked request is a byte prefix-extension of the main one, in all four protocols and
//! at every history length: the main request's cacheable prompt (tools, system prompt,
//! then each message, serialized as sent; cache breakpoints are markers, not content) is
//! exactly the start of the fork's. Checked on random histories of at least 10, 100 and
//! 500 items, for a suggestion fork and a speculation's later request.

use proptest::prelude::*;
use saki_llm_client::{Client, ClientConfig, Request, ThinkingConfig, WireApi};
use saki_llm_worker::{Item, ToolExecutionContext, ToolResultStatus, Worker, WorkerConfig};
use saki_read_ahead::{CacheSafeStore, SUGGESTION_PROMPT};
use saki_tools::Workspace;
use serde_json::Value;
use std::sync::Arc;

/// One turn: the person's words, maybe an attached file, rounds of tool calls with their
/// results, maybe thinking, and the answer.
#[derive(Debug, Clone)]
struct TurnShape {
    words: String,
    attached: bool,
    rounds: Vec<usize>,
    thinking: bool,
    answer: String,
}

fn turn() -> impl Strategy<Value = TurnShape> {
    (
        "[a-z ]{1,30}",
        any::<bool>(),
        prop::collection::vec(1usize..4, 0..3),
        any::<bool>(),
        "[A-Za-z .\n]{1,40}",
    )
        .prop_map(|(words, attached, rounds, thinking, answer)| TurnShape {
            words,
            attached,
            rounds,
            thinking,
            answer,
        })
}

/// Whole turns until the history holds at least `min` items.
fn history(min: usize) -> impl Strategy<Value = Vec<Item>> {
    prop::collection::vec(turn(), min..=min).prop_map(move |turns| {
        let mut items = Vec::new();
        let mut batch = 0;
        for (t, shape) in turns.iter().cycle().enumerate() {
            if items.len() >= min {
                break;
            }
            items.push(Item::user(format!("{} #{t}", shape.words)));
            if shape.attached {
                items.push(Item::system(format!(
                    "[File: notes{t}.md]\n{}",
                    shape.answer
                )));
            }
            for &calls in &shape.rounds {
                batch += 1;
                let ctx = |i: usize| ToolExecutionContext {
                    call_id: format!("call_{batch}_{i}"),
                    batch_id: format!("batch_{batch}"),
                    call_index: i,
                };
                for i in 0..calls {
                    items.push(Item::ToolCall {
                        name: "read_file".into(),
                        arguments: format!("{{\"path\":\"f{t}_{i}.rs\"}}"),
                        signature: None,
                        ctx: ctx(i),
                    });
                }
                for i in 0..calls {
                    items.push(Item::ToolResult {
                        name: "read_file".into(),
                        content: format!("fn f{i}() {{}}\n"),
                        status: if i == 1 {
                            ToolResultStatus::Error
                        } else {
                            ToolResultStatus::Success
                        },
                        ctx: ctx(i),
                    });
                }
            }
            if shape.thinking {
                items.push(Item::Thinking {
                    text: "let me see".into(),
                    signature: Some(format!("sig{t}")),
                });
            }
            items.push(Item::AssistantText {
                text: shape.answer.clone(),
            });
        }
        items
    })
}

/// What a speculation has added by its second request: the suggestion, a call, its result.
fn speculated() -> Vec<Item> {
    let ctx = ToolExecutionContext {
        call_id: "s1".into(),
        batch_id: "batch_900".into(),
        call_index: 0,
    };
    vec![
        Item::user("run the tests"),
        Item::ToolCall {
            name: "shell".into(),
            arguments: "{\"command\":\"cargo test\"}".into(),
            signature: None,
            ctx: ctx.clone(),
        },
        Item::ToolResult {
            name: "shell".into(),
            content: "ok".into(),
            status: ToolResultStatus::Success,
            ctx,
        },
    ]
}

/// The request the main loop would send next, built by the real Worker.
fn main_request(wire: WireApi, history: &[Item], thinking: bool) -> Request {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::new(dir.path()).unwrap());
    let tools = Arc::new(saki_tools::builtin_server(workspace).unwrap());
    let client = Client::new(ClientConfig::new(wire, "http://127.0.0.1:9/v1")).unwrap();
    let mut config = WorkerConfig::new("main");
    config.thinking = thinking.then(ThinkingConfig::default);
    config.system_prompt = Some("You are saki.".into());
    let mut worker = Worker::new(client, tools, config);
    worker.set_history(history.to_vec());
    worker.build_request()
}

fn strip_breakpoints(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_breakpoints);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_breakpoints),
        _ => {}
    }
}

/// The prompt a provider caches, in its order, each part serialized as sent.
fn cached_prompt(wire: WireApi, request: &Request) -> Vec<String> {
    let mut body = wire.encode(request);
    strip_breakpoints(&mut body);
    let (head, list): (&[&str], &str) = match wire {
        WireApi::Chat => (&["tools"], "messages"),
        WireApi::Responses => (&["instructions", "tools"], "input"),
        WireApi::Anthropic => (&["tools", "system"], "messages"),
        WireApi::Gemini => (&["systemInstruction", "tools"], "contents"),
    };
    let mut parts: Vec<String> = head.iter().map(|k| body[*k].to_string()).collect();
    parts.extend(body[list].as_array().unwrap().iter().map(Value::to_string));
    parts
}

fn check(history: &[Item], thinking: bool) {
    for wire in WireApi::ALL {
        let main = main_request(wire, history, thinking);
        let mut store = CacheSafeStore::default();
        store.save(&main, history);
        let params = store.get().unwrap();
        let mut suggestion = speculated();
        suggestion.push(Item::user(SUGGESTION_PROMPT));
        for extra in [
            vec![Item::user(SUGGESTION_PROMPT)],
            speculated(),
            suggestion,
        ] {
            let fork = params.fork_request("main", &extra);
            let (a, b) = (cached_prompt(wire, &main), cached_prompt(wire, &fork));
            assert!(b.len() > a.len(), "{wire}: the fork adds nothing");
            assert!(
                b.concat().starts_with(&a.concat()),
                "{wire}: at {} items the fork is not a prefix-extension",
                history.len()
            );
            assert_eq!(fork.thinking, main.thinking, "{wire}: thinking differs");
            assert_eq!(fork.model, main.model);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn forks_extend_the_main_request_at_10_items(h in history(10), thinking in any::<bool>()) {
        prop_assert!(h.len() >= 10);
        check(&h, thinking);
    }

    #[test]
    fn forks_extend_the_main_request_at_100_items(h in history(100), thinking in any::<bool>()) {
        prop_assert!(h.len() >= 100);
        check(&h, thinking);
    }

    #[test]
    fn forks_extend_the_main_request_at_500_items(h in history(500), thinking in any::<bool>()) {
        prop_assert!(h.len() >= 500);
        check(&h, thinking);
    }
}
