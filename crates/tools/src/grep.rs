//! grep: regex search over the workspace with the ripgrep crates (`ignore` for the
//! parallel, .gitignore-aware walk; `grep-regex` + `grep-searcher` for matching).

use crate::common::parse_args;
use crate::fs::GrepQuery;
use crate::workspace::Workspace;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{sinks::UTF8, BinaryDetection, SearcherBuilder};
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Matching lines shown to the model; the total is still counted.
pub const MAX_MATCHES: usize = 200;
const MAX_LINE_CHARS: usize = 300;
/// The longest line the searcher holds (its heap limit, per walker thread): a file with
/// a longer line is searched up to that line and named in a notice. Without it the
/// searcher's buffer grows to the longest line: a 600 MB line cost 1.2 GB. Source lines
/// are far shorter; a minified bundle or a data dump is searched with `shell` instead.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Files named in the notice about lines over [`MAX_LINE_BYTES`].
const MAX_LONG_LINE_FILES_SHOWN: usize = 10;

pub struct Grep(pub Arc<Workspace>);

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

/// One match: path as shown, 1-based line number, line text.
pub type Match = (String, u64, String);

/// What a search found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// Up to the `max` asked for, sorted by path and line.
    pub matches: Vec<Match>,
    /// Matching lines in all.
    pub total: usize,
    /// Files (as shown) not searched past a line longer than [`MAX_LINE_BYTES`], sorted.
    pub long_lines: Vec<String>,
}

impl Found {
    /// Adds what another search found (the matches are sorted again and cut at `max`).
    pub fn merge(&mut self, other: Found, max: usize) {
        self.matches.extend(other.matches);
        self.matches.sort();
        self.matches.truncate(max);
        self.total += other.total;
        self.long_lines.extend(other.long_lines);
        self.long_lines.sort();
    }
}

/// Searches `base` (a file or directory) for `query`.
pub fn search(base: &Path, query: &GrepQuery) -> Result<Found, ToolError> {
    search_view(base, query, &|_| None, &AtomicBool::new(false))
}

/// Where a walked file's contents are read from instead, if elsewhere.
pub type ReadFrom<'a> = &'a (dyn Fn(&Path) -> Option<PathBuf> + Sync);

/// [`search`], but the contents of a walked file are read from `read_from(path)` when
/// it returns a path (a speculation overlay); the walk and the paths shown stay those
/// of `base`. The walk ends early, with what it found so far, once `stop` is set: the
/// one who asked is gone (a search past its time budget, a cancelled call), and a walk
/// of a large tree would otherwise go on using a core.
pub fn search_view(
    base: &Path,
    query: &GrepQuery,
    read_from: ReadFrom<'_>,
    stop: &AtomicBool,
) -> Result<Found, ToolError> {
    let GrepQuery {
        pattern,
        glob,
        case_insensitive,
        max,
        shown_root,
    } = query;
    let (glob, max, shown_root) = (glob.as_deref(), *max, shown_root.as_path());
    let matcher = regex_matcher(pattern, *case_insensitive)
        .map_err(|e| ToolError::InvalidInput(format!("bad regex: {e}")))?;
    let mut walker = crate::listing::project_walk(base);
    if let Some(g) = glob {
        let mut overrides = ignore::overrides::OverrideBuilder::new(base);
        overrides
            .add(g)
            .map_err(|e| ToolError::InvalidInput(format!("bad glob: {e}")))?;
        walker.overrides(
            overrides
                .build()
                .map_err(|e| ToolError::InvalidInput(format!("bad glob: {e}")))?,
        );
    }
    let found: Mutex<Vec<Match>> = Mutex::new(Vec::new());
    let long_lines: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let total = AtomicUsize::new(0);
    walker.build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .heap_limit(Some(MAX_LINE_BYTES))
            .build();
        let (found, total, long_lines) = (&found, &total, &long_lines);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            let contents = read_from(path);
            let mut shown: Option<String> = None;
            let mut local: Vec<Match> = Vec::new();
            let searched = searcher.search_path(
                &matcher,
                contents.as_deref().unwrap_or(path),
                UTF8(|line_number, line| {
                    let n = total.fetch_add(1, Ordering::Relaxed);
                    if n < max {
                        let text: String = line
                            .trim_end_matches(['\n', '\r'])
                            .chars()
                            .take(MAX_LINE_CHARS)
                            .collect();
                        let shown = shown.get_or_insert_with(|| shown_path(path, shown_root));
                        local.push((shown.clone(), line_number, text));
                    }
                    Ok(true)
                }),
            );
            // Other errors (unreadable, not UTF-8 in a matching line) end that file's
            // search quietly, as they always did; a line over the limit is said.
            if searched.is_err_and(|e| over_heap_limit(&e)) {
                long_lines
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(shown_path(path, shown_root));
            }
            if !local.is_empty() {
                found
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend(local);
            }
            ignore::WalkState::Continue
        })
    });
    let mut matches = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    matches.sort();
    let mut long_lines = long_lines
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    long_lines.sort();
    Ok(Found {
        matches,
        total: total.into_inner(),
        long_lines,
    })
}

/// Whether the searcher stopped at a line longer than its heap limit (grep-searcher
/// says so only in the error's text; `long_lines_are_named` pins it).
fn over_heap_limit(e: &std::io::Error) -> bool {
    e.to_string().contains("allocation limit")
}

fn shown_path(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .map(PathBuf::from)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

#[async_trait::async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn read_only(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "Search file contents with a regular expression, respecting .gitignore. Output: path:line:text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)"},
            "path": {"type": "string", "description": "File or directory to search (default: workspace root)"},
            "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.rs"},
            "case_insensitive": {"type": "boolean", "default": false}
        }, "required": ["pattern"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: GrepArgs = parse_args(input)?;
        let (pattern, as_text) = pattern_or_text(args.pattern);
        let requested = args.path.as_deref().unwrap_or(".");
        let base = self
            .0
            .resolve(requested)
            .map_err(|e| crate::suggest::scope_failure(&self.0, requested, e))?;
        let mut query = GrepQuery {
            pattern,
            glob: args.glob,
            case_insensitive: args.case_insensitive,
            max: MAX_MATCHES,
            shown_root: self.0.root().to_path_buf(),
        };
        let fs = self.0.fs();
        let found = fs.grep(&base, &query).await?;
        let mut output = render(&found);
        if let (0, Some(glob)) = (found.total, query.glob.take()) {
            // A glob that filters everything out is most often a misused field (a
            // small model puts the pattern there); the wider search says more than
            // "no matches", and the note keeps it honest.
            let wider = fs.grep(&base, &query).await?;
            if wider.total > 0 {
                output = render(&wider);
                output.content = format!(
                    "[no match in files matching the glob `{glob}`; matches in all files:]\n{}",
                    output.content
                );
            }
        }
        if let Some(note) = as_text {
            output.content = format!("{note}\n{}", output.content);
        }
        Ok(output)
    }
}

/// The pattern to search for, and a note when it is not a regular expression and is
/// searched for as plain text instead. A glob (`*.log`) or a call with its parenthesis
/// (`print(`) is what a person or a model most often means by such a pattern, and "bad
/// regex" makes a small model send the same pattern again. A pattern that fails as text
/// too (one with a line break) stays as it is and fails with the regex error.
fn pattern_or_text(pattern: String) -> (String, Option<String>) {
    let compiles = |p: &str| regex_matcher(p, false).is_ok();
    if compiles(&pattern) {
        return (pattern, None);
    }
    let text = regex::escape(&pattern);
    if !compiles(&text) {
        return (pattern, None);
    }
    let note = format!("[`{pattern}` is not a regular expression; searched for it as plain text:]");
    (text, Some(note))
}

/// The matcher every search uses for `pattern`.
fn regex_matcher(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, grep_regex::Error> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        // Lets the searcher scan whole buffers instead of going line by line.
        .line_terminator(Some(b'\n'))
        .build(pattern)
}

/// The tool output for what a search found.
pub fn render(found: &Found) -> ToolOutput {
    let mut output = render_matches(&found.matches, found.total);
    if !found.long_lines.is_empty() {
        let n = found.long_lines.len();
        let mut names = found.long_lines[..n.min(MAX_LONG_LINE_FILES_SHOWN)].join(", ");
        if n > MAX_LONG_LINE_FILES_SHOWN {
            names.push_str(&format!(" and {} more", n - MAX_LONG_LINE_FILES_SHOWN));
        }
        output.content.push_str(&format!(
            "\n[not searched past a line longer than {} MiB: {names}; search such files \
             with shell, e.g. grep -o]",
            MAX_LINE_BYTES >> 20
        ));
    }
    output
}

/// The tool output for `matches` out of `total` matching lines.
fn render_matches(matches: &[Match], total: usize) -> ToolOutput {
    if total == 0 {
        return ToolOutput::new("no matches").with_summary("0 matches");
    }
    let mut out: String = matches
        .iter()
        .map(|(p, n, t)| format!("{p}:{n}:{t}\n"))
        .collect();
    if total > matches.len() {
        out.push_str(&format!(
            "[...{} more matches not shown; narrow the pattern or path]",
            total - matches.len()
        ));
    } else {
        let files: std::collections::BTreeSet<&str> =
            matches.iter().map(|(p, _, _)| p.as_str()).collect();
        out.push_str(&format!(
            "[{total} matching line{} in {} file{}]",
            if total == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        ));
    }
    ToolOutput::new(out.trim_end().to_owned()).with_summary(format!("{total} matches"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn query(root: &Path, pattern: &str) -> GrepQuery {
        GrepQuery {
            pattern: pattern.to_owned(),
            glob: None,
            case_insensitive: false,
            max: 10,
            shown_root: root.to_path_buf(),
        }
    }

    #[test]
    fn a_stopped_search_walks_no_further() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "needle\n").unwrap();
        let q = query(dir.path(), "needle");
        let stopped = search_view(dir.path(), &q, &|_| None, &AtomicBool::new(true)).unwrap();
        assert_eq!(stopped, Found::default());
        assert_eq!(search(dir.path(), &q).unwrap().total, 1);
        let matcher = crate::listing::glob_matcher("*.txt").unwrap();
        let stopped = crate::listing::glob_walk(dir.path(), &matcher, &AtomicBool::new(true));
        assert!(stopped.is_empty());
        assert_eq!(
            crate::listing::glob_walk(dir.path(), &matcher, &AtomicBool::new(false)),
            ["a.txt"]
        );
    }

    #[test]
    fn dotfiles_are_searched_and_stores_are_not() {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            ".env",
            ".github/ci.yml",
            "src/app.py",
            ".git/config",
            ".venv/lib/site.py",
            "src/.mypy_cache/x.json",
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "needle\n").unwrap();
        }
        let found = search(dir.path(), &query(dir.path(), "needle")).unwrap();
        let files: Vec<&str> = found.matches.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(files, [".env", ".github/ci.yml", "src/app.py"]);
        // What .gitignore names is skipped, in a tree outside git too.
        std::fs::write(dir.path().join(".gitignore"), ".env\n").unwrap();
        let found = search(dir.path(), &query(dir.path(), "needle")).unwrap();
        let files: Vec<&str> = found.matches.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(files, [".github/ci.yml", "src/app.py"]);
        let matcher = crate::listing::glob_matcher("**/*").unwrap();
        let mut globbed = crate::listing::glob_walk(dir.path(), &matcher, &AtomicBool::new(false));
        globbed.sort();
        assert_eq!(globbed, [".github/ci.yml", ".gitignore", "src/app.py"]);
    }

    #[test]
    fn long_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!(
            "needle one\n{}\nneedle after\n",
            "x".repeat(MAX_LINE_BYTES + 10)
        );
        std::fs::write(dir.path().join("long.txt"), long).unwrap();
        std::fs::write(dir.path().join("short.txt"), "a needle\n").unwrap();
        let found = search(dir.path(), &query(dir.path(), "needle")).unwrap();
        // The line before the long one is found; the search of that file stops there.
        assert_eq!(
            found.matches,
            vec![
                ("long.txt".to_owned(), 1, "needle one".to_owned()),
                ("short.txt".to_owned(), 1, "a needle".to_owned()),
            ]
        );
        assert_eq!(found.long_lines, vec!["long.txt".to_owned()]);
        let out = render(&found).content;
        assert!(
            out.ends_with(
                "[2 matching lines in 2 files]\n[not searched past a line longer than 1 MiB: \
                 long.txt; search such files with shell, e.g. grep -o]"
            ),
            "{out}"
        );
        let nothing = search(dir.path(), &query(dir.path(), "absent")).unwrap();
        assert!(render(&nothing)
            .content
            .starts_with("no matches\n[not searched past"));
    }
}
