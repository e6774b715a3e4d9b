//! Is the repository's own git configuration safe for read-only git commands?
//!
//! A repository's `.git/config` is not the person's: it may come with a downloaded tree,
//! or be written by the model. Many keys make git run a program during `git status`,
//! `git diff` or `git log` (`core.fsmonitor`, `core.pager`, `diff.external`,
//! `diff.*.textconv`, `filter.*.process`, `alias.*`, `include.path`, ...), and a
//! `post-index-change` hook runs when `git status` refreshes the index. So the keys a
//! repository may set for a git command to run unasked are an allow-list of those that
//! only change formatting, remotes, branches and identity; anything else makes git
//! commands need the person's approval. The person's global and system configuration is
//! trusted and not read here.
//!
//! The files are read by git itself (`git config --file F --list --name-only`, with no
//! global or system configuration and a fixed `HOME`), so the keys checked are the keys
//! git will use: a hand-written reader that disagrees with git on a continuation line or
//! a comment is a key it never sees. A file git cannot read is unsafe. Listing a file runs
//! nothing it sets (`--file` follows no `include`).

use std::path::{Path, PathBuf};

/// Sections any of whose keys (with or without a subsection) are harmless.
const SAFE_SECTIONS: &[&str] = &[
    "branch",
    "user",
    "author",
    "committer",
    "init",
    "pull",
    "push",
    "fetch",
    "rebase",
    "status",
    "log",
    "color",
    "advice",
    "gc",
    "pack",
    "index",
    "feature",
    "extensions",
    "lfs",
    "commit",
    "tag",
    "format",
    "grep",
    "blame",
    "column",
    "i18n",
    "checkout",
    "worktree",
    "rerere",
    "transfer",
    "protocol",
    "http",
    "url",
    "safe",
    "am",
    "apply",
    "clean",
    "maintenance",
    "gui",
];

/// `core` keys that change no program git runs and no path it reads.
const SAFE_CORE: &[&str] = &[
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "autocrlf",
    "eol",
    "safecrlf",
    "sparsecheckout",
    "sparsecheckoutcone",
    "longpaths",
    "quotepath",
    "compression",
    "loosecompression",
    "bigfilethreshold",
    "checkstat",
    "trustctime",
    "untrackedcache",
    "splitindex",
    "commitgraph",
    "multipackindex",
    "preloadindex",
    "abbrev",
    "whitespace",
    "warnambiguousrefs",
    "protecthfs",
    "protectntfs",
    "fscache",
    "commentchar",
    "commentstring",
    "fsync",
    "fsyncmethod",
];

/// `remote.NAME.*` keys that only describe where the remote is.
const SAFE_REMOTE: &[&str] = &[
    "url",
    "pushurl",
    "fetch",
    "push",
    "tagopt",
    "prune",
    "prunetags",
    "mirror",
    "skipdefaultupdate",
    "skipfetchall",
    "promisor",
    "partialclonefilter",
    "followremotehead",
];

const SAFE_SUBMODULE: &[&str] = &[
    "url",
    "active",
    "branch",
    "ignore",
    "fetchrecursesubmodules",
    "shallow",
];

/// Why git commands run from `dir` are not safe to run unasked, or `None`.
pub(crate) fn danger(dir: &Path) -> Option<String> {
    let (git_dir, common_dir) = find_git_dir(dir)?;
    let mut files = vec![
        git_dir.join("config"),
        git_dir.join("config.worktree"),
        common_dir.join("config"),
    ];
    files.extend(submodule_configs(&common_dir.join("modules")));
    for file in files {
        if !file.exists() && file.symlink_metadata().is_err() {
            continue;
        }
        let key = match config_keys(&file) {
            Ok(keys) => keys.into_iter().find(|k| !is_safe_key(k)),
            Err(why) => Some(why),
        };
        if let Some(key) = key {
            return Some(format!(
                "the repository's git config ({}) sets `{key}`, which can make git run a program",
                file.display()
            ));
        }
    }
    let hook = common_dir.join("hooks").join("post-index-change");
    hook.is_file().then(|| {
        format!(
            "the repository has a `{}` hook, which `git status` can run",
            hook.display()
        )
    })
}

/// The repository git uses when run in `dir` (its git directory, canonical), found as
/// git finds it: at each level up, `.git` (a directory, or a `gitdir:` file), else the
/// directory itself when it is a repository (a bare one).
pub(crate) fn repository_of(dir: &Path) -> Option<PathBuf> {
    let (git_dir, _) = find_git_dir(dir)?;
    git_dir.canonicalize().ok().or(Some(git_dir))
}

/// The git directory for `dir` and its common directory (they differ in a linked
/// worktree).
fn find_git_dir(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for ancestor in dir.ancestors() {
        let dot_git = ancestor.join(".git");
        let git_dir = if dot_git.is_dir() {
            dot_git
        } else if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            ancestor.join(target)
        } else if is_git_dir(ancestor) {
            ancestor.to_path_buf()
        } else {
            continue;
        };
        let common = std::fs::read_to_string(git_dir.join("commondir"))
            .ok()
            .map(|c| git_dir.join(c.trim()))
            .unwrap_or_else(|| git_dir.clone());
        return Some((git_dir, common));
    }
    None
}

/// The keys of one config file as git reads them (`section.sub.key`), or why git could
/// not read it.
fn config_keys(file: &Path) -> Result<Vec<String>, String> {
    let output = std::process::Command::new("git")
        .args([
            "config",
            "--no-includes",
            "--null",
            "--name-only",
            "--list",
            "--file",
        ])
        .arg(file)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("(git could not be run to read it: {e})"))?;
    if !output.status.success() {
        return Err("(a file git cannot read)".into());
    }
    Ok(output
        .stdout
        .split(|b| *b == 0)
        .filter(|k| !k.is_empty())
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect())
}

/// `config` files of submodules under `.git/modules` (nested ones too).
fn submodule_configs(modules: &Path) -> Vec<PathBuf> {
    if !modules.is_dir() {
        return Vec::new();
    }
    ignore::WalkBuilder::new(modules)
        .standard_filters(false)
        .max_depth(Some(12))
        .build()
        .flatten()
        .filter(|e| e.file_name() == "config" && e.path().parent().is_some_and(is_git_dir))
        .map(|e| e.into_path())
        .collect()
}

fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir()
}

/// Whether a key as git lists it (`section.key`, `section.sub.key`; the subsection may
/// hold dots) is on the allow-list.
fn is_safe_key(full: &str) -> bool {
    let Some((section, rest)) = full.split_once('.') else {
        return false;
    };
    let (subsection, key) = match rest.rsplit_once('.') {
        Some((sub, key)) => (Some(sub), key),
        None => (None, rest),
    };
    is_safe(
        &section.to_ascii_lowercase(),
        subsection,
        &key.to_ascii_lowercase(),
    )
}

fn is_safe(section: &str, subsection: Option<&str>, key: &str) -> bool {
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return false;
    }
    match (section, subsection) {
        ("core", None) => SAFE_CORE.contains(&key),
        ("remote", Some(_)) => SAFE_REMOTE.contains(&key),
        ("remote", None) => key == "pushdefault",
        ("submodule", Some(_)) => SAFE_SUBMODULE.contains(&key),
        ("submodule", None) => key == "recurse" || key == "fetchjobs",
        // `merge.NAME.driver` and `diff.NAME.command/textconv` run programs.
        ("merge" | "diff", None) => key != "external" && key != "tool",
        (section, _) => SAFE_SECTIONS.contains(&section),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first key git reads from `text` that is not on the allow-list.
    fn first_unsafe_key(text: &str) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        std::fs::write(&file, text).unwrap();
        match config_keys(&file) {
            Ok(keys) => keys.into_iter().find(|k| !is_safe_key(k)),
            Err(why) => Some(why),
        }
    }

    #[test]
    fn a_fresh_clone_config_is_safe() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                    \tremote = origin\n\tmerge = refs/heads/main\n[lfs]\n\trepositoryformatversion = 0\n";
        assert_eq!(first_unsafe_key(text), None);
    }

    #[test]
    fn keys_that_run_programs_are_named() {
        for (text, key) in [
            ("[core]\n\tfsmonitor = ./x.sh\n", "core.fsmonitor"),
            ("[core]\npager = sh -c x\n", "core.pager"),
            ("[CORE]\nHooksPath = h\n", "core.hookspath"),
            ("[diff]\n\texternal = x\n", "diff.external"),
            ("[diff \"bin\"]\n\ttextconv = x\n", "diff.bin.textconv"),
            ("[filter \"f\"]\n\tclean = x\n", "filter.f.clean"),
            ("[alias]\n\tst = !sh\n", "alias.st"),
            ("[pager]\n\tlog = x\n", "pager.log"),
            ("[include]\n\tpath = ../x\n", "include.path"),
            ("[core] fsmonitor = x\n", "core.fsmonitor"),
            ("[core.x]\nfoo = 1\n", "core.x.foo"),
            (
                "[submodule \"s\"]\n\tupdate = !rm -rf /\n",
                "submodule.s.update",
            ),
            ("[remote \"o\"]\n\tuploadpack = x\n", "remote.o.uploadpack"),
            ("[gpg]\n\tprogram = x\n", "gpg.program"),
            (
                "[remote \"a.b\"]\n\treceivepack = x\n",
                "remote.a.b.receivepack",
            ),
        ] {
            assert_eq!(first_unsafe_key(text).as_deref(), Some(key), "{text}");
        }
    }

    #[test]
    fn continuations_and_comments_are_read_as_git_reads_them() {
        // A real continuation: the next line is part of the value.
        let text = "[user]\n\tname = a \\\n fsmonitor = x\n";
        assert_eq!(first_unsafe_key(text), None);
        // A backslash in a comment, or an escaped one, continues nothing: git reads the
        // next line (a section header) and the key under it.
        for text in [
            "[user]\n\tname = a ; \\\n[core]\n\tfsmonitor = x\n",
            "[user]\n\tname = a \\\\\n[core]\n\tfsmonitor = x\n",
        ] {
            assert_eq!(
                first_unsafe_key(text).as_deref(),
                Some("core.fsmonitor"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_file_git_cannot_read_is_unsafe() {
        assert!(first_unsafe_key("[core\nfilemode = 1\n").is_some());
        assert!(first_unsafe_key("[core]\n\tfilemode = \"1\n").is_some());
    }

    #[test]
    fn a_bare_repository_is_found_where_git_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let evil = root.join("evil");
        for d in ["objects", "refs"] {
            std::fs::create_dir_all(evil.join(d)).unwrap();
        }
        std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        assert_eq!(repository_of(&root.join("src")), Some(root.join(".git")));
        assert_eq!(repository_of(&evil), Some(evil.clone()));
    }
}
