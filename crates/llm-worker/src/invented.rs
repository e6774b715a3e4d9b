//! What a tool name a model made up most likely meant, by its verb.
//!
//! Small models name the tool they wish they had: `append_line`, `run_calc.py`,
//! `search_files`, `replaceAll`. The first word is nearly always the action, and the real
//! tool for it says that action in its own description ("an empty old_string appends
//! new_string", "Run a bash command"). Quoting that sentence tells the model which tool
//! to use and how, in words it already chose.

/// The words of an invented tool name: split at `_`, `-`, `.`, blanks and lower-to-upper
/// case changes, lowercased.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = !c.is_alphanumeric() || (c.is_uppercase() && previous_lower);
        if boundary && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase();
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether `word` (from a description) is `verb` or one of its plain forms.
fn is_form_of(word: &str, verb: &str) -> bool {
    let word = word.to_lowercase();
    let stem = verb.strip_suffix('e').unwrap_or(verb);
    word == verb
        || ["s", "es", "d", "ed", "ing"]
            .iter()
            .any(|ending| word == format!("{verb}{ending}") || word == format!("{stem}{ending}"))
}

/// The sentence of `description` that uses `verb`, if one does. A name in it
/// (`old_string`) is one word, not the words it is made of: `old_helpers.py`, a file a
/// model called as a tool, does not start with a verb `edit` uses.
fn sentence_with<'a>(description: &'a str, verb: &str) -> Option<&'a str> {
    description
        .split_inclusive(['.', ';'])
        .map(str::trim)
        .find(|sentence| {
            sentence
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| is_form_of(w, verb))
        })
}

/// The one tool among `tools` (name, description) whose description uses the verb that
/// starts `invented`, with the sentence that does; `None` when none or several do, or
/// the verb is shorter than three letters.
pub fn tool_for_verb<'a>(
    invented: &str,
    tools: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<(&'a str, &'a str)> {
    let verb = words(invented).into_iter().next()?;
    if verb.len() < 3 || !verb.chars().all(char::is_alphabetic) {
        return None;
    }
    let mut found = tools
        .into_iter()
        .filter_map(|(name, description)| Some((name, sentence_with(description, &verb)?)));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[(&str, &str)] = &[
        (
            "read_file",
            "Read a text file, or view an image. Optional offset and limit.",
        ),
        ("ls", "List a directory (default: the workspace root)."),
        (
            "grep",
            "Search file contents with a regular expression, respecting .gitignore.",
        ),
        (
            "shell",
            "Run a bash command in the workspace root. Returns its output.",
        ),
        (
            "edit",
            "Replace an exact string in a file. old_string must match exactly once unless \
             replace_all is true; an empty old_string appends new_string to the end of the file.",
        ),
        ("delete_file", "Delete a file."),
    ];

    fn meant(name: &str) -> Option<(&'static str, &'static str)> {
        tool_for_verb(name, TOOLS.iter().copied())
    }

    #[test]
    fn the_verb_of_an_invented_name_finds_the_tool_that_does_it() {
        assert_eq!(
            meant("append_line"),
            Some((
                "edit",
                "an empty old_string appends new_string to the end of the file."
            ))
        );
        assert_eq!(meant("run_calc.py").map(|m| m.0), Some("shell"));
        assert_eq!(meant("searchFiles").map(|m| m.0), Some("grep"));
        assert_eq!(meant("replace_all").map(|m| m.0), Some("edit"));
        assert_eq!(meant("list-files").map(|m| m.0), Some("ls"));
        assert_eq!(meant("delete").map(|m| m.0), Some("delete_file"));
    }

    #[test]
    fn no_verb_a_short_one_or_one_several_tools_use_finds_nothing() {
        assert_eq!(meant("todo_comments"), None);
        assert_eq!(meant("get_version"), None);
        assert_eq!(
            meant("old_helpers.py"),
            None,
            "old_string is a name, not a verb"
        );
        assert_eq!(meant("go"), None);
        assert_eq!(meant("file_info"), None, "several tools say file");
        assert_eq!(meant(""), None);
        assert_eq!(meant("__"), None);
        assert_eq!(words("readFILE_v2"), ["read", "file", "v2"]);
    }
}
