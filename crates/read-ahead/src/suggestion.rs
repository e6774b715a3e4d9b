//! The prompt-suggestion prompt, reply parsing and the filter that decides whether a
//! predicted next prompt is worth showing.
//!
//! The filter is a fixed list of rules applied in order; the first that matches names
//! the [`SuppressReason`]. Rules work on the trimmed text, with hand-written matching
//! (no regex) so nothing here can fail at run time.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Sent to the (often small, local) model after a turn. Lean on purpose: every token
/// is paid on every turn, and small models follow short lists better than prose.
pub const SUGGESTION_PROMPT: &str = "\
[Suggestion mode] Do not answer or continue the work. Predict the next message the person will type to you.

- Write it the way they would: their words and style, 2 to 12 words.
- If your last answer told them what to type next (\"type X to ...\"), suggest exactly that.
- If the next step is not obvious from what they asked, reply with nothing at all.
- Never suggest: praise or thanks, a question, your own voice (\"Let me...\", \"I'll...\"), an idea they did not ask for, more than one sentence.

Good: \"run the tests\", \"commit this\", \"yes\".
Reply with only the message: no quotes, no explanation.";

/// [`SUGGESTION_PROMPT`], plus the person's own slash commands when they have any: a
/// suggestion may be one of them (and only one of them: a made-up `/name` would end in
/// "unknown command").
pub fn suggestion_prompt(commands: &[String]) -> String {
    if commands.is_empty() {
        return SUGGESTION_PROMPT.to_owned();
    }
    let list: Vec<String> = commands.iter().map(|c| format!("/{c}")).collect();
    format!(
        "{SUGGESTION_PROMPT}\nTheir slash commands (a suggestion may be one of these, no other): {}.",
        list.join(", ")
    )
}

/// Structured-output schema for providers that support it: `{"suggestion": "..."}`,
/// an empty string meaning "nothing to suggest".
pub fn suggestion_json_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "suggestion": {
                "type": "string",
                "description": "The person's likely next message (2-12 words), or an empty string when it is not obvious."
            }
        },
        "required": ["suggestion"],
        "additionalProperties": false
    })
}

/// The suggestion text in a model reply: plain text, or the JSON object of
/// [`suggestion_json_schema`] (also inside a code fence), with surrounding quotes and
/// whitespace removed. A JSON object without a string `suggestion` gives "".
pub fn parse_suggestion_reply(text: &str) -> String {
    let body = strip_code_fence(text.trim());
    if body.starts_with('{') {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(body) {
            return match map.get("suggestion") {
                Some(Value::String(s)) => strip_quotes(s).to_owned(),
                _ => String::new(),
            };
        }
    }
    strip_quotes(body).to_owned()
}

fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    // The opening fence line may carry a language tag (```json).
    let rest = rest.split_once('\n').map_or("", |(_, body)| body);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

fn strip_quotes(mut text: &str) -> &str {
    const PAIRS: [(char, char); 6] = [
        ('"', '"'),
        ('\'', '\''),
        ('`', '`'),
        ('\u{201C}', '\u{201D}'),
        ('\u{2018}', '\u{2019}'),
        ('\u{300C}', '\u{300D}'),
    ];
    loop {
        text = text.trim();
        let stripped = PAIRS.iter().find_map(|&(open, close)| {
            let inner = text.strip_prefix(open)?.strip_suffix(close)?;
            Some(inner)
        });
        match stripped {
            Some(inner) => text = inner,
            None => return text,
        }
    }
}

/// Why a suggestion was not shown. Serialized in snake_case for telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuppressReason {
    Empty,
    Done,
    MetaText,
    MetaWrapped,
    ErrorMessage,
    PrefixedLabel,
    TooFewWords,
    TooManyWords,
    TooLong,
    MultipleSentences,
    HasFormatting,
    Evaluative,
    AiVoice,
    /// The suggestion request's own instructions sent back ("no quotes, no explanation").
    EchoedPrompt,
    /// A bare "yes" (or "ok", "no", ...) when the last answer asked nothing.
    NothingAsked,
    /// Not a filter: fewer than two assistant messages so far.
    TooEarly,
    /// Not a filter: plan mode makes no suggestions.
    PlanMode,
    /// Not a filter: the turn did not end well.
    TurnFailed,
}

impl SuppressReason {
    /// Every filter reason, in the order the filter checks them.
    pub const ALL: [SuppressReason; 15] = [
        SuppressReason::Empty,
        SuppressReason::Done,
        SuppressReason::MetaText,
        SuppressReason::MetaWrapped,
        SuppressReason::ErrorMessage,
        SuppressReason::PrefixedLabel,
        SuppressReason::TooFewWords,
        SuppressReason::TooManyWords,
        SuppressReason::TooLong,
        SuppressReason::MultipleSentences,
        SuppressReason::HasFormatting,
        SuppressReason::Evaluative,
        SuppressReason::AiVoice,
        SuppressReason::EchoedPrompt,
        SuppressReason::NothingAsked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SuppressReason::Empty => "empty",
            SuppressReason::Done => "done",
            SuppressReason::MetaText => "meta_text",
            SuppressReason::MetaWrapped => "meta_wrapped",
            SuppressReason::ErrorMessage => "error_message",
            SuppressReason::PrefixedLabel => "prefixed_label",
            SuppressReason::TooFewWords => "too_few_words",
            SuppressReason::TooManyWords => "too_many_words",
            SuppressReason::TooLong => "too_long",
            SuppressReason::MultipleSentences => "multiple_sentences",
            SuppressReason::HasFormatting => "has_formatting",
            SuppressReason::Evaluative => "evaluative",
            SuppressReason::AiVoice => "ai_voice",
            SuppressReason::EchoedPrompt => "echoed_prompt",
            SuppressReason::NothingAsked => "nothing_asked",
            SuppressReason::TooEarly => "too_early",
            SuppressReason::PlanMode => "plan_mode",
            SuppressReason::TurnFailed => "turn_failed",
        }
    }
}

impl std::fmt::Display for SuppressReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Single words that are complete prompts on their own.
pub const ALLOWED_SINGLE_WORDS: [&str; 17] = [
    "yes", "yeah", "yep", "yea", "yup", "sure", "ok", "okay", "push", "commit", "deploy", "stop",
    "continue", "check", "exit", "quit", "no",
];

const ERROR_PREFIXES: [&str; 5] = [
    "api error:",
    "prompt is too long",
    "request timed out",
    "invalid api key",
    "image was too large",
];

const EVALUATIVE: [&str; 18] = [
    "thanks",
    "thank you",
    "looks good",
    "sounds good",
    "that works",
    "that worked",
    "that's all",
    "nice",
    "great",
    "perfect",
    "makes sense",
    "awesome",
    "excellent",
    "lgtm",
    "cool",
    "wonderful",
    "amazing",
    "brilliant",
];

/// "sure" alone is a fine answer; "Sure, ..." is the assistant talking.
const AI_VOICE_PREFIXES: [&str; 24] = [
    "let me",
    "i'll",
    "i've",
    "i'm",
    "i will",
    "i can",
    "i would",
    "i think",
    "i notice",
    "here's",
    "here is",
    "here are",
    "that's",
    "this is",
    "this will",
    "you can",
    "you should",
    "you could",
    "sure,",
    "sure!",
    "of course",
    "certainly",
    "absolutely",
    "great question",
];

const MAX_WORDS: usize = 12;
const MAX_CJK_CHARS: usize = 30;
const MIN_CJK_CHARS: usize = 2;
const MAX_CHARS: usize = 100;

/// The trimmed suggestion if it passes every rule, else the first rule it breaks.
pub fn filter_suggestion(text: &str) -> Result<String, SuppressReason> {
    let text = text.trim();
    match suppress_reason(text) {
        Some(reason) => Err(reason),
        None => Ok(text.to_owned()),
    }
}

fn suppress_reason(text: &str) -> Option<SuppressReason> {
    if text.is_empty() {
        return Some(SuppressReason::Empty);
    }
    // Models write typographic apostrophes as often as ASCII ones.
    let lower = text.to_lowercase().replace('\u{2019}', "'");
    let cjk = text.chars().any(is_cjk);
    let units = if cjk {
        text.chars().filter(|c| !c.is_whitespace()).count()
    } else {
        text.split_whitespace().count()
    };

    if lower == "done" {
        return Some(SuppressReason::Done);
    }
    if is_meta_text(&lower) {
        return Some(SuppressReason::MetaText);
    }
    if (text.starts_with('(') && text.ends_with(')'))
        || (text.starts_with('[') && text.ends_with(']'))
    {
        return Some(SuppressReason::MetaWrapped);
    }
    if ERROR_PREFIXES.iter().any(|p| lower.starts_with(p)) {
        return Some(SuppressReason::ErrorMessage);
    }
    if has_label_prefix(text) {
        return Some(SuppressReason::PrefixedLabel);
    }
    let too_few = if cjk {
        units < MIN_CJK_CHARS
    } else {
        units < 2 && !text.starts_with('/') && !ALLOWED_SINGLE_WORDS.contains(&lower.as_str())
    };
    if too_few {
        return Some(SuppressReason::TooFewWords);
    }
    if units > if cjk { MAX_CJK_CHARS } else { MAX_WORDS } {
        return Some(SuppressReason::TooManyWords);
    }
    if text.chars().count() >= MAX_CHARS {
        return Some(SuppressReason::TooLong);
    }
    if has_sentence_break(text) {
        return Some(SuppressReason::MultipleSentences);
    }
    if text.contains(['\n', '\r', '*']) {
        return Some(SuppressReason::HasFormatting);
    }
    if EVALUATIVE.iter().any(|p| contains_phrase(&lower, p)) {
        return Some(SuppressReason::Evaluative);
    }
    if AI_VOICE_PREFIXES
        .iter()
        .any(|p| lower.starts_with(p) && ends_at_boundary(&lower, p.len()))
    {
        return Some(SuppressReason::AiVoice);
    }
    if echoes_instructions(&lower) {
        return Some(SuppressReason::EchoedPrompt);
    }
    None
}

/// Whether `lower` is two or more words of [`SUGGESTION_PROMPT`]'s own instructions, in
/// order (its quoted examples left out: "run the tests" may well be the next step). A
/// small model asked for the next prompt sometimes answers with the request's words.
fn echoes_instructions(lower: &str) -> bool {
    let said = words_of(lower);
    if said.len() < 2 {
        return false;
    }
    let mut instructions = String::new();
    for (i, part) in SUGGESTION_PROMPT.split('"').enumerate() {
        // Even parts are outside quotes.
        if i % 2 == 0 {
            instructions.push_str(part);
            instructions.push(' ');
        }
    }
    let prompt = words_of(&instructions.to_lowercase());
    prompt.windows(said.len()).any(|w| w == said.as_slice())
}

fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !is_word_char(c) && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Single words that only answer a question or an offer.
const REPLIES: [&str; 11] = [
    "yes", "yeah", "yep", "yea", "yup", "sure", "ok", "okay", "no", "nope", "continue",
];

/// [`SuppressReason::NothingAsked`] when `suggestion` is a bare reply ("yes") and
/// `last_answer`, the assistant's last text, asks nothing (no question mark).
pub fn reply_to_nothing(suggestion: &str, last_answer: &str) -> Option<SuppressReason> {
    let bare = suggestion
        .trim()
        .trim_matches(|c: char| !is_word_char(c))
        .to_lowercase();
    (REPLIES.contains(&bare.as_str()) && !last_answer.contains(['?', '\u{ff1f}']))
        .then_some(SuppressReason::NothingAsked)
}

fn is_meta_text(lower: &str) -> bool {
    let bare = lower.trim_matches(|c: char| !is_word_char(c));
    lower == "nothing found"
        || lower == "nothing found."
        || lower.starts_with("nothing to suggest")
        || lower.starts_with("no suggestion")
        || bare == "silence"
        || [
            "silence is",
            "stay silent",
            "stays silent",
            "staying silent",
        ]
        .iter()
        .any(|p| contains_phrase(lower, p))
}

/// `^\w+:\s` — "Suggestion: run it", "User: yes".
fn has_label_prefix(text: &str) -> bool {
    let word_len: usize = text
        .chars()
        .take_while(|&c| is_word_char(c))
        .map(char::len_utf8)
        .sum();
    let mut rest = text[word_len..].chars();
    word_len > 0 && rest.next() == Some(':') && rest.next().is_some_and(char::is_whitespace)
}

/// `[.!?]\s+[A-Z]`
fn has_sentence_break(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars.iter().enumerate().any(|(i, c)| {
        if !matches!(c, '.' | '!' | '?') {
            return false;
        }
        let spaces = chars[i + 1..]
            .iter()
            .take_while(|c| c.is_whitespace())
            .count();
        spaces > 0
            && chars
                .get(i + 1 + spaces)
                .is_some_and(char::is_ascii_uppercase)
    })
}

/// Whole-word occurrence of `phrase` in `text` (both lowercase).
fn contains_phrase(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(start, _)| {
        let before_ok = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word_char(c));
        before_ok && ends_at_boundary(text, start + phrase.len())
    })
}

/// No word continues across byte offset `end` (a phrase ending in punctuation always
/// ends at a boundary).
fn ends_at_boundary(text: &str, end: usize) -> bool {
    let last = text[..end].chars().next_back();
    let next = text[end..].chars().next();
    !(last.is_some_and(is_word_char) && next.is_some_and(is_word_char))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Han, kana and Hangul: scripts written without spaces between words (or, for
/// Hangul, with much shorter words), so length is counted in characters.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF
        | 0x3040..=0x30FF
        | 0x3130..=0x318F
        | 0x31F0..=0x31FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF
        | 0xFF66..=0xFF9F
        | 0x20000..=0x2FA1F)
}

#[cfg(test)]
mod tests;
