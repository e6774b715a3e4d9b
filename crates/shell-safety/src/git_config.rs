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
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Some(key) = first_unsafe_key(&text) {
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

/// The git directory for `dir` and its common directory (they differ in a linked
/// worktree), found like git does: `.git` in `dir` or an ancestor, a directory or a
/// `gitdir:` file.
fn find_git_dir(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for ancestor in dir.ancestors() {
        let dot_git = ancestor.join(".git");
        let git_dir = if dot_git.is_dir() {
            dot_git
        } else if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            ancestor.join(target)
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

/// The first key of a git config file (as `section.sub.key`) outside the allow-list; a
/// line that cannot be read counts as unsafe.
pub(crate) fn first_unsafe_key(text: &str) -> Option<String> {
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    let mut continued = false;
    for raw in text.lines() {
        let line = raw.trim();
        if continued {
            continued = line.ends_with('\\');
            continue;
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let mut rest = line;
        if let Some(header) = line.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                return Some(line.to_owned());
            };
            let inner = &header[..end];
            (section, subsection) = match inner.split_once(char::is_whitespace) {
                Some((name, sub)) => (
                    name.to_ascii_lowercase(),
                    Some(sub.trim().trim_matches('"').to_owned()),
                ),
                None => match inner.split_once('.') {
                    Some((name, sub)) => (name.to_ascii_lowercase(), Some(sub.to_owned())),
                    None => (inner.to_ascii_lowercase(), None),
                },
            };
            rest = header[end + 1..].trim();
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
                continue;
            }
        }
        let key = rest
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        continued = rest.ends_with('\\');
        if !is_safe(&section, subsection.as_deref(), &key) {
            return Some(match &subsection {
                Some(sub) => format!("{section}.{sub}.{key}"),
                None => format!("{section}.{key}"),
            });
        }
    }
    None
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
        ] {
            assert_eq!(first_unsafe_key(text).as_deref(), Some(key), "{text}");
        }
    }

    #[test]
    fn continuation_lines_are_values_not_keys() {
        let text = "[user]\n\tname = a \\\n fsmonitor = x\n";
        assert_eq!(first_unsafe_key(text), None);
    }

    #[test]
    fn an_unreadable_header_is_unsafe() {
        assert!(first_unsafe_key("[core\nfilemode = 1\n").is_some());
    }
}
