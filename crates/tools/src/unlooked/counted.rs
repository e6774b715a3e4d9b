//! Questions that ask how many of a code's things there are, and the search that counts
//! them.
//!
//! Asked "How many tests are in test_math.py?", Qwen2.5-Coder-0.5B read the file's three
//! tests and answered 2; asked for functions, it answered 2 for 3. A search for the lines
//! that define them ends on a count (`[3 matching lines in 1 file]`) the model copies.
//!
//! Asked "How many markdown files are directly in docs?", it listed `docs` and fed the
//! listing back as a path until the turn stopped. Files of a kind are counted by a
//! `glob` (`*.md`, `**/*.py`), whose result ends on its count as well.

/// A line that defines a function, in the languages a workspace most often holds
/// (Python, JavaScript and TypeScript, Go, Rust).
const FUNCTIONS: &str = r"^\s*((async|export|pub)\s+)*(def|function|func|fn)\s";

/// A line that defines a class.
const CLASSES: &str = r"^\s*(export\s+)?class\s";

/// A line that defines a test: a Python `test_` function, a Go `Test` function, a Rust
/// `#[test]`, a JavaScript `it(` or `test(`.
const TESTS: &str =
    r"^\s*(async\s+)?def\s+test|^func\s+Test|#\[(tokio::)?test\]|^\s*(it|test)\s*\(";

/// A line that defines a function or a class.
pub(super) fn definitions() -> String {
    format!("{FUNCTIONS}|{CLASSES}")
}

/// The search that counts what `prompt` asks how many of, when it asks that of tests,
/// functions, methods, classes or TODO comments: its pattern and what it finds.
pub(super) fn counted(prompt: &str) -> Option<(&'static str, &'static str)> {
    let words = crate::intent::lower_words(prompt);
    // "How many tests fail?" asks about a run, not about the code.
    const RUN_WORDS: &[&str] = &[
        "pass", "passes", "passing", "passed", "fail", "fails", "failing", "failed", "broken",
        "skipped",
    ];
    if words.iter().any(|w| RUN_WORDS.contains(&w.as_str())) {
        return None;
    }
    let at = words.windows(2).position(|w| w == ["how", "many"])?;
    // "How many unit tests", "how many Python functions": the noun within three words.
    words[at + 2..]
        .iter()
        .take(3)
        .find_map(|word| match word.as_str() {
            "test" | "tests" => Some((TESTS, "the lines that define tests")),
            "function" | "functions" | "method" | "methods" => {
                Some((FUNCTIONS, "the lines that define functions"))
            }
            "class" | "classes" => Some((CLASSES, "the lines that define classes")),
            "todo" | "todos" => Some(("TODO", "TODO comments")),
            _ => None,
        })
}

/// Words that name a kind of file, and the endings of its files.
const KINDS: &[(&str, &[&str])] = &[
    ("python", &["py"]),
    ("markdown", &["md", "markdown"]),
    ("javascript", &["js", "mjs", "cjs"]),
    ("typescript", &["ts", "tsx"]),
    ("rust", &["rs"]),
    ("go", &["go"]),
    ("java", &["java"]),
    ("ruby", &["rb"]),
    ("shell", &["sh"]),
    ("text", &["txt"]),
    ("yaml", &["yaml", "yml"]),
    ("html", &["html", "htm"]),
    ("image", &["png", "jpg", "jpeg", "gif", "svg", "webp"]),
];

/// Words that keep a count to the directory itself, not the ones under it.
const DIRECTLY: &[&str] = &["directly", "top", "immediately"];

/// The `glob` pattern that finds the files `prompt` asks how many of ("How many Python
/// files does this project have?" → `**/*.py`), when it asks that: the noun `files`
/// within three words of "how many", with a kind ([`KINDS`]) or an ending (`.md`, `csv`)
/// between or none; `*.…` instead of `**/*.…` for files "directly" in a place.
pub(super) fn counted_files(prompt: &str) -> Option<String> {
    let words = crate::intent::lower_words(prompt);
    let at = words.windows(2).position(|w| w == ["how", "many"])?;
    let noun = words[at + 2..].iter().take(3).position(|w| w == "files")?;
    let endings: Vec<&str> = words[at + 2..at + 2 + noun]
        .iter()
        .find_map(|word| match KINDS.iter().find(|(kind, _)| kind == word) {
            Some((_, endings)) => Some(endings.to_vec()),
            None => crate::mentions::is_file_ending(word).then(|| vec![word.as_str()]),
        })
        .unwrap_or_default();
    let names = match endings.as_slice() {
        [] => "*".to_owned(),
        [one] => format!("*.{one}"),
        many => format!("*.{{{}}}", many.join(",")),
    };
    let directly = words.iter().any(|w| DIRECTLY.contains(&w.as_str()));
    Some(match directly {
        true => names,
        false => format!("**/{names}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, line: &str) -> bool {
        regex::Regex::new(&format!("(?m){pattern}"))
            .unwrap()
            .is_match(line)
    }

    #[test]
    fn questions_that_ask_how_many_are_known_by_their_noun() {
        assert_eq!(
            counted("How many tests are in test_math.py?").unwrap().0,
            TESTS
        );
        assert_eq!(
            counted("how many Python functions does shapes.py define?")
                .unwrap()
                .0,
            FUNCTIONS
        );
        assert_eq!(counted("How many classes are there?").unwrap().0, CLASSES);
        assert_eq!(
            counted("How many TODO comments are in src?").unwrap().1,
            "TODO comments"
        );
        for prompt in [
            "How many lines does main.py have?",
            "Which tests fail?",
            "How many people use this function?",
            "How many tests fail?",
        ] {
            assert_eq!(counted(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn questions_that_ask_how_many_files_are_globbed_by_their_kind() {
        for (prompt, pattern) in [
            ("How many Python files does this project have?", "**/*.py"),
            (
                "How many markdown files are directly in docs?",
                "*.{md,markdown}",
            ),
            ("how many .json files are there in config?", "**/*.json"),
            ("How many files are in src?", "**/*"),
            ("How many yaml files?", "**/*.{yaml,yml}"),
        ] {
            assert_eq!(counted_files(prompt).as_deref(), Some(pattern), "{prompt}");
        }
        for prompt in [
            "How many lines does main.py have?",
            "How many tests are in the files of src?",
            "Which files are Python files?",
        ] {
            assert_eq!(counted_files(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn the_patterns_match_definitions_and_not_their_uses() {
        for line in [
            "def area(r):",
            "    async def fetch():",
            "export function go() {",
            "func main() {",
            "pub fn run() {",
            "    def method(self):",
        ] {
            assert!(matches(FUNCTIONS, line), "{line}");
            assert!(matches(&definitions(), line), "{line}");
        }
        for line in [
            "    return area(r)",
            "# define a function",
            "defaults = 1",
            "fnord = 2",
        ] {
            assert!(!matches(FUNCTIONS, line), "{line}");
            assert!(!matches(&definitions(), line), "{line}");
        }
        assert!(matches(CLASSES, "class Shape:") && matches(&definitions(), "class Shape:"));
        assert!(!matches(CLASSES, "    klass = Shape"));
        for line in [
            "def test_add():",
            "func TestAdd(t *testing.T) {",
            "#[test]",
            "  it('adds', () => {",
            "test('adds', () => {",
        ] {
            assert!(matches(TESTS, line), "{line}");
        }
        for line in ["def helper():", "    assert add(1, 2) == 3", "latest = 1"] {
            assert!(!matches(TESTS, line), "{line}");
        }
    }
}
