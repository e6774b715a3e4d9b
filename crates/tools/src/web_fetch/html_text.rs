//! A page's text without its markup, for HTML too deep or too large to convert
//! ([`super::html`]): one pass over the bytes, no tree, no recursion, so its cost is
//! linear in the page whatever the page holds. Tags are dropped (those of block
//! elements end a line), comments and what [`SKIPPED`] elements hold are left out, the
//! common character references are decoded, and runs of spaces and blank lines are
//! collapsed.

use std::borrow::Cow;

/// Elements whose content is not text a reader sees.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "iframe", "svg", "template", "head", "title", "textarea",
];

/// Elements that start or end a line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// The text of `html`, as described in the module's documentation.
pub fn plain_text(html: &str) -> String {
    let bytes = html.as_bytes();
    let mut raw = String::with_capacity(html.len() / 2);
    let mut i = 0;
    while i < bytes.len() {
        let Some(lt) = memchr::memchr(b'<', &bytes[i..]) else {
            raw.push_str(&decode(&html[i..]));
            break;
        };
        raw.push_str(&decode(&html[i..i + lt]));
        i += lt;
        let rest = &bytes[i..];
        if rest.starts_with(b"<!--") {
            i = find(bytes, i + 4, b"-->").map_or(bytes.len(), |end| end + 3);
            continue;
        }
        let closing = rest.get(1) == Some(&b'/');
        let name_start = if closing { 2 } else { 1 };
        let name_len = rest[name_start.min(rest.len())..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        let markup = matches!(rest.get(1), Some(b'!' | b'?'));
        if name_len == 0 && !markup && !closing {
            // A `<` that starts no tag is text.
            raw.push('<');
            i += 1;
            continue;
        }
        let name = html[i + name_start..i + name_start + name_len].to_ascii_lowercase();
        let tag_end = memchr::memchr(b'>', rest).map_or(bytes.len(), |k| i + k + 1);
        if !closing && SKIPPED.contains(&name.as_str()) {
            i = end_of_element(bytes, tag_end, &name);
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            raw.push('\n');
        }
        i = tag_end;
    }
    collapse(&raw)
}

/// Where `needle` starts in `bytes` at or after `from`.
fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(bytes.get(from..)?, needle).map(|k| from + k)
}

/// Past the end tag of the element `name` whose content starts at `from` (the page's
/// end when it has none): found by looking for `</name`, whatever the case.
fn end_of_element(bytes: &[u8], from: usize, name: &str) -> usize {
    let mut at = from;
    while let Some(k) = bytes
        .get(at..)
        .and_then(|rest| memchr::memmem::find(rest, b"</"))
    {
        let start = at + k + 2;
        let candidate = bytes.get(start..start + name.len());
        if candidate.is_some_and(|c| c.eq_ignore_ascii_case(name.as_bytes())) {
            return memchr::memchr(b'>', &bytes[start..]).map_or(bytes.len(), |e| start + e + 1);
        }
        at = start;
    }
    bytes.len()
}

/// `text` with the common character references decoded (named ones a page's prose
/// uses, and numeric ones); any other `&` stays as it is.
fn decode(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        // A reference is short: `&` and at most 10 more characters to the `;`.
        let semi = rest.as_bytes().iter().take(12).position(|b| *b == b';');
        let decoded = semi.and_then(|semi| reference(&rest[1..semi]).map(|c| (c, semi)));
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The character a reference names (`amp`, `#233`, `#xE9`).
fn reference(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        _ => return None,
    })
}

/// Each line's runs of white space as one space, lines trimmed, and at most one blank
/// line in a row.
fn collapse(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut blank_run = 0;
    for line in raw.lines() {
        let mut words = line.split_whitespace().peekable();
        if words.peek().is_none() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        for (k, word) in words.enumerate() {
            if k > 0 {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_go_blocks_end_lines_and_hidden_content_is_left_out() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
            <h1>Title</h1><!-- a <b>comment</b> --><p>Some <b>bold</b> &amp; <i>more</i>\
            &#233;&#x41;&bogus;</p><SCRIPT>steal()</SCRIPT  ><ul><li>one<li>two</ul>\
            a < b</body></html>";
        assert_eq!(
            plain_text(html),
            "Title\n\nSome bold & moreéA&bogus;\n\none\ntwo\na < b"
        );
    }

    #[test]
    fn what_never_ends_is_dropped_to_the_end() {
        assert_eq!(plain_text("text<script>x = '</scr'"), "text");
        assert_eq!(plain_text("text<!-- open"), "text");
        assert_eq!(plain_text("a<b"), "a");
        assert_eq!(plain_text(&"<div>".repeat(20_000)), "");
    }
}
