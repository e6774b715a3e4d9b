//! The HTML transcript: one self-contained file. It fetches nothing (no script, no link,
//! no image; a Content-Security-Policy forbids any load but the inline style), and every
//! piece of text is escaped, above all what came from the model or a tool: the model's
//! Markdown is shown as written, in pre-wrapped text, so no markup in it ever reaches the
//! browser as markup.

use super::blocks::{long, status_label, Block, Shown};
use super::Summary;

/// Escapes text for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than line breaks and tabs show as nothing useful.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;\
padding:0 1rem;color:#1d1d1f;background:#fff}pre{white-space:pre-wrap;word-break:break-word;\
background:#f5f5f7;padding:.6rem;border-radius:6px;font:13px/1.4 ui-monospace,monospace}\
.prompt{border-left:4px solid #0a66c2;padding-left:.8rem;margin-top:2rem}\
.answer pre{background:none;font:inherit;padding:0}.spec{color:#8a5a00;font-size:.85em}\
.tool{border:1px solid #ddd;border-radius:6px;padding:.4rem .8rem;margin:.6rem 0}\
.note,.usage{color:#666;font-size:.85em}.del{color:#b00}.add{color:#070}\
summary{cursor:pointer;color:#444}";

/// `text` in a `<pre>`, folded under `summary` when long (or always, with `fold`).
fn pre(out: &mut String, summary: &str, class: &str, text: &str, fold: bool) {
    let body = format!("<pre class=\"{class}\">{}</pre>", escape(text));
    if fold || long(text) {
        out.push_str(&format!(
            "<details><summary>{} ({} lines)</summary>{body}</details>\n",
            escape(summary),
            text.lines().count()
        ));
    } else {
        out.push_str(&body);
        out.push('\n');
    }
}

/// A diff with its added and removed lines coloured.
fn diff(out: &mut String, text: &str) {
    let mut body = String::from("<pre class=\"diff\">");
    for line in text.lines() {
        let class = match line.as_bytes().first() {
            Some(b'+') => "add",
            Some(b'-') => "del",
            _ => "ctx",
        };
        body.push_str(&format!(
            "<span class=\"{class}\">{}</span>\n",
            escape(line)
        ));
    }
    body.push_str("</pre>");
    if long(text) {
        out.push_str(&format!(
            "<details><summary>diff ({} lines)</summary>{body}</details>\n",
            text.lines().count()
        ));
    } else {
        out.push_str(&body);
    }
}

pub fn render(summary: &Summary, shown: &[Shown]) -> String {
    let mut out =
        String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n",
    );
    out.push_str(&format!(
        "<title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(&summary.title)
    ));
    out.push_str(&format!(
        "<h1>{}</h1>\n<p class=\"note\">session {} · {} · {} / {} · started {}</p>\n",
        escape(&summary.title),
        escape(&summary.id),
        escape(&summary.workspace),
        escape(&summary.provider),
        escape(&summary.model),
        escape(&summary.started)
    ));
    let mut turn = 0;
    for Shown { block, speculated } in shown {
        let mark = if *speculated {
            " <span class=\"spec\">read ahead</span>"
        } else {
            ""
        };
        match block {
            Block::Prompt(text) => {
                turn += 1;
                out.push_str(&format!(
                    "<section class=\"prompt\"><h2>Prompt {turn}{mark}</h2>"
                ));
                pre(&mut out, "prompt", "user", text, false);
                out.push_str("</section>\n");
            }
            Block::Context(text) => pre(&mut out, "context added by saki", "ctx", text, true),
            Block::Answer(text) => {
                out.push_str(&format!("<div class=\"answer\">{mark}"));
                pre(&mut out, "answer", "md", text, false);
                out.push_str("</div>\n");
            }
            Block::Thinking(text) => pre(&mut out, "thinking", "thinking", text, true),
            Block::Tool(tool) => {
                let status = tool
                    .result
                    .as_ref()
                    .map_or("no result", |(s, _)| status_label(*s));
                out.push_str(&format!(
                    "<div class=\"tool\"><b>{}</b> — {status}{mark}",
                    escape(&tool.name)
                ));
                pre(&mut out, "arguments", "args", &tool.arguments, false);
                if let Some(d) = &tool.diff {
                    diff(&mut out, d);
                }
                if let Some((_, result)) = &tool.result {
                    pre(&mut out, "result", "result", result, false);
                }
                out.push_str("</div>\n");
            }
            Block::Image(path) => {
                out.push_str(&format!("<p class=\"note\">image: {}</p>\n", escape(path)))
            }
            Block::Note(text) => out.push_str(&format!("<p class=\"note\">{}</p>\n", escape(text))),
            Block::Usage(usage) => {
                let cost = summary
                    .turn_cost(usage)
                    .map(|c| format!(" · {}", saki_llm_worker::pricing::usd_label(c)))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "<p class=\"usage\">tokens: {}{}</p>\n",
                    escape(&super::blocks::usage_label(usage, summary.wire)),
                    escape(&cost)
                ));
            }
        }
    }
    out.push_str(&format!(
        "<hr><p><b>Usage:</b> {}</p>\n</body></html>\n",
        escape(&summary.totals_line())
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_that_could_be_markup_is_escaped() {
        assert_eq!(
            escape("</script><img src=x onerror='a()'>&\"\u{1b}"),
            "&lt;/script&gt;&lt;img src=x onerror=&#39;a()&#39;&gt;&amp;&quot;\u{FFFD}"
        );
    }
}
