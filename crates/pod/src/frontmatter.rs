//! The `---` header of a Markdown file (skills, agent files): `key: value` lines, and
//! lists written either inline (`tools: Read, Grep`) or as `- item` lines under the key.
//! Parsed by hand like custom commands' headers: the files written for Claude Code use
//! only this much YAML, and a malformed header must not cost the file (it is then read
//! as plain text with no header).

/// A header's fields in file order, and the body after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub fields: Vec<(String, String)>,
    pub body: String,
}

impl Parsed {
    /// The value of `key` (the first one), unquoted; `None` when missing or empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// `key` as a list: comma-separated inline, or the `- item` lines under it (joined
    /// with commas when parsed).
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        self.get(key).map(|v| {
            v.split(',')
                .map(|s| unquote(s.trim()).to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
    }
}

fn unquote(value: &str) -> &str {
    let v = value.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// Splits `text` into its header and body; a file without a well-formed header is all
/// body.
pub fn parse(text: &str) -> Parsed {
    let text = text.trim_start_matches('\u{feff}');
    let whole = Parsed {
        fields: Vec::new(),
        body: text.trim().to_owned(),
    };
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return whole;
    };
    let (header, body) = if let Some(body) = rest.strip_prefix("---") {
        ("", body)
    } else {
        match rest.find("\n---") {
            Some(end) => (&rest[..end], &rest[end + 4..]),
            None => return whole,
        }
    };
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in header.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // A `- item` line continues the list of the key above it.
        if let (Some(item), Some((_, value))) = (trimmed.strip_prefix("- "), fields.last_mut()) {
            if !value.is_empty() {
                value.push_str(", ");
            }
            value.push_str(unquote(item));
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let value = unquote(value.trim());
        // `description: >` or `|`: the folded text is on the lines below, which this
        // reader does not follow; better no value than the marker.
        let value = if matches!(value, ">" | "|" | ">-" | "|-") {
            ""
        } else {
            value
        };
        fields.push((key.trim().to_owned(), value.to_owned()));
    }
    let body = body
        .trim_start_matches(|c| c != '\n')
        .trim_start_matches(['\r', '\n']);
    Parsed {
        fields,
        body: body.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_lists_and_body() {
        let p = parse(
            "---\nname: code-reviewer\ndescription: \"Reviews code: bugs first\"\ntools: Read, Grep, Glob\nmodel: inherit\n---\nYou review code.\n",
        );
        assert_eq!(p.get("name"), Some("code-reviewer"));
        assert_eq!(p.get("description"), Some("Reviews code: bugs first"));
        assert_eq!(
            p.list("tools"),
            Some(vec!["Read".into(), "Grep".into(), "Glob".into()])
        );
        assert_eq!(p.body, "You review code.");
        let listed = parse("---\nname: x\ntools:\n  - read_file\n  - grep\n---\nbody");
        assert_eq!(
            listed.list("tools"),
            Some(vec!["read_file".into(), "grep".into()])
        );
        assert_eq!(listed.body, "body");
    }

    #[test]
    fn no_or_broken_header_is_all_body() {
        assert_eq!(parse("just text").body, "just text");
        let broken = parse("---\nname: x\nno end");
        assert!(broken.fields.is_empty());
        assert_eq!(parse("---\n---\nbody").body, "body");
    }
}
