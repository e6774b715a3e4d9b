//! The `@` file finder: the workspace's files (as `git` would see them: .gitignore and
//! .ignore respected, hidden entries skipped), ranked by nucleo's fuzzy path matcher.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use std::path::Path;

pub struct FileFinder {
    files: Vec<String>,
    matcher: Matcher,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatch {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// Char indices of the matched characters, for highlighting.
    pub indices: Vec<usize>,
}

impl FileFinder {
    /// Walks `root` for up to `limit` files.
    pub fn scan(root: &Path, limit: usize) -> FileFinder {
        let mut files = Vec::new();
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .require_git(false)
            .build();
        for entry in walker.flatten() {
            if files.len() >= limit {
                break;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if let Ok(relative) = entry.path().strip_prefix(root) {
                let path: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                files.push(path.join("/"));
            }
        }
        files.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
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

    /// The best `limit` files for `query`: by score, then shorter path, then name. An
    /// empty query lists the shortest paths.
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
                let score = pattern.score(Utf32Str::new(path, &mut buf), &mut self.matcher)?;
                Some((score, path))
            })
            .collect();
        // Files are sorted by length then name, and the sort is stable.
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, path)| {
                let mut indices = Vec::new();
                pattern.indices(
                    Utf32Str::new(path, &mut buf),
                    &mut self.matcher,
                    &mut indices,
                );
                indices.sort_unstable();
                indices.dedup();
                FileMatch {
                    path: path.clone(),
                    indices: indices.into_iter().map(|i| i as usize).collect(),
                }
            })
            .collect()
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

    #[test]
    fn ignored_and_hidden_files_are_left_out() {
        let dir = tree(&[
            "src/main.rs",
            "target/debug/main.rs",
            ".env",
            "docs/guide.md",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let mut finder = FileFinder::scan(dir.path(), 100);
        let all: Vec<String> = finder.search("", 10).into_iter().map(|m| m.path).collect();
        assert_eq!(all, vec!["src/main.rs", "docs/guide.md"]);
    }

    #[test]
    fn fuzzy_queries_rank_the_closest_path_first_and_mark_matches() {
        let dir = tree(&["src/main.rs", "src/more/stuff/readme.txt", "mrs.txt.bak/x"]);
        let mut finder = FileFinder::scan(dir.path(), 100);
        let found = finder.search("main", 5);
        assert_eq!(found[0].path, "src/main.rs");
        assert_eq!(found[0].indices, vec![4, 5, 6, 7]);
        assert!(finder.search("zzz", 5).is_empty());
    }

    #[test]
    fn limits_are_respected() {
        let names: Vec<String> = (0..30).map(|i| format!("f{i}.rs")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = tree(&refs);
        let mut finder = FileFinder::scan(dir.path(), 10);
        assert_eq!(finder.len(), 10);
        assert_eq!(finder.search("f", 3).len(), 3);
    }
}
