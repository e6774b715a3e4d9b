//! The `@` file finder: the workspace's files (as `git` would see them: .gitignore and
//! .ignore respected, hidden entries and `.git` skipped, in a repository or not), ranked
//! by nucleo's fuzzy path matcher.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use std::cmp::Reverse;
use std::path::Path;

pub struct FileFinder {
    /// Workspace-relative, `/`-separated; shortest first, then alphabetical.
    files: Vec<String>,
    matcher: Matcher,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatch {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// Char indices (not bytes) of the matched characters, ascending, for highlighting.
    pub indices: Vec<usize>,
}

impl FileFinder {
    /// Walks `root` for up to `limit` regular files. Directories are visited in name
    /// order, so which files a full walk keeps does not change between scans. Paths that
    /// are not UTF-8 are left out: they could not be written as an `@` reference.
    pub fn scan(root: &Path, limit: usize) -> FileFinder {
        let mut files = Vec::new();
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            .ignore(true)
            .require_git(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker.flatten() {
            if files.len() >= limit {
                break;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(root) else {
                continue;
            };
            let parts: Option<Vec<&str>> = relative
                .components()
                .map(|c| c.as_os_str().to_str())
                .collect();
            // A name with control characters would reach the terminal as they are.
            let printable = |p: &Vec<&str>| !p.iter().any(|s| s.chars().any(char::is_control));
            if let Some(parts) = parts.filter(|p| !p.is_empty() && printable(p)) {
                files.push(parts.join("/"));
            }
        }
        files.sort_by_cached_key(|path| (path.chars().count(), path.clone()));
        FileFinder {
            files,
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
        }
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The best `limit` files for `query`: by score, then shorter path, then
    /// alphabetical. An empty query lists the shortest paths, alphabetical among equals.
    pub fn search(&mut self, query: &str, limit: usize) -> Vec<FileMatch> {
        if query.is_empty() {
            return self
                .files
                .iter()
                .take(limit)
                .map(|path| FileMatch {
                    path: path.clone(),
                    indices: Vec::new(),
                })
                .collect();
        }
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, &String)> = self
            .files
            .iter()
            .filter_map(|path| {
                let score = pattern.score(haystack(path, &mut buf), &mut self.matcher)?;
                Some((score, path))
            })
            .collect();
        // `files` is already in (length, name) order and this sort is stable.
        scored.sort_by_key(|&(score, _)| Reverse(score));
        scored.truncate(limit);
        let mut indices = Vec::new();
        scored
            .into_iter()
            .map(|(_, path)| {
                indices.clear();
                pattern.indices(haystack(path, &mut buf), &mut self.matcher, &mut indices);
                indices.sort_unstable();
                indices.dedup();
                FileMatch {
                    path: path.clone(),
                    indices: indices.iter().map(|&i| i as usize).collect(),
                }
            })
            .collect()
    }
}

/// The text nucleo matches: one element per char, so match indices are char indices.
/// (`Utf32Str::new` would use one element per grapheme, which shifts the indices after
/// any combining mark, e.g. in macOS's decomposed file names.)
fn haystack<'a>(path: &'a str, buf: &'a mut Vec<char>) -> Utf32Str<'a> {
    if path.is_ascii() {
        Utf32Str::Ascii(path.as_bytes())
    } else {
        buf.clear();
        buf.extend(path.chars());
        Utf32Str::Unicode(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        dir
    }

    fn paths(found: Vec<FileMatch>) -> Vec<String> {
        found.into_iter().map(|m| m.path).collect()
    }

    #[test]
    fn ignored_and_hidden_files_are_left_out_without_a_repository() {
        let dir = tree(&[
            "src/main.rs",
            "target/debug/main.rs",
            "notes.log",
            "scratch/a.txt",
            ".env",
            ".config/x.toml",
            ".git/HEAD",
            "docs/guide.md",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(dir.path().join(".ignore"), "scratch/\n").unwrap();
        let mut finder = FileFinder::scan(dir.path(), 100);
        assert_eq!(finder.len(), 2);
        assert_eq!(
            paths(finder.search("", 10)),
            vec!["src/main.rs", "docs/guide.md"]
        );
        assert!(finder.search("env", 10).is_empty());
    }

    #[test]
    fn the_git_directory_is_skipped_inside_a_repository_too() {
        let dir = tree(&[".git/config", "kept.rs", "build/out.rs"]);
        std::fs::write(dir.path().join(".gitignore"), "build\n").unwrap();
        let mut finder = FileFinder::scan(dir.path(), 100);
        assert_eq!(paths(finder.search("", 10)), vec!["kept.rs"]);
    }

    #[test]
    fn an_empty_query_lists_shortest_paths_then_alphabetical() {
        let dir = tree(&["b.rs", "a.rs", "src/lib.rs", "zz.md", "c/d.rs"]);
        let mut finder = FileFinder::scan(dir.path(), 100);
        assert!(!finder.is_empty());
        assert_eq!(
            paths(finder.search("", 10)),
            vec!["a.rs", "b.rs", "zz.md", "c/d.rs", "src/lib.rs"]
        );
        assert_eq!(paths(finder.search("", 2)), vec!["a.rs", "b.rs"]);
    }

    #[test]
    fn fuzzy_queries_rank_the_closest_path_first_and_mark_matches() {
        let dir = tree(&[
            "src/more/stuff/readme.txt",
            "src/main.rs",
            "misc/rust/setup.sh",
            "other.txt",
        ]);
        let mut finder = FileFinder::scan(dir.path(), 100);
        let found = finder.search("mrs", 10);
        let order = paths(found.clone());
        assert_eq!(
            order,
            vec![
                "src/main.rs",
                "misc/rust/setup.sh",
                "src/more/stuff/readme.txt"
            ]
        );
        for m in &found {
            let chars: Vec<char> = m.path.chars().collect();
            let picked: String = m.indices.iter().map(|&i| chars[i]).collect();
            assert_eq!(picked.to_lowercase(), "mrs", "{m:?}");
            assert!(m.indices.windows(2).all(|w| w[0] < w[1]));
        }
        let main = finder.search("main", 5);
        assert_eq!(main[0].path, "src/main.rs");
        assert_eq!(main[0].indices, vec![4, 5, 6, 7]);
        assert!(finder.search("zzz", 5).is_empty());
    }

    #[test]
    fn equal_scores_prefer_shorter_then_alphabetical_paths() {
        let dir = tree(&["aa/x.rs", "b/x.rs", "a/x.rs", "y.rs"]);
        let mut finder = FileFinder::scan(dir.path(), 100);
        assert_eq!(
            paths(finder.search("x.rs", 10)),
            vec!["a/x.rs", "b/x.rs", "aa/x.rs"]
        );
    }

    #[test]
    fn smart_case_only_matches_exact_case_when_the_query_has_capitals() {
        let dir = tree(&["README.md", "readme.txt"]);
        let mut finder = FileFinder::scan(dir.path(), 100);
        assert_eq!(finder.search("readme", 10).len(), 2);
        assert_eq!(paths(finder.search("README", 10)), vec!["README.md"]);
    }

    #[test]
    fn indices_are_char_indices_in_non_ascii_paths() {
        // A decomposed é (e + combining acute) is two chars but one grapheme.
        let dir = tree(&["cafe\u{301}/menu.txt", "日本/読む.md"]);
        let mut finder = FileFinder::scan(dir.path(), 100);
        let found = finder.search("menu", 5);
        assert_eq!(found[0].path, "cafe\u{301}/menu.txt");
        assert_eq!(found[0].indices, vec![6, 7, 8, 9]);
        let found = finder.search("読", 5);
        assert_eq!(found[0].path, "日本/読む.md");
        assert_eq!(found[0].indices, vec![3]);
    }

    #[test]
    fn limits_are_respected() {
        let names: Vec<String> = (0..30).map(|i| format!("f{i:02}.rs")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = tree(&refs);
        let mut finder = FileFinder::scan(dir.path(), 10);
        assert_eq!(finder.len(), 10);
        // Directories are walked in name order, so the kept files are the first ten.
        assert_eq!(finder.search("", 1)[0].path, "f00.rs");
        assert_eq!(finder.search("", 100).len(), 10);
        assert_eq!(finder.search("f", 3).len(), 3);
        assert!(finder.search("f", 0).is_empty());
        assert!(FileFinder::scan(dir.path(), 0).is_empty());
    }
}
