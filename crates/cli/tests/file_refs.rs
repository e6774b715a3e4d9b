#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `@path` references on the wire and on disk: a prompt with two references is persisted
//! as `[user, file, file]` and sent with each file apart from the person's text, in the
//! order the references appear, in every protocol; a resumed session sends the same.

mod common;

use common::{env_with, events, Env};
use saki_testkit::{MockServer, Turn};
use serde_json::Value;

const PROMPT: &str = "compare @b.txt with @a.txt";
const FILE_B: &str = "[File: b.txt]\nbeta\n";
const FILE_A: &str = "[File: a.txt]\nalpha\n";

fn env() -> Env {
    env_with(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")])
}

/// The user turns of a recorded request body, each as the texts it holds, in order: one
/// entry per wire message (Chat, Responses) or per turn of blocks / parts (Anthropic,
/// Gemini).
fn user_texts(provider: &str, body: &Value) -> Vec<Vec<String>> {
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    match provider {
        "openai-compatible" => body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| vec![text(&m["content"])])
            .collect(),
        "openai" => body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["type"] == "message" && m["role"] == "user")
            .map(|m| {
                m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| text(&c["text"]))
                    .collect()
            })
            .collect(),
        "anthropic" => body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| {
                let blocks = m["content"].as_array().unwrap();
                assert!(blocks.iter().all(|b| b["type"] == "text"), "{m}");
                blocks.iter().map(|b| text(&b["text"])).collect()
            })
            .collect(),
        "gemini" => body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["role"] == "user")
            .map(|c| {
                c["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| text(&p["text"]))
                    .collect()
            })
            .collect(),
        other => panic!("no wire for {other}"),
    }
}

fn strings(groups: &[&[&str]]) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|g| g.iter().map(|s| (*s).to_owned()).collect())
        .collect()
}

/// The session's history items, as (type, text).
fn persisted(e: &Env) -> Vec<(String, String)> {
    let files = e.session_files();
    assert_eq!(files.len(), 1);
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "item")
        .map(|l| {
            let item = &l["item"];
            let text = item["text"].as_str().unwrap_or_default().to_owned();
            (item["type"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

#[test]
fn two_referenced_files_follow_the_prompt_apart_in_every_protocol_and_in_the_session() {
    for (provider, key) in [
        ("openai-compatible", "OPENAI_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ] {
        let e = env();
        let server = MockServer::start().unwrap();
        server.push(Turn::text("b says beta, a says alpha."));
        server.push(Turn::text("Yes."));
        let base = if provider.starts_with("openai") {
            server.openai_url()
        } else {
            server.url()
        };
        let run = |extra: &[&str], prompt: &str| {
            e.saki()
                .env(key, "test-key")
                .args([
                    "exec",
                    "--json",
                    "--provider",
                    provider,
                    "--base-url",
                    &base,
                ])
                .args(["--model", "m"])
                .args(extra)
                .arg(prompt)
                .assert()
                .success()
                .get_output()
                .stdout
                .clone()
        };
        let out = run(&[], PROMPT);

        // On disk: the person's text, then one system item per file, in reference order.
        let system = |t: &str| ("system".to_owned(), t.to_owned());
        assert_eq!(
            persisted(&e)[..3],
            [
                ("user".to_owned(), PROMPT.to_owned()),
                system(FILE_B),
                system(FILE_A)
            ],
            "{provider}"
        );

        // On the wire: never one text with the files inlined. Chat Completions and
        // Responses send a message each; Anthropic and Gemini, whose roles alternate, one
        // user turn holding a block (part) each.
        let separate = matches!(provider, "openai-compatible" | "openai");
        let first = if separate {
            strings(&[&[PROMPT], &[FILE_B], &[FILE_A]])
        } else {
            strings(&[&[PROMPT, FILE_B, FILE_A]])
        };
        let requests = server.requests();
        assert_eq!(user_texts(provider, &requests[0].body), first, "{provider}");

        // Resumed, the session sends the files the same way, before the next prompt.
        let id = events(&out)[0]["session_id"].as_str().unwrap().to_owned();
        run(&["--resume", &id], "sure?");
        let mut resumed = first.clone();
        resumed.push(vec!["sure?".to_owned()]);
        let body = &server.requests()[1].body;
        assert_eq!(user_texts(provider, body), resumed, "{provider}");
    }
}
