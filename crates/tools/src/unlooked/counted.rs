//! Questions that ask how many of a code's things there are, and the search that counts
//! them.
//!
//! Asked "How many tests are in test_math.py?", Qwen2.5-Coder-0.5B read the file's three
//! tests and answered 2; asked for functions, it answered 2 for 3. A search for the lines
//! that define them ends on a count (`[3 matching lines in 1 file]`) the model copies.

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
