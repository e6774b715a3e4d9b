//! A request to uncomment a line, met without the model.
//!
//! Asked to "Uncomment the line that enables caching in config.py.", with
//! `# CACHE_ENABLED = True` in front of it, Qwen2.5-Coder-0.5B wrote four new
//! `CACHE_…` settings and left the comment as it was. Taking a comment marker off one
//! line is mechanical, so it is done here: among the file's commented-out code lines, the
//! one the request's words point to (their first four letters found in its names:
//! "caching" in `CACHE_ENABLED`), or the only one. When no line or more than one fits,
//! nothing is done here and the model is asked as for any change.

use crate::mentions::distinctive_words;

/// Comment markers a line of code is commented out with, longest first.
const MARKERS: &[&str] = &["//", "#", ";", "--"];

/// The letters of a request's word that must occur in a line's names.
const STEM: usize = 4;

/// `old` with the commented-out line `prompt` asks to uncomment uncommented, when the
/// prompt asks that and exactly one such line fits (see the module's documentation).
pub(super) fn uncommented(prompt: &str, old: &str) -> Option<String> {
    if !asks_to_uncomment(prompt) {
        return None;
    }
    let lines: Vec<&str> = old.split_inclusive('\n').collect();
    let candidates: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(at, line)| commented_code(line).map(|code| (at, code)))
        .collect();
    let stems = word_stems(prompt, &["uncomment", "line"]);
    let score = |code: &str| stems_in(&stems, code);
    let best = candidates.iter().map(|(_, code)| score(code)).max()?;
    let chosen: Vec<&(usize, String)> = if best == 0 {
        // Nothing the words point to: only a file with one such line says which.
        candidates.iter().collect()
    } else {
        candidates
            .iter()
            .filter(|(_, code)| score(code) == best)
            .collect()
    };
    let [(at, code)] = chosen.as_slice() else {
        return None;
    };
    let mut text = String::with_capacity(old.len());
    for (n, line) in lines.iter().enumerate() {
        if n == *at {
            text.push_str(code);
        } else {
            text.push_str(line);
        }
    }
    Some(text)
}

/// The first [`STEM`] letters, lower-case, of each of `prompt`'s own words
/// ([`distinctive_words`]) that has that many and starts with none of `skip` (the words
/// that ask for the change, not what it is about).
pub(super) fn word_stems(prompt: &str, skip: &[&str]) -> Vec<String> {
    distinctive_words(prompt)
        .iter()
        .map(|w| w.to_lowercase())
        .filter(|w| !skip.iter().any(|s| w.starts_with(s)))
        .map(|w| w.chars().take(STEM).collect())
        .filter(|w: &String| w.chars().count() == STEM)
        .collect()
}

/// How many of `stems` occur in `line`, ignoring case.
pub(super) fn stems_in(stems: &[String], line: &str) -> usize {
    let line = line.to_lowercase();
    stems
        .iter()
        .filter(|stem| line.contains(stem.as_str()))
        .count()
}

/// Whether `prompt` asks to uncomment something.
fn asks_to_uncomment(prompt: &str) -> bool {
    crate::intent::lower_words(prompt)
        .iter()
        .any(|w| w.starts_with("uncomment"))
}

/// The line `line` would be without its comment marker, when it is code commented out:
/// a marker at its start (after the indentation), then something that reads as code (an
/// assignment, a call, a key and its value), not prose.
fn commented_code(line: &str) -> Option<String> {
    let indent_len = line.len() - line.trim_start().len();
    let (indent, rest) = line.split_at(indent_len);
    let marker = MARKERS.iter().find(|m| rest.starts_with(**m))?;
    let after = &rest[marker.len()..];
    let code = after.strip_prefix(' ').unwrap_or(after);
    let first = code.split_whitespace().next()?;
    let name_like = first.trim_end_matches([':', '=']).chars().all(|c| {
        c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '(' | ')' | ';' | '"' | '\'')
    });
    let reads_as_code = name_like
        && (code.contains('=') || code.contains('(') || first.ends_with(':'))
        && !code.trim_end().ends_with(['.', '?', '!']);
    reads_as_code.then(|| format!("{indent}{code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commented_line_the_words_point_to_is_uncommented() {
        let config = "DEBUG = False\n# CACHE_ENABLED = True\n# LOG_LEVEL = 'info'\nTIMEOUT = 10\n";
        assert_eq!(
            uncommented(
                "Uncomment the line that enables caching in config.py.",
                config
            )
            .as_deref(),
            Some("DEBUG = False\nCACHE_ENABLED = True\n# LOG_LEVEL = 'info'\nTIMEOUT = 10\n")
        );
        let yaml = "server:\n  port: 80\n  # debug: true\n";
        assert_eq!(
            uncommented("uncomment debug in app.yaml", yaml).as_deref(),
            Some("server:\n  port: 80\n  debug: true\n")
        );
        let js = "const a = 1;\n// start();\n";
        assert_eq!(
            uncommented("Uncomment the call in main.js.", js).as_deref(),
            Some("const a = 1;\nstart();\n")
        );
    }

    #[test]
    fn prose_several_fits_or_another_request_are_left_to_the_model() {
        let prose = "# Settings for the app.\nDEBUG = False\n";
        assert_eq!(uncommented("Uncomment the debug line.", prose), None);
        let two = "# A = 1\n# B = 2\n";
        assert_eq!(uncommented("Uncomment the line in x.py.", two), None);
        let one = "# CACHE = True\n";
        assert_eq!(uncommented("Comment out the cache line.", one), None);
        assert_eq!(uncommented("Enable the cache.", one), None);
    }

    proptest::proptest! {
        #[test]
        fn any_request_and_file_are_read_without_a_panic(
            prompt in "(uncomment |the |cache |\\PC){0,16}",
            old in "(# a = 1\n|// f();\n|  ; k: v\n|-- x\n|\n|\\PC){0,24}",
        ) {
            let _ = uncommented(&prompt, &old);
        }
    }
}
