#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Images end to end, in every protocol: `@shot.png` in a prompt and a `read_file` of
//! `chart.png` go out as each provider's image parts; the session log names them by
//! digest (no base64), the image store holds them privately, and a resumed session
//! sends them again. A model without vision gets an alert and notes, never an image.

mod common;

use common::{env_with, events, Env};
use saki_testkit::{MockServer, Turn, TINY_PNG, TINY_PNG_BASE64};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

fn env() -> Env {
    let e = env_with(&[]);
    std::fs::write(e.ws.join("shot.png"), TINY_PNG).unwrap();
    std::fs::write(e.ws.join("chart.png"), TINY_PNG).unwrap();
    e
}

fn sessions(e: &Env) -> std::path::PathBuf {
    e.home.path().join(".local/share/saki/sessions")
}

/// `saki exec --json` against the mock server; stdout.
fn exec(e: &Env, provider: &str, model: &str, base: &str, extra: &[&str], prompt: &str) -> Vec<u8> {
    let key = match provider {
        "anthropic" => "ANTHROPIC_API_KEY",
        "gemini" => "GEMINI_API_KEY",
        _ => "OPENAI_API_KEY",
    };
    e.saki()
        .env(key, "test-key")
        .args(["exec", "--json", "--provider", provider, "--base-url", base])
        .args(["--model", model])
        .args(extra)
        .arg(prompt)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// The prompt's image and the returned image, where each protocol puts them.
fn assert_images_on_the_wire(provider: &str, first: &Value, second: &Value) {
    let url = format!("data:image/png;base64,{TINY_PNG_BASE64}");
    match provider {
        "openai-compatible" => {
            let image = json!({"type": "image_url", "image_url": {"url": url}});
            let prompt_image = &first["messages"][2];
            assert_eq!(prompt_image["content"][0]["text"], "[Image: shot.png]");
            assert_eq!(prompt_image["content"][1], image);
            let messages = second["messages"].as_array().unwrap();
            let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
            assert_eq!(messages[tool]["content"], "[Image: chart.png (PNG 3×2)]");
            assert_eq!(messages[tool + 1]["role"], "user");
            assert_eq!(messages[tool + 1]["content"][1], image);
        }
        "openai" => {
            let image = json!({"type": "input_image", "image_url": url});
            let input = first["input"].as_array().unwrap();
            assert_eq!(input[1]["content"][1], image);
            let output = second["input"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["type"] == "function_call_output")
                .unwrap();
            assert_eq!(output["output"][1], image);
        }
        "anthropic" => {
            let image = json!({"type": "image", "source":
                {"type": "base64", "media_type": "image/png", "data": TINY_PNG_BASE64}});
            let blocks = first["messages"][0]["content"].as_array().unwrap();
            assert_eq!(blocks[2]["type"], "image");
            assert_eq!(blocks[2]["source"], image["source"]);
            let result = second["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["content"].as_array().unwrap())
                .find(|b| b["type"] == "tool_result")
                .unwrap();
            assert_eq!(result["content"][1]["source"], image["source"]);
        }
        "gemini" => {
            let part = json!({"inlineData": {"mimeType": "image/png", "data": TINY_PNG_BASE64}});
            assert_eq!(first["contents"][0]["parts"][2], part);
            let results = second["contents"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["parts"][0].get("functionResponse").is_some())
                .unwrap();
            assert_eq!(results["parts"][1], part);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn images_go_out_in_each_protocol_and_the_session_keeps_references() {
    for (provider, model) in [
        ("openai-compatible", "gpt-4o"),
        ("openai", "gpt-5"),
        ("anthropic", "claude-sonnet-4-5"),
        ("gemini", "gemini-2.5-flash"),
    ] {
        let e = env();
        let server = MockServer::start().unwrap();
        server.push(Turn::new().with_tool_call(
            "call_1",
            "read_file",
            json!({"path": "chart.png"}).to_string(),
        ));
        server.push(Turn::text("Both are small gradients."));
        server.push(Turn::text("Yes."));
        let base = if provider.starts_with("openai") {
            server.openai_url()
        } else {
            server.url()
        };
        let out = exec(&e, provider, model, &base, &[], "what is in @shot.png?");
        let requests = server.requests();
        assert_images_on_the_wire(provider, &requests[0].body, &requests[1].body);

        // The log names both images by digest and holds no image bytes.
        let log: Vec<_> = std::fs::read_dir(sessions(&e))
            .unwrap()
            .filter_map(Result::ok)
            .map(|d| d.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        let text = std::fs::read_to_string(&log[0]).unwrap();
        assert!(
            !text.contains(TINY_PNG_BASE64),
            "{provider}: base64 in the log"
        );
        let digest = saki_tools::common::sha256_hex(TINY_PNG);
        let images: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["item"]["type"] == "image")
            .map(|l| l["item"].clone())
            .collect();
        assert_eq!(images.len(), 2, "{provider}: {text}");
        assert_eq!(images[0]["path"], "shot.png");
        assert_eq!(images[0]["sha256"], digest.as_str());
        assert_eq!(images[1]["path"], "chart.png");
        assert!(images[1]["call_id"].is_string());
        let stored = sessions(&e).join("images").join(&digest);
        assert_eq!(std::fs::read(&stored).unwrap(), TINY_PNG);
        let mode = std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{provider}");

        // Resumed: both images are sent again, exactly as before.
        let id = events(&out)[0]["session_id"].as_str().unwrap().to_owned();
        exec(&e, provider, model, &base, &["--resume", &id], "sure?");
        let resumed = server.requests()[2].raw_body.clone();
        let body = String::from_utf8_lossy(&resumed);
        assert_eq!(
            body.matches(TINY_PNG_BASE64).count(),
            2,
            "{provider}: {body}"
        );
    }
}

#[test]
fn a_model_without_vision_gets_an_alert_and_notes_and_no_image() {
    let e = env();
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "call_1",
        "read_file",
        json!({"path": "chart.png"}).to_string(),
    ));
    server.push(Turn::text("I cannot see images."));
    let base = server.openai_url();
    let out = exec(
        &e,
        "openai-compatible",
        "qwen3-coder",
        &base,
        &[],
        "look at @shot.png",
    );
    let events = events(&out);
    let alert = events
        .iter()
        .find(|e| e["type"] == "alert")
        .unwrap_or_else(|| panic!("no alert in {events:?}"));
    let message = alert["message"].as_str().unwrap();
    assert!(
        message
            .contains("@shot.png was not attached: the model qwen3-coder does not accept images"),
        "{message}"
    );
    let requests = server.requests();
    let first = requests[0].body.to_string();
    assert!(first.contains("[unresolved file ref: shot.png]"), "{first}");
    let second = requests[1].body.to_string();
    assert!(!second.contains(TINY_PNG_BASE64));
    assert!(
        second.contains("not shown: the model in use does not accept images"),
        "{second}"
    );
}

#[test]
fn config_says_a_model_reads_images() {
    let e = env();
    let config = e.home.path().join("config/saki");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[models.\"my-local-vl\"]\nvision = true\n",
    )
    .unwrap();
    let server = MockServer::start().unwrap();
    server.push(Turn::text("A gradient."));
    let base = server.openai_url();
    exec(
        &e,
        "openai-compatible",
        "my-local-vl",
        &base,
        &[],
        "@shot.png",
    );
    assert!(server.requests()[0]
        .body
        .to_string()
        .contains(TINY_PNG_BASE64));
}
