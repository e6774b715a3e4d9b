//! Secrets recognised by their value, whatever the variable is called.
//!
//! `DATABASE_URL=postgres://app:hunter2@db/prod` or `GH=ghp_…` pass every rule on names.
//! A value is taken for a secret when it holds a URL with a password in it
//! (`scheme://user:password@host`) or a token of a well-known shape: these shapes are
//! what the issuers made them to be, so they are recognised without guessing at
//! entropy, and a false match costs a variable that `set` can bring back.

/// Token prefixes, with the characters the rest is made of and the least length of the
/// rest. Matched where a word starts (not inside `task-…`), case-sensitively.
const TOKEN_PREFIXES: &[(&str, Charset, usize)] = &[
    // OpenAI (`sk-`, `sk-proj-`) and Anthropic (`sk-ant-api03-`).
    ("sk-", Charset::Dashed, 20),
    // Stripe.
    ("sk_live_", Charset::Dashed, 16),
    ("rk_live_", Charset::Dashed, 16),
    // GitHub: personal, OAuth, user-to-server, server-to-server, refresh, fine-grained.
    ("ghp_", Charset::Alnum, 30),
    ("gho_", Charset::Alnum, 30),
    ("ghu_", Charset::Alnum, 30),
    ("ghs_", Charset::Alnum, 30),
    ("ghr_", Charset::Alnum, 30),
    ("github_pat_", Charset::Dashed, 30),
    // GitLab.
    ("glpat-", Charset::Dashed, 20),
    // Slack bot, user, app-level, refresh and legacy tokens.
    ("xoxb-", Charset::Dashed, 10),
    ("xoxp-", Charset::Dashed, 10),
    ("xoxa-", Charset::Dashed, 10),
    ("xoxr-", Charset::Dashed, 10),
    ("xoxs-", Charset::Dashed, 10),
    ("xapp-", Charset::Dashed, 10),
    // Hugging Face, npm, PyPI, Google API keys.
    ("hf_", Charset::Alnum, 30),
    ("npm_", Charset::Alnum, 36),
    ("pypi-", Charset::Dashed, 50),
    ("AIza", Charset::Dashed, 35),
];

/// AWS access key ids: one of these, then exactly 16 upper-case letters or digits.
const AWS_PREFIXES: &[&str] = &["AKIA", "ASIA", "ABIA", "ACCA"];

#[derive(Debug, Clone, Copy)]
enum Charset {
    /// Letters and digits.
    Alnum,
    /// Letters, digits, `_` and `-`.
    Dashed,
}

impl Charset {
    fn has(self, b: u8) -> bool {
        b.is_ascii_alphanumeric() || matches!(self, Charset::Dashed) && matches!(b, b'_' | b'-')
    }
}

/// Whether `value` holds a credential: a URL with a password, a token of a known shape,
/// or a private key.
pub fn secret_value(value: &str) -> bool {
    url_with_password(value) || has_token(value) || value.contains("PRIVATE KEY-----")
}

/// `scheme://user:password@…` anywhere in `value`, the password not empty.
fn url_with_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        // The authority ends at the path, query, fragment or a blank.
        let end = rest
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        authority
            .rfind('@')
            .and_then(|userinfo_end| authority[..userinfo_end].split_once(':'))
            .is_some_and(|(_, password)| !password.is_empty())
    })
}

/// A token of one of [`TOKEN_PREFIXES`]' shapes, or an AWS access key id, where a word
/// starts in `value`.
fn has_token(value: &str) -> bool {
    (0..value.len()).any(|at| token_at(value.as_bytes(), at).is_some())
}

/// The length of the token that starts at byte `at`, if one does (see [`has_token`]).
fn token_at(bytes: &[u8], at: usize) -> Option<usize> {
    if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
        return None;
    }
    let rest = &bytes[at..];
    let prefixed = TOKEN_PREFIXES.iter().find_map(|(prefix, charset, least)| {
        let body = rest.strip_prefix(prefix.as_bytes())?;
        let len = body.iter().take_while(|b| charset.has(**b)).count();
        (len >= *least).then_some(prefix.len() + len)
    });
    prefixed.or_else(|| {
        AWS_PREFIXES.iter().find_map(|prefix| {
            let body = rest.strip_prefix(prefix.as_bytes())?;
            let id = body
                .iter()
                .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                .count();
            (id == 16 && !body.get(16).is_some_and(u8::is_ascii_alphanumeric))
                .then_some(prefix.len() + 16)
        })
    })
}

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// `text` with every secret in it replaced by [`REDACTED`]: each of `known` (values saki
/// knows are keys; ones shorter than 8 bytes are ignored, they would match ordinary
/// words), and every token of a well-known shape ([`secret_value`]'s).
pub fn redact(text: &str, known: &[String]) -> String {
    let mut out = text.to_owned();
    for key in known.iter().filter(|k| k.len() >= 8) {
        if out.contains(key.as_str()) {
            out = out.replace(key.as_str(), REDACTED);
        }
    }
    let bytes = out.as_bytes();
    let mut redacted = String::with_capacity(out.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        match token_at(bytes, at) {
            // Tokens are ASCII, so both ends are character boundaries.
            Some(len) => {
                redacted.push_str(&out[copied..at]);
                redacted.push_str(REDACTED);
                at += len;
                copied = at;
            }
            None => at += 1,
        }
    }
    redacted.push_str(&out[copied..]);
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_and_tokens_are_redacted() {
        let known = vec!["my-own-key-123456".to_owned(), "short".to_owned()];
        let text = "key my-own-key-123456, token ghp_abcdefghijklmnopqrstuvwxyz0123456789! short é";
        assert_eq!(
            redact(text, &known),
            "key [REDACTED], token [REDACTED]! short é"
        );
        assert_eq!(redact("task-sk-abc", &known), "task-sk-abc");
    }

    #[test]
    fn credentials_are_recognised_by_their_value() {
        for value in [
            "postgres://user:password@host/db",
            "mysql://root:p%40ss@127.0.0.1:3306",
            "https://x-access-token:abc@github.com/o/r.git",
            "redis://:hunter2@cache:6379/0",
            "a list: http://ok/ https://u:p@h",
            "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "Bearer sk-abcdefghijklmnopqrstuvwx",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "xoxb-123456789012-abcdefghijkl",
            "AKIAIOSFODNN7EXAMPLE",
            "key=ASIAIOSFODNN7EXAMPLE;",
            "glpat-abcdefghijklmnopqrst",
            "hf_abcdefghijklmnopqrstuvwxyz0123456",
            "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn",
        ] {
            assert!(secret_value(value), "{value}");
        }
    }

    #[test]
    fn ordinary_values_are_not_secrets() {
        for value in [
            "",
            "/usr/local/bin:/usr/bin",
            "https://example.com/path?x=1",
            "https://user@example.com/repo.git",
            "postgres://user:@host/db",
            "ssh://git@github.com:22/o/r",
            "http://proxy:3128",
            "mailto:someone@example.com",
            "task-runner-abcdefghijklmnopqrstuvwxyz",
            "sk-short",
            "ghp_short",
            "AKIAIOSFODNN7EXAMPLEX",
            "xterm-256color",
            "en_US.UTF-8",
        ] {
            assert!(!secret_value(value), "{value}");
        }
    }
}
