#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `web_fetch` against a local server only: HTML as Markdown, the address guard, redirects,
//! timeouts, size caps and types that are not text.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use axum::Router;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext};
use saki_tools::web_fetch::{WebFetch, WebSettings};
use std::time::Duration;

async fn serve() -> String {
    let app = Router::new()
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    "<html><head><script>alert(1)</script></head><body><h2>Docs</h2><p>Use <code>cargo</code>.</p></body></html>",
                )
            }),
        )
        .route("/json", get(|| async { ([(header::CONTENT_TYPE, "application/json")], "{\"a\":1}") }))
        .route("/png", get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0x89u8, b'P', b'N', b'G']) }))
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "gone") }))
        .route("/big", get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "x".repeat(100_000)) }))
        .route("/slow", get(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            "late"
        }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/to-page", get(|| async { Redirect::temporary("/page") }))
        .route("/to-file", get(|| async { Redirect::temporary("file:///etc/passwd").into_response() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn local(settings: WebSettings) -> WebFetch {
    WebFetch::new(WebSettings {
        allow_private_addresses: true,
        ..settings
    })
}

async fn run(tool: &WebFetch, url: &str) -> Result<String, String> {
    let ctx = ToolExecutionContext {
        call_id: "c".into(),
        batch_id: "b".into(),
        call_index: 0,
    };
    let input = serde_json::json!({ "url": url }).to_string();
    match tool.execute(&input, ctx).await {
        Ok(out) => Ok(out.content),
        Err(ToolError::Failed(e) | ToolError::InvalidInput(e)) => Err(e),
    }
}

#[tokio::test]
async fn html_comes_back_as_markdown_and_text_as_it_is() {
    let base = serve().await;
    let tool = local(WebSettings::default());
    let page = run(&tool, &format!("{base}/page")).await.unwrap();
    assert!(page.contains("## Docs"), "{page}");
    assert!(page.contains("`cargo`"), "{page}");
    assert!(!page.contains("alert"), "{page}");
    assert!(
        page.starts_with(&format!("[{base}/page — 200 OK")),
        "{page}"
    );
    let followed = run(&tool, &format!("{base}/to-page")).await.unwrap();
    assert!(
        followed.contains("## Docs") && followed.contains("/page —"),
        "{followed}"
    );
    assert!(run(&tool, &format!("{base}/json"))
        .await
        .unwrap()
        .contains("{\"a\":1}"));
}

#[tokio::test]
async fn this_machine_and_the_private_network_are_refused_by_default() {
    let base = serve().await;
    let tool = WebFetch::new(WebSettings::default());
    let err = run(&tool, &format!("{base}/page")).await.unwrap_err();
    assert!(err.contains("refused") && err.contains("loopback"), "{err}");
    assert!(err.contains("web_fetch.allow_private_addresses"), "{err}");
    // A name is checked after it resolves.
    let port = base.rsplit(':').next().unwrap();
    let err = run(&tool, &format!("http://localhost:{port}/page"))
        .await
        .unwrap_err();
    assert!(
        err.contains("refused") && err.contains("localhost"),
        "{err}"
    );
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://2130706433/",
        "http://10.0.0.1/",
    ] {
        let err = run(&tool, url).await.unwrap_err();
        assert!(err.starts_with("refused"), "{url}: {err}");
    }
}

#[tokio::test]
async fn failures_say_what_went_wrong() {
    let base = serve().await;
    let tool = local(WebSettings {
        timeout: Duration::from_secs(1),
        max_body_bytes: 1000,
        ..WebSettings::default()
    });
    let err = run(&tool, &format!("{base}/png")).await.unwrap_err();
    assert!(
        err.contains("image/png") && err.contains("not text"),
        "{err}"
    );
    let err = run(&tool, &format!("{base}/missing")).await.unwrap_err();
    assert!(err.contains("404"), "{err}");
    let err = run(&tool, &format!("{base}/slow")).await.unwrap_err();
    assert!(err.contains("within 1 s"), "{err}");
    let err = run(&tool, &format!("{base}/loop")).await.unwrap_err();
    assert!(err.contains("redirects"), "{err}");
    let err = run(&tool, &format!("{base}/to-file")).await.unwrap_err();
    assert!(err.contains("redirect"), "{err}");
    let big = run(&tool, &format!("{base}/big")).await.unwrap();
    assert!(big.contains("cut at 1000 bytes"), "{big}");
    assert!(big.len() < 1200, "{}", big.len());
    for url in ["ftp://example.com/", "not a url", "file:///etc/passwd"] {
        assert!(run(&tool, url).await.is_err(), "{url}");
    }
}
