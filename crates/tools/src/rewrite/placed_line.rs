//! A line a request spells out and places under a heading or section, added without the
//! model when its answers cannot be used.
//!
//! Asked to "Add author = ann under [metadata] in setup.cfg.", Qwen2.5-Coder-0.5B wrote
//! the line at the end of `[options]` and turned `packages = find:` into `find`; asked
//! "Under the Testing heading in README.md, add the line: Run tests with pytest.", it
//! wrote `pytest` and dropped the `License` section. Both answers are refused (an
//! addition keeps every character), and then nothing was done. When the request gives
//! the line itself and the place (`under`, `below` or `after` a section or heading that
//! one line of the file is), the line goes at the end of that section, after its last
//! line that is not blank.

/// Words after which a request's line is placed, and before which it ends.
const PLACING: &[&str] = &["under", "below", "after"];

/// `old` with the line `prompt` spells out added under the section it names, when the
/// prompt reads so and one line of `old` is that section's heading.
pub(super) fn with_placed_line(prompt: &str, old: &str) -> Option<String> {
    let (line, place) = line_and_place(prompt)?;
    let lines: Vec<&str> = old.lines().collect();
    let heading = heading_of(&lines, &place)?;
    let end = section_end(&lines, heading);
    if lines[heading + 1..end]
        .iter()
        .any(|l| l.trim() == line.trim())
    {
        // Already there: the request is met as the file is.
        return None;
    }
    let last = (heading + 1..end)
        .rev()
        .find(|&n| !lines[n].trim().is_empty())
        .unwrap_or(heading);
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    if last == heading && is_markdown_heading(lines[heading]) {
        // A Markdown heading keeps a blank line on either side of its text.
        out.insert(heading + 1, String::new());
        out.insert(heading + 2, line);
        if out.get(heading + 3).is_some_and(|l| !l.is_empty()) {
            out.insert(heading + 3, String::new());
        }
    } else {
        out.insert(last + 1, line);
    }
    let mut text = out.join("\n");
    if old.ends_with('\n') || old.is_empty() {
        text.push('\n');
    }
    Some(text)
}

/// The line a request spells out and the words that name where it goes: "add [the
/// line:] LINE under PLACE [in FILE]" or "under PLACE [in FILE], add [the line:] LINE".
fn line_and_place(prompt: &str) -> Option<(String, String)> {
    let text = prompt.trim();
    // ASCII case only: the offsets found in `lower` slice `text`.
    let lower = text.to_ascii_lowercase();
    let add = word_at(&lower, "add")?;
    let placing = PLACING.iter().filter_map(|w| word_at(&lower, w)).min()?;
    let (line, place) = if add < placing {
        (&text[add + 3..placing], &text[placing..])
    } else {
        (&text[add + 3..], &text[placing..add])
    };
    let place = place.split_once(' ')?.1;
    let line = spelled_line(line)?;
    let place = place
        .trim()
        .trim_end_matches(['.', ','])
        .split(" in ")
        .next()?
        .trim()
        .to_owned();
    (!place.is_empty()).then_some((line, place))
}

/// The byte offset of `word` as a whole word in `lower`, first occurrence.
fn word_at(lower: &str, word: &str) -> Option<usize> {
    lower.match_indices(word).map(|(at, _)| at).find(|&at| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The line in `words` (what follows "add"): after "the line:" or the like, unquoted.
/// Only one line, written out: "a note" or "a test" names no line.
fn spelled_line(words: &str) -> Option<String> {
    let mut line = words.trim().trim_end_matches(',').trim();
    for lead in [
        "the line",
        "this line",
        "a line",
        "the text",
        "this text",
        "the entry",
    ] {
        if line.to_ascii_lowercase().starts_with(lead) {
            line = line[lead.len()..].trim_start();
            break;
        }
    }
    line = line.strip_prefix(':').unwrap_or(line).trim();
    let quoted = ['`', '"', '\''].iter().find_map(|q| {
        line.strip_prefix(*q)
            .and_then(|rest| rest.strip_suffix(*q))
            .filter(|inner| !inner.contains(*q))
    });
    let mut line = quoted.unwrap_or(line).trim();
    // The prompt's full stop, unless the line is a sentence of its own.
    let sentence =
        line.starts_with(char::is_uppercase) && line.contains(' ') && !line.contains('=');
    if quoted.is_none() && !sentence {
        line = line.trim_end_matches('.');
    }
    let lower = line.to_lowercase();
    let vague = ["a ", "an ", "some ", "the "]
        .iter()
        .any(|a| lower.starts_with(a))
        && quoted.is_none()
        && !line.contains([':', '=']);
    (!line.is_empty() && !line.contains('\n') && !vague).then(|| line.to_owned())
}

/// The one line of `lines` that is the heading `place` names: the line itself
/// (`[metadata]`, `## Testing`), or a heading whose text is the words of "the Testing
/// heading" / "the Testing section" / "Testing".
fn heading_of(lines: &[&str], place: &str) -> Option<usize> {
    let exact: Vec<usize> = (0..lines.len())
        .filter(|&n| lines[n].trim() == place.trim_matches('`'))
        .collect();
    if let [one] = exact.as_slice() {
        return Some(*one);
    }
    let mut name = place.trim_matches('`');
    for article in ["the ", "The "] {
        name = name.strip_prefix(article).unwrap_or(name);
    }
    for noun in [" heading", " section", " header", " table"] {
        name = name.strip_suffix(noun).unwrap_or(name);
    }
    let name = name.trim().trim_matches(['"', '\'', '`']).to_lowercase();
    if name.is_empty() {
        return None;
    }
    let named: Vec<usize> = (0..lines.len())
        .filter(|&n| heading_text(lines[n]).is_some_and(|t| t.to_lowercase() == name))
        .collect();
    match named.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The text of a heading line: Markdown's `## Testing`, INI's and TOML's `[metadata]`.
fn heading_text(line: &str) -> Option<&str> {
    let trimmed = line.trim();
    if is_markdown_heading(trimmed) {
        return Some(trimmed.trim_start_matches('#').trim());
    }
    trimmed
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .map(str::trim)
}

fn is_markdown_heading(line: &str) -> bool {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

/// The index of the line after the section that starts at `heading`: the next heading
/// of the same or a higher level, or the end.
fn section_end(lines: &[&str], heading: usize) -> usize {
    let level = |line: &str| {
        if is_markdown_heading(line) {
            Some(line.chars().take_while(|c| *c == '#').count())
        } else if heading_text(line).is_some() {
            Some(1)
        } else {
            None
        }
    };
    let own = level(lines[heading]).unwrap_or(1);
    (heading + 1..lines.len())
        .find(|&n| level(lines[n]).is_some_and(|l| l <= own))
        .unwrap_or(lines.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETUP: &str = "[metadata]\nname = tool\nversion = 0.1\n\n[options]\npackages = find:\n";
    const README: &str =
        "# tool\n\n## Install\n\npip install tool\n\n## Testing\n\n## License\n\nMIT\n";

    #[test]
    fn a_spelled_out_line_goes_at_the_end_of_the_section_it_names() {
        assert_eq!(
            with_placed_line("Add author = ann under [metadata] in setup.cfg.", SETUP).as_deref(),
            Some("[metadata]\nname = tool\nversion = 0.1\nauthor = ann\n\n[options]\npackages = find:\n")
        );
        assert_eq!(
            with_placed_line(
                "Under the Testing heading in README.md, add the line: Run tests with pytest.",
                README
            )
            .as_deref(),
            Some("# tool\n\n## Install\n\npip install tool\n\n## Testing\n\nRun tests with pytest.\n\n## License\n\nMIT\n")
        );
        assert_eq!(
            with_placed_line("add `pip install tool[dev]` below the Install heading", README)
                .as_deref(),
            Some("# tool\n\n## Install\n\npip install tool\npip install tool[dev]\n\n## Testing\n\n## License\n\nMIT\n")
        );
    }

    #[test]
    fn a_request_that_spells_no_line_or_names_no_one_heading_is_left_alone() {
        for prompt in [
            "Add a note under the Install heading.",
            "Add author = ann to setup.cfg.",
            "Add author = ann under [nowhere] in setup.cfg.",
            "Under the Testing heading, explain how to run the tests.",
            "Add name = tool under [metadata].",
            "İİİ add İ = 1 under [İİ] İİ",
            "Add \u{212A}\u{212A} under \u{212A}",
        ] {
            assert_eq!(with_placed_line(prompt, SETUP), None, "{prompt}");
            assert_eq!(with_placed_line(prompt, README), None, "{prompt}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_request_and_file_are_read_without_a_panic(
            prompt in "(add |under |below |after |the line: |in |\\[x\\] |## x|\\PC){0,24}",
            old in "(\\[x\\]\n|## x\n|# y\n|a = 1\n|\n|\\PC){0,24}",
        ) {
            let _ = with_placed_line(&prompt, &old);
        }
    }
}
