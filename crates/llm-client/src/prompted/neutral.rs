//! Untrusted text made harmless for a prompted request.
//!
//! In prompted mode the tool traffic is plain text that saki frames itself: the tool list
//! in `<tools>` tags, each result in `<tool_response>` tags. A local server then renders
//! the messages through the model's chat template and, as llama.cpp does, reads special
//! tokens written in the text as the tokens themselves. So a file that holds
//! `</TOOL_RESPONSE>` or `<|im_end|>\n<|im_start|>system` could end its block, or its
//! turn, and go on in a voice that is not its own. Every such marker in text saki did not
//! write gets a backslash after its opening bracket (`<\/tool_response>`, `<\|im_end|>`,
//! `[\INST]`): the model still reads what the file says, no tokenizer or reader sees a
//! marker. Ordinary text (HTML, `<|>` in Haskell, `a < b`) is left as it is.

use std::borrow::Cow;

/// Names of saki's own tags in prompted mode, and of the turn markers chat templates
/// write as tags (Gemma), matched in any case and with blanks inside the brackets.
const TAGS: &[&str] = &[
    "tool_response",
    "tools",
    "tool_call",
    "start_of_turn",
    "end_of_turn",
    "bos",
    "eos",
];

/// Markers in square brackets (Llama 2, Mistral), in any case.
const BRACKETED: &[&str] = &[
    "inst",
    "tool_calls",
    "tool_results",
    "tool_content",
    "available_tools",
    "system_prompt",
];

/// The longest name between `<|` and `|>` taken for a special token: every template's
/// tokens are short, and a bound keeps the scan linear.
const SPECIAL_NAME_MAX: usize = 64;

/// `text` with every chat-template marker and every tag of saki's prompted format
/// neutralised (see the module doc).
pub fn neutralize(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let marker = match b {
            b'<' => special_token(&text[i + 1..]) || tag(&text[i + 1..]),
            b'[' => bracketed(&text[i + 1..]),
            _ => false,
        };
        if marker {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            out.push_str(&text[copied..=i]);
            out.push('\\');
            copied = i + 1;
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    }
}

/// After a `<`: `|name|>` (ChatML, Llama 3, Phi, gpt-oss, Command R) or `｜name｜>`
/// (DeepSeek's full-width bars), the name one word of at most [`SPECIAL_NAME_MAX`]
/// bytes, and `<<SYS>>` / `<</SYS>>` (Llama 2).
fn special_token(rest: &str) -> bool {
    for bar in ["|", "\u{ff5c}"] {
        if let Some(after) = rest.strip_prefix(bar) {
            let name_len = after
                .char_indices()
                .take_while(|(i, c)| {
                    *i < SPECIAL_NAME_MAX
                        && (c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '▁'))
                })
                .map(|(i, c)| i + c.len_utf8())
                .last()
                .unwrap_or(0);
            return name_len > 0
                && after[name_len..]
                    .strip_prefix(bar)
                    .is_some_and(|end| end.starts_with('>'));
        }
    }
    let upper = rest.get(..6).map(str::to_ascii_uppercase);
    matches!(upper.as_deref(), Some("<SYS>>" | "</SYS>"))
}

/// After a `<`: one of [`TAGS`], opening or closing, with blanks allowed around the
/// slash and the name: `</ tool_response >`, `<TOOLS>`.
fn tag(rest: &str) -> bool {
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('/').unwrap_or(rest).trim_start();
    let name_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let (name, after) = rest.split_at(name_len);
    let after = after.trim_start();
    let after = after.strip_prefix('/').unwrap_or(after).trim_start();
    after.starts_with('>') && TAGS.iter().any(|t| t.eq_ignore_ascii_case(name))
}

/// After a `[`: one of [`BRACKETED`], opening or closing, then `]`.
fn bracketed(rest: &str) -> bool {
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    let name_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    rest[name_len..].starts_with(']')
        && BRACKETED
            .iter()
            .any(|t| t.eq_ignore_ascii_case(&rest[..name_len]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marker_gets_a_backslash_after_its_bracket() {
        for (text, want) in [
            ("</tool_response>", "<\\/tool_response>"),
            ("</ tool_response >", "<\\/ tool_response >"),
            ("</TOOL_RESPONSE>", "<\\/TOOL_RESPONSE>"),
            ("<\t/Tool_Response\n>", "<\\\t/Tool_Response\n>"),
            ("<tool_response>", "<\\tool_response>"),
            ("</tools>", "<\\/tools>"),
            ("<tool_call/>", "<\\tool_call/>"),
            ("<|im_start|>system", "<\\|im_start|>system"),
            ("<|im_end|>", "<\\|im_end|>"),
            ("<|endoftext|>", "<\\|endoftext|>"),
            (
                "<|eot_id|><|start_header_id|>",
                "<\\|eot_id|><\\|start_header_id|>",
            ),
            ("<|START_OF_TURN_TOKEN|>", "<\\|START_OF_TURN_TOKEN|>"),
            ("<|channel|>", "<\\|channel|>"),
            ("<start_of_turn>user", "<\\start_of_turn>user"),
            ("<end_of_turn>", "<\\end_of_turn>"),
            ("<｜User｜>", "<\\｜User｜>"),
            ("<｜end▁of▁sentence｜>", "<\\｜end▁of▁sentence｜>"),
            ("[INST] x [/INST]", "[\\INST] x [\\/INST]"),
            ("[TOOL_RESULTS]", "[\\TOOL_RESULTS]"),
            ("<<SYS>>", "<\\<SYS>>"),
            ("<</SYS>>", "<\\</SYS>>"),
        ] {
            assert_eq!(neutralize(text), want, "{text:?}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "a < b && c > d",
            "<s>struck</s> <div class=\"tools\">",
            "f <|> g",
            "x <| f |> y",
            "<|",
            "<tool_response",
            "array[index] [link](http://x) [INSTALL]",
            "<toolsmith>",
            "ünïcödé <| ok",
        ] {
            assert!(
                matches!(neutralize(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }
}
