#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `web_fetch` against a local server only: HTML as Markdown, the address guard, redirects,
//! timeouts, size caps, types that are not text, and pages built to exhaust the converter.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use axum::Router;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext};
use saki_tools::web_fetch::{WebFetch, WebSettings};
use std::time::Duration;

fn html(body: String) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html")], body)
}

async fn serve() -> String {
    serve_also(Router::new()).await
}

/// A server with the usual routes and `extra`'s.
async fn serve_also(extra: Router) -> String {
    let app = extra
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
        .route("/to-file", get(|| async { Redirect::temporary("file:///etc/passwd").into_response() }))
        .route("/deep", get(|| async {
            html(format!("<html><body>{}deep text{}</body></html>", "<div>".repeat(20_000), "</div>".repeat(20_000)))
        }))
        .route("/bold", get(|| async {
            html(format!("<html><body>{}bold text</body></html>", "<b>".repeat(1000)))
        }))
        .route("/italic", get(|| async {
            html(format!("<html><body><p>{}italic text</p></body></html>", "<i>".repeat(1000)))
        }))
        // Open formatting elements are cloned into every new paragraph: each <p> gets
        // all thousand (the Noah's Ark rule keeps only three that are alike).
        .route("/reopened", get(|| async {
            let open: String = (0..1000).map(|k| format!("<b id=b{k}>")).collect();
            html(format!("<html><body><p>{open}{}</body></html>", "<p>again".repeat(1000)))
        }));
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

#[tokio::test]
async fn pages_built_to_exhaust_the_converter_come_back_as_plain_text() {
    let base = serve().await;
    let tool = local(WebSettings::default());
    for (path, text) in [
        ("/deep", "deep text"),
        ("/bold", "bold text"),
        ("/italic", "italic text"),
        ("/reopened", "again"),
    ] {
        let started = std::time::Instant::now();
        let page = run(&tool, &format!("{base}{path}")).await.unwrap();
        assert!(
            page.contains("its text without markup follows]") && page.contains(text),
            "{path}: {page:.300}"
        );
        eprintln!("{path}: {:?}", started.elapsed());
    }
}

#[tokio::test]
async fn a_redirect_to_another_host_is_refused_unless_allowed() {
    let other = serve().await;
    let other_port = other.rsplit(':').next().unwrap().to_owned();
    let (away, same) = (
        format!("http://localhost:{other_port}/page"),
        format!("http://127.0.0.1:{other_port}/page"),
    );
    let extra = Router::new()
        .route(
            "/away",
            get(move || async move { Redirect::temporary(&away) }),
        )
        .route(
            "/same-host",
            get(move || async move { Redirect::temporary(&same) }),
        );
    let base = serve_also(extra).await;
    // 127.0.0.1 is allowed; its redirect to localhost (another port too) is not followed.
    let allowed = |domains: &[&str]| {
        local(WebSettings {
            allowed_domains: domains.iter().map(|d| d.to_string()).collect(),
            ..WebSettings::default()
        })
    };
    let tool = allowed(&["127.0.0.1"]);
    let err = run(&tool, &format!("{base}/away")).await.unwrap_err();
    assert!(
        err.starts_with("refused: a redirect from 127.0.0.1 to another host, localhost"),
        "{err}"
    );
    assert!(err.contains("web_fetch.allowed_domains"), "{err}");
    // Nothing allowed at all (the person approved this one fetch): the same.
    let err = run(&local(WebSettings::default()), &format!("{base}/away"))
        .await
        .unwrap_err();
    assert!(err.contains("localhost"), "{err}");
    // The same host on another port, or an allowed domain, is followed.
    let page = run(&tool, &format!("{base}/same-host")).await.unwrap();
    assert!(page.contains("## Docs"), "{page}");
    let page = run(
        &allowed(&["127.0.0.1", "localhost"]),
        &format!("{base}/away"),
    )
    .await
    .unwrap();
    assert!(page.contains("## Docs"), "{page}");
}
