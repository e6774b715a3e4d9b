//! Paths a shell command names. The scan skips what `.gitignore` ignores (build output,
//! dependencies) because walking it on every call would cost more than everything else;
//! a path the command itself names is looked at anyway, before and after it runs, so
//! `rm -rf build` or `echo x > target/out.txt` can be undone.
//!
//! This is a deliberately simple word splitter, not a parser: a wrong guess costs one
//! stat, and a path it misses is at worst one the scan does not cover either.

use std::path::{Component, Path, PathBuf};

/// Most names taken from one command.
const MAX_NAMES: usize = 64;

/// Workspace-relative paths `command` may name, normalized, inside `root` only.
pub fn named_paths(command: &str, root: &Path) -> Vec<String> {
    named(command, root).paths
}

/// What a command names, and which of those names are only the directory it works in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    /// Every named path (also the directories entered), 64 at most.
    pub paths: Vec<String>,
    /// Directories the command only `cd`s into. A change below one is not one the
    /// command named: `cd web && npm test` names no file under `web/`.
    pub entered: Vec<String>,
}

impl Named {
    /// Whether the command names `rel`: the path itself, or a directory above it that
    /// it names as a word (`rm -rf build`, `mv lib src`, `sed -i … src/*.rs`).
    pub fn covers(&self, rel: &str) -> bool {
        if self.paths.iter().any(|p| p == rel) {
            return true;
        }
        let mut dir = rel;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if self.paths.iter().any(|p| p == parent) && !self.entered.iter().any(|e| e == parent) {
                return true;
            }
            dir = parent;
        }
        false
    }

    /// Adds another command's names (one batch may run several).
    pub fn extend(&mut self, other: Named) {
        // A directory one command enters and another names as a word is named.
        let as_word = |n: &Named, rel: &String| n.paths.contains(rel) && !n.entered.contains(rel);
        let mut entered = Vec::new();
        for rel in self.entered.iter().chain(&other.entered) {
            if !as_word(self, rel) && !as_word(&other, rel) {
                push(&mut entered, rel.clone());
            }
        }
        for rel in other.paths {
            push(&mut self.paths, rel);
        }
        self.entered = entered;
    }
}

/// [`named_paths`], with the directories entered told apart.
pub fn named(command: &str, root: &Path) -> Named {
    let mut out: Vec<String> = Vec::new();
    let mut entered: Vec<String> = Vec::new();
    let mut as_word: Vec<String> = Vec::new();
    let mut cwd: Option<String> = None;
    let mut after_cd = false;
    for word in words(command) {
        if after_cd {
            after_cd = false;
            cwd = normalize(root, None, &word);
            if let Some(dir) = &cwd {
                push(&mut out, dir.clone());
                push(&mut entered, dir.clone());
            }
            continue;
        }
        if word == "cd" || word == "pushd" {
            after_cd = true;
            continue;
        }
        for part in candidates(&word) {
            if let Some(rel) = normalize(root, None, part) {
                push(&mut as_word, rel.clone());
                push(&mut out, rel);
            }
            if let Some(dir) = cwd.as_deref() {
                if let Some(rel) = normalize(root, Some(dir), part) {
                    push(&mut as_word, rel.clone());
                    push(&mut out, rel);
                }
            }
        }
        if out.len() >= MAX_NAMES {
            break;
        }
    }
    out.truncate(MAX_NAMES);
    entered.retain(|e| !as_word.contains(e) && out.contains(e));
    Named {
        paths: out,
        entered,
    }
}

fn push(out: &mut Vec<String>, rel: String) {
    if !out.contains(&rel) {
        out.push(rel);
    }
}

/// The pieces of one word that may be paths: the word, and what follows a `=` in it
/// (`--out=dist/x`); a glob is cut to the directory before its first wildcard.
fn candidates(word: &str) -> Vec<&str> {
    let mut parts = vec![word];
    if let Some((_, value)) = word.split_once('=') {
        parts.push(value);
    }
    parts
        .into_iter()
        .filter(|p| !p.is_empty() && !p.starts_with('-') && !p.contains('$'))
        .map(|p| match p.find(['*', '?', '[', '{']) {
            Some(i) => p[..i].rsplit_once('/').map_or("", |(dir, _)| dir),
            None => p,
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// `word` as a path relative to `root` (and to `cwd` inside it), `.` and `..` resolved
/// lexically; `None` when it leads outside or names the root itself (the scan covers
/// that) or cannot be recorded.
fn normalize(root: &Path, cwd: Option<&str>, word: &str) -> Option<String> {
    let path = Path::new(word);
    let mut parts: Vec<String> = Vec::new();
    let rest: PathBuf = if path.is_absolute() {
        path.strip_prefix(root).ok()?.to_path_buf()
    } else {
        if let Some(cwd) = cwd {
            parts.extend(cwd.split('/').map(str::to_owned));
        }
        path.to_path_buf()
    };
    for component in rest.components() {
        match component {
            Component::Normal(name) => parts.push(name.to_str()?.to_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    let rel = parts.join("/");
    super::state::valid_rel(&rel).then_some(rel)
}

/// Splits a command into words: blanks and shell operators separate, quotes group and
/// are removed, a backslash escapes the next character.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (None, c) if c.is_whitespace() || ";|&()<>`".contains(c) => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
        if out.len() > 4 * MAX_NAMES {
            break;
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_words_redirects_options_and_cd() {
        let root = Path::new("/w");
        assert_eq!(
            named_paths("rm -rf build && echo hi > target/out.txt", root),
            ["rm", "build", "echo", "hi", "target/out.txt"]
        );
        assert_eq!(
            named_paths("cd sub && mv a.txt 'b c.txt'", root),
            [
                "sub",
                "mv",
                "sub/mv",
                "a.txt",
                "sub/a.txt",
                "b c.txt",
                "sub/b c.txt"
            ]
        );
        assert_eq!(
            named_paths("tool --out=dist/app.js /w/gen/x.rs", root),
            ["tool", "dist/app.js", "gen/x.rs"]
        );
        assert_eq!(named_paths("rm target/*.o", root), ["rm", "target"]);
    }

    #[test]
    fn a_named_directory_covers_what_is_under_it_an_entered_one_does_not() {
        let root = Path::new("/w");
        let n = named("mv lib src && cd web && npm test", root);
        assert!(n.covers("src/deep/b.rs") && n.covers("lib") && n.covers("web"));
        assert!(!n.covers("web/src/app.ts"), "{n:?}");
        assert!(!n.covers("srcx/a.rs") && !n.covers("Cargo.toml"));
        assert!(named("cd web && rm -rf ../web/dist", root).covers("web/dist/a.js"));
        assert!(!named("cargo fmt", root).covers("src/lib.rs"));
        let mut batch = named("cd web && npm test", root);
        batch.extend(named("prettier --write web", root));
        assert!(batch.covers("web/src/app.ts"), "another command names web");
    }

    #[test]
    fn nothing_outside_or_inside_git_is_named() {
        let root = Path::new("/w");
        let named = named_paths(
            "cp ../x /etc/passwd a/../../y .git/config $HOME/z . ./",
            root,
        );
        assert_eq!(named, ["cp"]);
    }
}
