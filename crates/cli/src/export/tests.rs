use super::*;
use saki_llm_worker::{ToolExecutionContext, ToolResultStatus};
use saki_pod::SessionMeta;

const KEY: &str = "sk-ant-api03-this-is-the-real-key-0123456789";

fn session() -> LoadedSession {
    LoadedSession {
        meta: SessionMeta {
            id: "1-abc".into(),
            workspace: "/w".into(),
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            created: 1,
            title: "fix <b>it</b>".into(),
            system_prompt: Some("system".into()),
        },
        items: Vec::new(),
        warnings: Vec::new(),
        path: "/nonexistent".into(),
        torn_tail: false,
        turns: 1,
    }
}

fn ctx(id: &str) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: id.into(),
        batch_id: "batch_1".into(),
        call_index: 0,
    }
}

fn item(item: Item) -> Entry {
    Entry::Item {
        item,
        speculated: false,
    }
}

fn entries() -> Vec<Entry> {
    vec![
        item(Item::user(format!("use key {KEY} and </script>"))),
        item(Item::Thinking {
            text: "hmm <img src=x onerror=alert(1)>".into(),
            signature: None,
        }),
        item(Item::ToolCall {
            name: "edit".into(),
            arguments: r#"{"path":"a.rs","old_string":"old","new_string":"new"}"#.into(),
            signature: None,
            ctx: ctx("c1"),
        }),
        item(Item::ToolResult {
            name: "edit".into(),
            content: "line\n".repeat(200),
            status: ToolResultStatus::Success,
            ctx: ctx("c1"),
        }),
        Entry::Usage {
            usage: UsageEvent {
                input_tokens: Some(1_000),
                output_tokens: Some(100),
                ..UsageEvent::default()
            },
        },
        Entry::Item {
            item: Item::user("next"),
            speculated: true,
        },
        Entry::Item {
            item: Item::AssistantText {
                text: "**done** <script>alert(1)</script> ghp_abcdefghijklmnopqrstuvwxyz0123456789"
                    .into(),
            },
            speculated: true,
        },
    ]
}

fn render(format: Format) -> String {
    let files = crate::config::FileConfig::default();
    export(&session(), &entries(), format, &files, &[KEY.to_owned()])
}

#[test]
fn html_escapes_all_model_text_and_loads_nothing() {
    let html = render(Format::Html);
    for hostile in ["</script>", "<img", "<script>", "<b>it"] {
        assert!(!html.contains(hostile), "{hostile} in {html}");
    }
    assert!(html.contains("&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    for loads in ["<script", "<link", "<img", "src=\"", "href=", "url("] {
        assert!(!html.contains(loads), "{loads}");
    }
    assert!(html.contains("default-src 'none'"));
    // The long result and the thinking are folded; the speculation is marked.
    assert!(html.contains("<details><summary>result (200 lines)"));
    assert!(html.contains("<details><summary>thinking"));
    assert!(html.contains("read ahead"));
    assert!(html.contains("<span class=\"del\">-old</span>"));
}

#[test]
fn keys_are_redacted_in_every_format() {
    for format in [Format::Md, Format::Html, Format::Json] {
        let text = render(format);
        assert!(!text.contains(KEY), "{format:?}");
        assert!(!text.contains("ghp_abc"), "{format:?}");
        assert!(text.contains("[REDACTED]"), "{format:?}");
    }
}

#[test]
fn markdown_reads_like_a_conversation() {
    let md = render(Format::Md);
    assert!(md.contains("## Prompt 1\n"), "{md}");
    assert!(md.contains("## Prompt 2 *(read ahead)*"), "{md}");
    assert!(md.contains("**done**"), "answers stay Markdown: {md}");
    assert!(
        md.contains("```diff\n--- a.rs\n+++ a.rs\n-old\n+new\n```"),
        "{md}"
    );
    assert!(md.contains("<details><summary>result (200 lines)"), "{md}");
    // 1000 × $3 + 100 × $15 per million.
    assert!(md.contains("$0.0045"), "{md}");
}

#[test]
fn json_has_a_version_and_the_items() {
    let value: Value = serde_json::from_str(&render(Format::Json)).unwrap();
    assert_eq!(value["version"], JSON_VERSION);
    assert_eq!(value["session"]["id"], "1-abc");
    assert!(value["session"].get("system_prompt").is_none());
    let items = value["items"].as_array().unwrap();
    assert_eq!(items.len(), 7);
    assert_eq!(items[0]["item"]["type"], "user");
    assert_eq!(items[6]["speculated"], true);
    assert_eq!(value["usage"]["cost_usd"], 0.0045);
}

#[test]
fn known_secrets_are_the_key_values_and_header_values() {
    let files: crate::config::FileConfig = toml::from_str(
        "[providers.mine]\nenv_key = \"MINE_KEY\"\nheaders = { Authorization = \"Bearer xyz-123456789\" }\n",
    )
    .unwrap();
    let env = |k: &str| match k {
        "MINE_KEY" => Some("mine-secret-value".to_owned()),
        "OPENAI_API_KEY" => Some("openai-secret-value-long".to_owned()),
        _ => None,
    };
    let known = known_secrets(&files, &env);
    assert_eq!(
        known,
        [
            "openai-secret-value-long",
            "Bearer xyz-123456789",
            "mine-secret-value"
        ]
    );
}
