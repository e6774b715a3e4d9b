//! Files a request creates or moves, read from its words.
//!
//! Asked "Add a .gitignore that ignores node_modules.", a 0.5B model read `index.js`,
//! tried to rewrite it, and answered with a shell command to run; asked "Rename
//! config.yml to config.yaml.", it invented a tool and then edited `config.yml` in place.
//! Neither request can be met by rewriting a file that exists. So the turn's end reads
//! two more shapes from the prompt:
//!
//! - a file it asks to create: a path that does not exist, written right after a word
//!   that introduces a new thing (`a .gitignore`, `create hello.py`, `a file called
//!   notes.md`). Not any missing path: "Add a link to example.com in README.md" names a
//!   host, "bump it to 1.3.0" a version, and "Add .env to .gitignore" a line of a file.
//! - a file it asks to move or rename: `rename config.yml to config.yaml`, `move util.py
//!   into lib/`: the word before the existing file is the verb (or `file`), the word
//!   after it `to`, `into` or `as`, and then the new path, which must not exist yet (or
//!   be a directory, which the file goes into).

use super::answer::{code_block, without_caption};
use super::py_imports::with_missing_imports;
use crate::intent::{bare_word, path_word};

/// Words after which a path names a thing the sentence brings into being.
const INTRODUCING: &[&str] = &[
    "a", "an", "new", "create", "creates", "add", "adds", "file", "called", "named", "write",
    "make",
];

/// Words that say what kind of new file comes next, between a word of [`INTRODUCING`]
/// and the path ("a script count.py", "a new Python module utils.py").
const DESCRIBING: &[&str] = &[
    "script",
    "module",
    "program",
    "page",
    "config",
    "helper",
    "class",
    "python",
    "bash",
    "shell",
    "node",
    "javascript",
    "typescript",
    "small",
    "simple",
    "short",
    "empty",
    "plain",
    "text",
    "json",
    "yaml",
    "markdown",
    "html",
    "css",
];

/// Words after which a path is the file a sentence moves.
const MOVING: &[&str] = &["rename", "renames", "move", "moves", "mv", "file"];

/// Words between a moved file and where it goes.
const TO: &[&str] = &["to", "into", "as"];

/// Words that may come between those and the place (`into the docs/ folder`).
const ARTICLES: &[&str] = &["the", "a", "an"];

/// The words of `prompt`, as written, with each one's bare lower-case form.
fn tokens(prompt: &str) -> Vec<(&str, String)> {
    prompt
        .split_whitespace()
        .map(|token| (token, bare_word(token).to_lowercase()))
        .collect()
}

/// Whether `word` is written like a file's path, not a version (`1.3.0`), an
/// abbreviation (`e.g`), a host (`example.com`) or an address: its last part has a name
/// and an extension of letters, or is a dotfile (`.gitignore`).
fn file_like(word: &str) -> bool {
    if word.contains("://") || word.contains('@') || word.ends_with('/') {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    const HOSTS: &[&str] = &["com", "org", "net", "io", "dev", "edu", "gov"];
    // A dotfile's whole name follows its dot (`.dockerignore`, `.gitattributes`).
    let longest = if stem.is_empty() { 24 } else { 10 };
    let extension_ok = !extension.is_empty()
        && extension.len() <= longest
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic())
        && !HOSTS.contains(&extension.to_ascii_lowercase().as_str());
    let dotfile = stem.is_empty() && extension.len() >= 2;
    let named = stem.len() >= 2
        || (stem.len() == 1
            && stem.chars().all(|c| c.is_ascii_alphabetic())
            && extension.len() > 1);
    extension_ok && (dotfile || named)
}

/// The paths `prompt` introduces as new things (see the module's documentation), as
/// written, each once. Whether each one exists is the caller's to ask.
pub(super) fn introduced_paths(prompt: &str) -> Vec<&str> {
    let tokens = tokens(prompt);
    let mut paths: Vec<&str> = Vec::new();
    for (at, (token, _)) in tokens.iter().enumerate().skip(1) {
        let Some(path) = path_word(token).filter(|p| file_like(p)) else {
            continue;
        };
        let described = tokens[..at]
            .iter()
            .rev()
            .take_while(|(_, word)| DESCRIBING.contains(&word.as_str()))
            .count()
            .min(2);
        let Some(before) = at.checked_sub(described + 1) else {
            continue;
        };
        if INTRODUCING.contains(&tokens[before].1.as_str())
            && !added_to_a_file(&tokens[before..])
            && !paths.contains(&path)
        {
            paths.push(path);
        }
    }
    paths
}

/// Whether `words` read "add X to Y" with `Y` a file: `X` is what goes into `Y` ("Add
/// .env to .gitignore"), not a new file.
fn added_to_a_file(words: &[(&str, String)]) -> bool {
    added_into(words).is_some()
}

/// `X` and `Y` where `words` start "add X to Y", `X` written like a path and `Y` a file.
fn added_into<'a>(words: &[(&'a str, String)]) -> Option<(&'a str, &'a str)> {
    match words {
        [(_, verb), (what, _), (_, to), (place, _), ..]
            if matches!(verb.as_str(), "add" | "adds")
                && matches!(to.as_str(), "to" | "into" | "in") =>
        {
            Some((path_word(what)?, path_word(place).filter(|p| file_like(p))?))
        }
        _ => None,
    }
}

/// Each path `prompt` asks to add into another file, with that file, as written ("Add
/// .env to .gitignore" gives `.env` and `.gitignore`).
pub(super) fn paths_added_into_files(prompt: &str) -> Vec<(&str, &str)> {
    let tokens = tokens(prompt);
    (0..tokens.len())
        .filter_map(|at| added_into(&tokens[at..]))
        .collect()
}

/// The file `prompt` asks to move or rename, and where to, as written (see the module's
/// documentation): the first such pair. The place is a path, or a plain word, which
/// the caller takes only for an existing directory (`into docs`).
pub(super) fn moved_file(prompt: &str) -> Option<(&str, &str)> {
    let tokens = tokens(prompt);
    tokens.windows(3).enumerate().find_map(|(at, window)| {
        let [verb, (from, _), (_, to_word)] = window else {
            return None;
        };
        if !MOVING.contains(&verb.1.as_str()) || !TO.contains(&to_word.as_str()) {
            return None;
        }
        let from = path_word(from).filter(|p| file_like(p))?;
        let place = tokens[at + 3..]
            .iter()
            .find(|(_, word)| !ARTICLES.contains(&word.as_str()))?;
        let to = bare_word(place.0);
        let plain = !to.is_empty()
            && to
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
        let path = path_word(place.0).filter(|p| file_like(p) || p.ends_with('/'));
        path.or(plain.then_some(to))
            .filter(|to| *to != from)
            .map(|to| (from, to))
    })
}

/// Whether `to`, as [`moved_file`] gives it, must be a directory: a plain word.
pub(super) fn names_a_directory_only(to: &str) -> bool {
    path_word(to).is_none()
}

/// Words that ask for what follows them to go.
const DELETING: &[&str] = &["delete", "remove", "rm", "erase", "unlink"];

/// Words that may come between such a word and the file (`delete the file x.log`).
const BEFORE_FILE: &[&str] = &["the", "file", "unused", "old"];

/// Words that, after a word that asks for something to go, mean the one file the
/// request names ("old_helpers.py is not used anymore, remove it.").
const PRONOUNS: &[&str] = &["it", "this", "that"];

/// Words after such a pronoun that make it a part of another file ("remove it from
/// requirements.txt").
const PART_OF: &[&str] = &["from", "in", "inside", "out"];

/// The files `prompt` asks to delete, as written: a path right after `delete`, `remove`,
/// `rm`, `erase` or `unlink`, with at most `the`, `file`, `unused` or `old` between
/// ("Delete old_helpers.py"), and the paths listed after it ("remove a.log, b.log and
/// c.log"), or the one path the prompt names when such a word is followed by `it`
/// ("old_helpers.py is not used anymore, remove it."). Not a part of a file: in "Remove
/// the DEBUG line from settings.py" the path follows `from`, and "remove it from
/// requirements.txt" takes something out of it.
pub(super) fn deleted_files(prompt: &str) -> Vec<&str> {
    deletions(prompt).0
}

/// The files `prompt` asks to delete, when nothing else is asked to go: each word of it
/// that asks for something to go ([`crate::intent::removal_words`]) is one of
/// [`DELETING`] with files for its object. Asked "Delete old_helpers.py, nothing uses
/// it.", a 0.5B model deleted `helpers.py`; "Delete old.py and clean up the build folder"
/// names no file for its second verb, and gives `None`.
pub(super) fn only_deleted_files(prompt: &str) -> Option<Vec<&str>> {
    let (files, verbs_with_files) = deletions(prompt);
    let only = !files.is_empty() && verbs_with_files == crate::intent::removal_words(prompt);
    only.then_some(files)
}

/// [`deleted_files`], and how many of the words that ask for deletion name files.
fn deletions(prompt: &str) -> (Vec<&str>, usize) {
    let tokens = tokens(prompt);
    let mut paths: Vec<&str> = Vec::new();
    for path in tokens
        .iter()
        .filter_map(|(token, _)| path_word(token).filter(|p| file_like(p)))
    {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    let file_at = |at: usize| {
        tokens
            .get(at)
            .and_then(|(token, _)| path_word(token).filter(|p| file_like(p)))
    };
    let mut files = Vec::new();
    let mut verbs_with_files = 0;
    for (at, (_, word)) in tokens.iter().enumerate() {
        if !DELETING.contains(&word.as_str()) {
            continue;
        }
        let mut object = at + 1;
        while tokens
            .get(object)
            .is_some_and(|(_, word)| BEFORE_FILE.contains(&word.as_str()))
        {
            object += 1;
        }
        let Some((_, word)) = tokens.get(object) else {
            continue;
        };
        let part_of = tokens
            .get(object + 1)
            .is_some_and(|(_, next)| PART_OF.contains(&next.as_str()));
        let mut named = match file_at(object) {
            Some(path) => vec![path],
            None if PRONOUNS.contains(&word.as_str()) && !part_of && paths.len() == 1 => {
                vec![paths[0]]
            }
            None => continue,
        };
        // The rest of a list: `a.log, b.log and c.log`.
        let mut next = object + 1;
        while let Some((_, word)) = tokens.get(next) {
            if let Some(path) = file_at(next) {
                named.push(path);
            } else if !LIST_JOINERS.contains(&word.as_str()) {
                break;
            }
            next += 1;
        }
        verbs_with_files += 1;
        for path in named {
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }
    (files, verbs_with_files)
}

/// Words between the paths of a list.
const LIST_JOINERS: &[&str] = &["and", "or", "plus", "&", ""];

/// Where a file named `name` goes when moved to `to`: into it when it is a directory.
pub(super) fn destination(to: &str, name: &str, to_is_dir: bool) -> String {
    if to_is_dir {
        format!("{}/{name}", to.trim_end_matches('/'))
    } else {
        to.to_owned()
    }
}

/// The files the request names, as they were when it was made, shown before it: what a
/// new file or a moved function is made from.
pub(super) fn shown_files(files: &[(String, String)]) -> String {
    files
        .iter()
        .map(|(shown, text)| super::fenced_file(shown, text))
        .collect()
}

/// The request for a new file's text: the other files the request names, the person's
/// words, and what to reply with.
pub(super) fn creation_prompt(context: &[(String, String)], prompt: &str, shown: &str) -> String {
    format!(
        "{}{}\nReply with the complete content of the new file {shown}, all of it, in one \
         code block.",
        shown_files(context),
        prompt.trim()
    )
}

/// The new file's text in `answer`: its first complete code block without a caption
/// naming the file; nothing when there is none, it is blank, or a `.json` file's text
/// is not JSON. A Python file gets the standard imports it uses and leaves out.
pub(super) fn read_creation(answer: &str, shown: &str) -> Option<String> {
    let block = without_caption(code_block(answer)?, "", shown);
    if block.trim().is_empty() {
        return None;
    }
    if shown.ends_with(".json") && serde_json::from_str::<serde_json::Value>(block).is_err() {
        return None;
    }
    if shown.ends_with(".py") {
        return Some(with_missing_imports("", block));
    }
    Some(block.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_after_a_word_that_introduces_something_is_a_file_to_create() {
        assert_eq!(
            introduced_paths("Add a .gitignore that ignores node_modules."),
            vec![".gitignore"]
        );
        assert_eq!(
            introduced_paths("Create hello.py that prints hi, and a file called `notes.md`."),
            vec!["hello.py", "notes.md"]
        );
        assert_eq!(
            introduced_paths("Add a test file tests/test_calc.py for add in calc.py."),
            vec!["tests/test_calc.py"]
        );
        assert_eq!(
            introduced_paths("Add a .dockerignore file that excludes .git."),
            vec![".dockerignore"]
        );
        assert_eq!(
            introduced_paths("Create a script count.py, and a new Python module lib/u.py."),
            vec!["count.py", "lib/u.py"]
        );
        assert_eq!(
            introduced_paths("Add a .dockerignore file that excludes .git."),
            vec![".dockerignore"]
        );
    }

    #[test]
    fn hosts_versions_and_paths_the_sentence_only_mentions_are_not_files_to_create() {
        for prompt in [
            "Add a link to example.com in README.md.",
            "Bump the version to 1.3.0 in package.json.",
            "Add a note, e.g. a warning, to calc.py.",
            "Add a http://example.org/x.py link.",
            "Add a 2.0 section.",
            "Fix the bug in calc.py.",
            "Add .env to .gitignore.",
            "Add `dist/` and *.log into the .gitignore, and add venv.py in setup.cfg.",
        ] {
            assert_eq!(introduced_paths(prompt), Vec::<&str>::new(), "{prompt}");
        }
    }

    #[test]
    fn a_path_added_to_a_file_is_what_goes_into_it() {
        assert_eq!(
            paths_added_into_files("Please add .env to .gitignore, and add `dist/` to it."),
            vec![(".env", ".gitignore")]
        );
        assert_eq!(
            paths_added_into_files("Add a .env file to the project."),
            Vec::<(&str, &str)>::new()
        );
    }

    #[test]
    fn a_file_moved_or_renamed_is_the_verbs_object_and_goes_where_to_says() {
        assert_eq!(
            moved_file("Rename config.yml to config.yaml."),
            Some(("config.yml", "config.yaml"))
        );
        assert_eq!(
            moved_file("Please move the file `util.py` into lib/."),
            Some(("util.py", "lib/"))
        );
        assert_eq!(
            moved_file("Move notes.txt into the docs folder."),
            Some(("notes.txt", "docs"))
        );
        assert!(names_a_directory_only("docs") && !names_a_directory_only("docs/"));
        assert_eq!(
            moved_file("Rename .env to .env.example."),
            Some((".env", ".env.example"))
        );
        // A function moved between files is not a file moved.
        assert_eq!(moved_file("Move helper from a.py to b.py."), None);
        assert_eq!(moved_file("Rename fetch to download in net.py."), None);
        assert_eq!(destination("lib/", "util.py", true), "lib/util.py");
        assert_eq!(destination("b.py", "a.py", false), "b.py");
    }

    #[test]
    fn a_file_to_delete_is_the_path_right_after_the_word_that_asks_for_it() {
        assert_eq!(
            deleted_files("Delete old_helpers.py, nothing uses it."),
            vec!["old_helpers.py"]
        );
        assert_eq!(
            deleted_files("Please remove the file `debug.log` and rm tmp/a.txt."),
            vec!["debug.log", "tmp/a.txt"]
        );
        assert_eq!(
            deleted_files("old_helpers.py is not used anymore, remove it."),
            vec!["old_helpers.py"]
        );
        assert_eq!(
            deleted_files("Delete a.log, b.log and `c.log`, then run the tests."),
            vec!["a.log", "b.log", "c.log"]
        );
        for prompt in [
            "Find requests in setup.py and remove it from requirements.txt.",
            "Compare a.py and b.py, then delete it.",
            "Remove the DEBUG line from settings.py.",
            "Delete the unused import in app.py.",
            "Remove requests from requirements.txt.",
        ] {
            assert_eq!(deleted_files(prompt), Vec::<&str>::new(), "{prompt}");
        }
    }

    #[test]
    fn only_the_files_a_deletion_names_when_it_names_them_all() {
        assert_eq!(
            only_deleted_files("Delete old_helpers.py, nothing uses it."),
            Some(vec!["old_helpers.py"])
        );
        assert_eq!(
            only_deleted_files("Remove a.log and b.log."),
            Some(vec!["a.log", "b.log"])
        );
        for prompt in [
            // Something else goes too, or what goes is not named as a file.
            "Delete old.py and clean up the build folder.",
            "Delete old.py and get rid of the cache.",
            "Rename helpers.py to utils.py and delete old.py.",
            "Delete the build directory.",
            "Remove the DEBUG line from settings.py.",
            "Fix app.py.",
        ] {
            assert_eq!(only_deleted_files(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn a_new_files_text_is_its_answers_code_block() {
        assert_eq!(
            read_creation("Here:\n```\n.gitignore\nnode_modules/\n```", ".gitignore"),
            Some("node_modules/\n".to_owned())
        );
        assert_eq!(read_creation("node_modules/", ".gitignore"), None);
        assert_eq!(read_creation("```\n\n```", ".gitignore"), None);
        assert_eq!(read_creation("```json\n{\"a\": }\n```", "a.json"), None);
        assert_eq!(
            creation_prompt(
                &[("calc.py".into(), "x = 1".into())],
                " Add a test. ",
                "t.py"
            ),
            "calc.py:\n```\nx = 1\n```\n\nAdd a test.\nReply with the complete content of the \
             new file t.py, all of it, in one code block."
        );
    }
}
