//! `web_fetch`: an http(s) URL as readable text. HTML becomes Markdown (`htmd`, a
//! turndown-style converter on html5ever, so broken real-world HTML still parses);
//! other text types come back as they are. Everything else is a clear error: a binary
//! type, a status that is not success, too many redirects, a timeout, an address the
//! person's network keeps private (see [`crate::web_guard`]).

use crate::common::read_body_at_most;
use crate::web_guard::{check_host, GuardedResolver, Refused};
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

mod html;
mod html_text;

/// How `web_fetch` may reach the web (`[web_fetch]` in config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// Domains fetched without asking in `auto-edit` (a domain covers its subdomains).
    pub allowed_domains: Vec<String>,
    /// Reach loopback, private and link-local addresses too (off: a model cannot probe
    /// the person's network).
    pub allow_private_addresses: bool,
    pub timeout: Duration,
    /// Most bytes read from a response body.
    pub max_body_bytes: usize,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            allowed_domains: Vec::new(),
            allow_private_addresses: false,
            timeout: Duration::from_secs(30),
            max_body_bytes: 5 * 1024 * 1024,
        }
    }
}

impl WebSettings {
    /// Whether `host` is one of the allowed domains or below one.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed_domains.iter().any(|d| {
            let d = d
                .trim_start_matches("*.")
                .trim_end_matches('.')
                .to_ascii_lowercase();
            !d.is_empty() && (host == d || host.ends_with(&format!(".{d}")))
        })
    }
}

/// The host `web_fetch` would contact for these arguments, lower case (`None` when the
/// URL does not parse); what approvals and session grants are keyed on.
pub fn target_host(input: &serde_json::Value) -> Option<String> {
    let url = input.get("url")?.as_str()?;
    let url = reqwest::Url::parse(url).ok()?;
    url.host_str().map(str::to_ascii_lowercase)
}

const MAX_REDIRECTS: usize = 5;

/// Why a redirect to `to` is not followed, for a fetch that asked for the host `asked`:
/// the fetch was approved (or let through by `allowed_domains`) for that host, so a hop
/// may stay on it or go to an allowed domain, and nowhere else. Without this an allowed
/// domain's redirect would take the fetch to any host, unasked.
fn redirect_refused(
    settings: &WebSettings,
    asked: Option<&str>,
    to: &reqwest::Url,
) -> Option<String> {
    let host = to.host_str().unwrap_or("");
    let same = |a: &str| {
        a.trim_end_matches('.')
            .eq_ignore_ascii_case(host.trim_end_matches('.'))
    };
    if asked.is_some_and(same) || settings.allows(host) {
        return None;
    }
    let from = asked.unwrap_or("the host asked for");
    Some(format!(
        "a redirect from {from} to another host, {host} ({to}): a fetch follows redirects \
         only on its own host and to web_fetch.allowed_domains; fetch {to} itself if it is \
         wanted"
    ))
}

/// The tool. Its HTTP client is built at the first fetch: the tool set is built for
/// every session and every speculation, and most never fetch anything.
pub struct WebFetch {
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
    settings: WebSettings,
}

/// The client every fetch uses: the address guard in its resolver and at redirects, no
/// proxies.
fn build_client(settings: &WebSettings) -> Result<reqwest::Client, String> {
    let allow_private = settings.allow_private_addresses;
    let hop_settings = settings.clone();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        let url = attempt.url();
        if !matches!(url.scheme(), "http" | "https") {
            let why = format!("a redirect to {} (only http and https)", url.scheme());
            return attempt.error(why);
        }
        // An IP literal skips the resolver's check.
        if let Some(Err(why)) = url.host().map(|h| check_host(&h, allow_private)) {
            return attempt.error(Refused(format!("a redirect to {why}")));
        }
        let asked = attempt.previous().first().and_then(reqwest::Url::host_str);
        match redirect_refused(&hop_settings, asked, url) {
            Some(why) => attempt.error(Refused(why)),
            None => attempt.follow(),
        }
    });
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { allow_private }))
        .redirect(redirects)
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("saki/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
        // Proxies from the environment would bypass the address check.
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build the web client: {e}"))
}

impl WebFetch {
    pub fn new(settings: WebSettings) -> Self {
        Self {
            client: std::sync::OnceLock::new(),
            settings,
        }
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| build_client(&self.settings))
            .as_ref()
            .map_err(Clone::clone)
    }

    async fn fetch(&self, raw: &str) -> Result<String, String> {
        let url = reqwest::Url::parse(raw).map_err(|e| format!("`{raw}` is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "only http and https URLs can be fetched, not {}",
                url.scheme()
            ));
        }
        let host = url.host().ok_or_else(|| format!("`{raw}` has no host"))?;
        check_host(&host, self.settings.allow_private_addresses).map_err(|why| {
            format!("refused: {why}; set web_fetch.allow_private_addresses = true to allow it")
        })?;
        let response = self
            .client()?
            .get(url)
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/*;q=0.9, application/json;q=0.8, */*;q=0.1",
            )
            .send()
            .await
            .map_err(|e| describe(&e, &self.settings))?;
        let status = response.status();
        let final_url = response.url().to_string();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if status.is_redirection() {
            // A redirect reqwest would not follow (to another scheme, or without a target).
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("nowhere");
            return Err(format!(
                "{final_url} redirects to {to}, which web_fetch does not follow"
            ));
        }
        if !status.is_success() {
            return Err(format!("{final_url} answered {status}"));
        }
        let kind = TextKind::of(&content_type).ok_or_else(|| {
            format!(
                "{final_url} is {}, not text; web_fetch reads only text (HTML, Markdown, JSON, ...)",
                if content_type.is_empty() { "of no stated type" } else { &content_type }
            )
        })?;
        let (body, cut) = read_body_at_most(response, self.settings.max_body_bytes)
            .await
            .map_err(|e| describe(&e, &self.settings))?;
        let text = String::from_utf8_lossy(&body).into_owned();
        let text = match kind {
            // Up to half a second of CPU for a large page: not on a runtime thread.
            TextKind::Html => tokio::task::spawn_blocking(move || html_to_markdown(&text))
                .await
                .map_err(|e| format!("the page could not be converted: {e}"))?,
            TextKind::Plain => text,
        };
        let mut out = format!(
            "[{final_url} — {status}, {content_type}]\n\n{}",
            text.trim()
        );
        if cut {
            out.push_str(&format!(
                "\n[...the page was cut at {} bytes]",
                self.settings.max_body_bytes
            ));
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Html,
    Plain,
}

impl TextKind {
    fn of(content_type: &str) -> Option<Self> {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        if mime == "text/html" || mime == "application/xhtml+xml" {
            return Some(Self::Html);
        }
        let texty = mime.starts_with("text/")
            || mime.ends_with("+json")
            || mime.ends_with("+xml")
            || matches!(
                mime,
                "application/json"
                    | "application/xml"
                    | "application/javascript"
                    | "application/x-yaml"
                    | "application/yaml"
                    | "application/toml"
                    | ""
            );
        texty.then_some(Self::Plain)
    }
}

/// HTML as Markdown, without what a reader never sees (scripts, styles, forms); a page
/// nested too deeply or too large is its plain text instead ([`html`]).
pub fn html_to_markdown(html: &str) -> String {
    html::to_markdown(html)
}

/// A request error as the model should read it.
fn describe(e: &reqwest::Error, settings: &WebSettings) -> String {
    use std::error::Error;
    let mut source = e.source();
    while let Some(inner) = source {
        if let Some(refused) = inner.downcast_ref::<Refused>() {
            return format!("refused: {refused}");
        }
        source = inner.source();
    }
    if e.is_timeout() {
        format!("no complete answer within {} s", settings.timeout.as_secs())
    } else if e.is_redirect() {
        format!("the redirects could not be followed: {e}")
    } else if e.is_connect() {
        format!("could not connect: {e}")
    } else {
        format!("the request failed: {e}")
    }
}

#[derive(Deserialize)]
struct Args {
    url: String,
}

#[async_trait::async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> &str {
        "Fetch an http(s) URL and return it as text (HTML as Markdown)."
    }

    fn input_schema(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
        })
    }

    fn rank(&self) -> u32 {
        crate::rank_of("web_fetch")
    }

    async fn execute(
        &self,
        input_json: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: Args =
            serde_json::from_str(input_json).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        let text = self.fetch(&args.url).await.map_err(ToolError::Failed)?;
        Ok(ToolOutput::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_domains_cover_their_subdomains_only() {
        let settings = WebSettings {
            allowed_domains: vec!["docs.rs".into(), "*.python.org".into()],
            ..WebSettings::default()
        };
        assert!(settings.allows("docs.rs"));
        assert!(settings.allows("DOCS.RS."));
        assert!(settings.allows("api.docs.rs"));
        assert!(settings.allows("docs.python.org"));
        assert!(!settings.allows("evildocs.rs"));
        assert!(!settings.allows("docs.rs.evil.com"));
    }

    #[test]
    fn text_types_are_read_and_others_refused() {
        assert_eq!(
            TextKind::of("text/html; charset=utf-8"),
            Some(TextKind::Html)
        );
        assert_eq!(TextKind::of("application/json"), Some(TextKind::Plain));
        assert_eq!(TextKind::of("application/ld+json"), Some(TextKind::Plain));
        assert_eq!(TextKind::of("text/markdown"), Some(TextKind::Plain));
        assert_eq!(TextKind::of("image/png"), None);
        assert_eq!(TextKind::of("application/octet-stream"), None);
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let md = html_to_markdown(
            "<html><head><title>t</title><script>steal()</script></head><body><h1>Title</h1><p>Some <a href=\"https://x.y/\">link</a>.</p><ul><li>one</li></ul></body></html>",
        );
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("[link](https://x.y/)"), "{md}");
        assert!(md.contains("one"), "{md}");
        assert!(!md.contains("steal"), "{md}");
    }

    #[test]
    fn the_host_is_what_grants_are_keyed_on() {
        let input = serde_json::json!({"url": "https://Docs.RS/tokio"});
        assert_eq!(target_host(&input).as_deref(), Some("docs.rs"));
        assert_eq!(target_host(&serde_json::json!({"url": "nope"})), None);
    }
}
