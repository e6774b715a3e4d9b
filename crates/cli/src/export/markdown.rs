//! The Markdown transcript: answers as the model wrote them (Markdown), everything else
//! in fences long enough that no content closes them, long outputs and thinking folded in
//! `<details>` (GitHub and most viewers fold them).

use super::blocks::{long, status_label, Block, Shown};
use super::Summary;

/// A fence of backticks longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

fn code(out: &mut String, lang: &str, text: &str) {
    let f = fence(text);
    out.push_str(&format!(
        "{f}{lang}\n{}\n{f}\n",
        text.trim_end_matches('\n')
    ));
}

/// `text` in a fence, folded under `summary` when long (or always, with `fold`).
fn block(out: &mut String, summary: &str, lang: &str, text: &str, fold: bool) {
    if fold || long(text) {
        out.push_str(&format!(
            "<details><summary>{} ({} lines)</summary>\n\n",
            summary,
            text.lines().count()
        ));
        code(out, lang, text);
        out.push_str("\n</details>\n\n");
    } else {
        out.push_str(&format!("{summary}:\n\n"));
        code(out, lang, text);
        out.push('\n');
    }
}

/// A line of text that Markdown shows as written.
fn plain(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

pub fn render(summary: &Summary, shown: &[Shown]) -> String {
    let mut out = format!("# {}\n\n", plain(&summary.title));
    out.push_str(&format!(
        "- session: `{}`\n- workspace: `{}`\n- model: {} / {}\n- started: {}\n\n",
        summary.id, summary.workspace, summary.provider, summary.model, summary.started
    ));
    let mut turn = 0;
    for Shown {
        block: b,
        speculated,
    } in shown
    {
        let mark = if *speculated { " *(read ahead)*" } else { "" };
        match b {
            Block::Prompt(text) => {
                turn += 1;
                out.push_str(&format!("---\n\n## Prompt {turn}{mark}\n\n"));
                for line in text.lines() {
                    out.push_str(&format!("> {}\n", plain(line)));
                }
                out.push('\n');
            }
            Block::Context(text) => block(&mut out, "context added by saki", "", text, true),
            Block::Answer(text) => {
                if *speculated {
                    out.push_str("*Answer (read ahead, accepted):*\n\n");
                }
                out.push_str(text.trim_end());
                out.push_str("\n\n");
            }
            Block::Thinking(text) => block(&mut out, "thinking", "", text, true),
            Block::Tool(tool) => {
                let status = tool
                    .result
                    .as_ref()
                    .map_or("no result", |(s, _)| status_label(*s));
                out.push_str(&format!(
                    "**Tool `{}`** — {status}{mark}\n\n",
                    plain(&tool.name)
                ));
                code(&mut out, "json", &tool.arguments);
                out.push('\n');
                if let Some(diff) = &tool.diff {
                    block(&mut out, "diff", "diff", diff, false);
                }
                if let Some((_, result)) = &tool.result {
                    block(&mut out, "result", "", result, false);
                }
            }
            Block::Image(path) => out.push_str(&format!("*image: `{}`*\n\n", plain(path))),
            Block::Note(text) => out.push_str(&format!("*{}*\n\n", plain(text))),
            Block::Usage(usage) => {
                let label = super::blocks::usage_label(usage, summary.wire);
                let cost = summary
                    .turn_cost(usage)
                    .map(|c| format!(" · {}", saki_llm_worker::pricing::usd_label(c)))
                    .unwrap_or_default();
                out.push_str(&format!("<sub>tokens: {label}{cost}</sub>\n\n"));
            }
        }
    }
    out.push_str(&format!("---\n\n**Usage:** {}\n", summary.totals_line()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outlast_the_backticks_inside() {
        assert_eq!(fence("a ``` b"), "````");
        assert_eq!(fence("plain"), "```");
        let mut out = String::new();
        code(&mut out, "", "x\n````\ny");
        assert!(
            out.starts_with("`````\n") && out.ends_with("\n`````\n"),
            "{out}"
        );
    }

    #[test]
    fn long_results_fold() {
        let mut out = String::new();
        block(&mut out, "result", "", &"line\n".repeat(100), false);
        assert!(out.starts_with("<details><summary>result (100 lines)"));
        let mut out = String::new();
        block(&mut out, "result", "", "short", false);
        assert!(out.starts_with("result:"));
    }
}
