//! What reading ahead did for a session and what it cost: accepted and discarded
//! speculations, the time saved, and the background tokens by kind, next to the main
//! turns' tokens. Shown by `/stats`, as one line when saki exits, and after
//! `saki exec --follow-ups`.

use saki_llm_worker::{BackgroundBreakdown, TokenCount};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadAheadStats {
    /// Speculations whose result was used.
    pub accepted: u32,
    /// Speculations that ran and were not used (dismissed, a boundary, failed, not
    /// applicable, refused by a hook, or still waiting when the session ended).
    pub discarded: u32,
    /// How long the accepted speculations ran: the waits skipped.
    pub saved_ms: u64,
    /// Background tokens this session.
    pub background: BackgroundBreakdown,
    /// The main turns' tokens, for comparison.
    pub main: TokenCount,
}

/// `950`, `12.3k`, `4.1M`.
pub fn tokens_label(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn count_line(label: &str, count: &TokenCount) -> String {
    format!(
        "  {label:<22} {:>3} requests · {} in ({} cached) · {} out",
        count.requests,
        tokens_label(count.input_tokens),
        tokens_label(count.cached_input_tokens),
        tokens_label(count.output_tokens)
    )
}

impl ReadAheadStats {
    /// `read-ahead: 3 accepted, 2 discarded, ~41 s saved, 12.3k tokens`.
    pub fn summary_line(&self) -> String {
        format!(
            "read-ahead: {} accepted, {} discarded, ~{} s saved, {} tokens",
            self.accepted,
            self.discarded,
            (self.saved_ms + 500) / 1000,
            tokens_label(self.background.total().tokens())
        )
    }

    /// The summary line, then the background tokens by kind and the main turns'.
    pub fn details(&self) -> String {
        let b = &self.background;
        let mut lines = vec![
            self.summary_line(),
            count_line("suggestions", &b.suggestion),
            count_line("speculations", &b.speculation),
            count_line("pipelined suggestions", &b.pipelined_suggestion),
            count_line("compaction summaries", &b.compaction),
        ];
        // Only small local models' sessions make them: no line of zeros for the rest.
        if b.rewrite.requests > 0 {
            lines.push(count_line("file rewrites", &b.rewrite));
        }
        lines.push(count_line("background, total", &b.total()));
        lines.push(count_line("main turns", &self.main));
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_reads_like_the_issue_says() {
        let mut stats = ReadAheadStats {
            accepted: 3,
            discarded: 2,
            saved_ms: 40_700,
            ..Default::default()
        };
        stats.background.speculation = TokenCount {
            requests: 6,
            input_tokens: 12_000,
            cached_input_tokens: 10_000,
            output_tokens: 300,
        };
        assert_eq!(
            stats.summary_line(),
            "read-ahead: 3 accepted, 2 discarded, ~41 s saved, 12.3k tokens"
        );
        let details = stats.details();
        assert!(details.contains("speculations"), "{details}");
        assert!(details.contains("6 requests · 12.0k in (10.0k cached) · 300 out"));
        assert_eq!(tokens_label(4_100_000), "4.1M");
    }

    #[test]
    fn file_rewrites_are_a_line_only_when_there_were_some() {
        let mut stats = ReadAheadStats::default();
        assert!(!stats.details().contains("file rewrites"));
        stats.background.rewrite.requests = 2;
        stats.background.rewrite.output_tokens = 40;
        let details = stats.details();
        assert!(details.contains("file rewrites"), "{details}");
        assert!(
            details.contains("2 requests · 0 in (0 cached) · 40 out"),
            "{details}"
        );
    }
}
