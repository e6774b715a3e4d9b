//! The system prompt: saki's own short instructions, workspace facts, and the person's
//! project instructions (`AGENTS.md`). Built once per session so it stays byte-stable.

use std::path::{Path, PathBuf};

/// Cap on each AGENTS.md file and on all of them together.
pub const AGENTS_MD_FILE_MAX: usize = 8 * 1024;
pub const AGENTS_MD_TOTAL_MAX: usize = 16 * 1024;

/// Facts about the workspace the model should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceFacts {
    pub cwd: String,
    pub os: String,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    /// Branch name and whether the tree has uncommitted changes; `None` outside git.
    pub git: Option<(String, bool)>,
    /// The files at session start, shallowest first (see [`FileListing`]).
    pub files: FileListing,
}

impl WorkspaceFacts {
    pub fn gather(cwd: &Path) -> Self {
        Self {
            cwd: cwd.display().to_string(),
            os: std::env::consts::OS.to_owned(),
            date: civil_date(crate::store::now_secs()),
            git: git_state(cwd),
            files: FileListing::gather(cwd),
        }
    }
}

/// Files named in the system prompt: at most this many.
pub const LISTED_FILES_MAX: usize = 40;
/// The walk that counts the rest stops here.
const COUNTED_FILES_MAX: usize = 10_000;

/// Some of the workspace's files, for the system prompt. Models copy paths they see: a
/// model shown `config.json` edits it, one shown nothing edits `/etc/nginx/nginx.conf`.
/// Gathered once per session, like the rest of the prompt, so the prefix stays stable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileListing {
    /// Relative paths, shallowest first, then by name.
    pub shown: Vec<String>,
    /// Files not shown (up to the counting limit).
    pub more: usize,
}

impl FileListing {
    /// The workspace's files ([`saki_tools::suggest::workspace_files`]), at most three
    /// directories deep.
    pub fn gather(root: &Path) -> Self {
        let mut shown = saki_tools::suggest::workspace_files(root, 3, COUNTED_FILES_MAX);
        let more = shown.len().saturating_sub(LISTED_FILES_MAX);
        shown.truncate(LISTED_FILES_MAX);
        Self { shown, more }
    }

    fn line(&self) -> Option<String> {
        if self.shown.is_empty() {
            return None;
        }
        let mut line = format!("Files at session start: {}", self.shown.join(", "));
        if self.more + LISTED_FILES_MAX >= COUNTED_FILES_MAX {
            // The walk stopped counting: the number is a floor.
            line.push_str(&format!(" (and more than {} more)", self.more));
        } else if self.more > 0 {
            line.push_str(&format!(" (and {} more)", self.more));
        }
        Some(line)
    }
}

fn git_state(cwd: &Path) -> Option<(String, bool)> {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(cwd)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let branch = run(&["rev-parse", "--abbrev-ref", "HEAD"])?;
    let dirty = run(&["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    Some((branch, dirty))
}

/// Days since 1970-01-01 to a civil date (proleptic Gregorian), UTC.
pub fn civil_date(secs: u64) -> String {
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Instruction files that apply to `cwd`: the global one, then from the repository root
/// (the nearest ancestor with `.git`, else `root`) down to `cwd`. In each directory
/// `AGENTS.md`, or where there is none `CLAUDE.md` (projects set up for Claude Code keep
/// their rules there). A repository's file that leads outside the repository (a symlink
/// to `~/.aws/credentials`) is not read: it would go to the provider with every request.
pub fn agents_md_paths(root: &Path, cwd: &Path, global_dir: Option<&Path>) -> Vec<PathBuf> {
    let top = cwd
        .ancestors()
        .find(|a| a.join(".git").exists())
        .unwrap_or(root);
    let mut chain: Vec<&Path> = cwd.ancestors().take_while(|a| a.starts_with(top)).collect();
    chain.reverse();
    let inside = |path: &Path| {
        let top = top.canonicalize().unwrap_or_else(|_| top.to_path_buf());
        path.canonicalize().is_ok_and(|real| real.starts_with(&top))
    };
    let global = global_dir.and_then(instructions_in);
    let repository = chain
        .into_iter()
        .filter_map(instructions_in)
        .filter(|p| inside(p));
    global.into_iter().chain(repository).collect()
}

/// The instruction file of `dir`: `AGENTS.md`, else `CLAUDE.md`, if either is a file.
fn instructions_in(dir: &Path) -> Option<PathBuf> {
    ["AGENTS.md", "CLAUDE.md"]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// The project instructions section, size-capped with a note when cut.
pub fn project_instructions(paths: &[PathBuf]) -> String {
    let mut out = String::new();
    for path in paths {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let room = AGENTS_MD_TOTAL_MAX
            .saturating_sub(out.len())
            .min(AGENTS_MD_FILE_MAX);
        let body = saki_tools::common::prefix_at_boundary(text.trim(), room);
        out.push_str(&format!("\n\n## {}\n{body}", path.display()));
        if body.len() < text.trim().len() {
            out.push_str(&format!(
                "\n[...cut: {} of {} bytes shown]",
                body.len(),
                text.trim().len()
            ));
        }
        if out.len() >= AGENTS_MD_TOTAL_MAX {
            break;
        }
    }
    out
}

/// saki's system prompt. Short on purpose: small local models read it at 30–100
/// tokens per second before every first answer.
pub fn system_prompt(facts: &WorkspaceFacts, instructions: &str) -> String {
    let git = match &facts.git {
        Some((branch, true)) => format!("git branch {branch} (uncommitted changes)"),
        Some((branch, false)) => format!("git branch {branch} (clean)"),
        None => "not a git repository".to_owned(),
    };
    // The instructions first and the session's facts after them: a local server keeps the
    // prefix every session shares in its prompt cache (prompted tools go between the two).
    let mut prompt = format!(
        "You are saki, a coding agent in the user's terminal.\n\
         \n\
         Rules:\n\
         - Look before you answer: use read_file, ls, glob and grep to inspect files; do not guess their contents.\n\
         - Change files with edit (exact text replacement; old_string must match once) or write_file for new files.\n\
         - Use shell for builds, tests and git. Prefer short commands that finish.\n\
         - Paths are relative to the workspace. Call independent tools together.\n\
         - When a tool fails, read its message and adjust; do not repeat the same call.\n\
         - Once a tool result answers the question, stop calling tools and reply.\n\
         - Answer briefly and plainly. Say what you changed.\
         {session}\
         Workspace: {cwd} ({os}, {git}). Today is {date}.",
        session = saki_llm_client::prompted::SESSION_FACTS,
        cwd = facts.cwd,
        os = facts.os,
        date = facts.date,
    );
    if let Some(files) = facts.files.line() {
        prompt.push('\n');
        prompt.push_str(&files);
    }
    if !instructions.is_empty() {
        prompt.push_str("\n\n# Project instructions (AGENTS.md)");
        prompt.push_str(instructions);
    }
    prompt
}

/// Token estimate: about 4 ASCII characters per token; other characters count as one
/// token each (CJK and symbols tokenize densely).
pub fn estimate_tokens(text: &str) -> usize {
    if text.is_ascii() {
        return text.len().div_ceil(4);
    }
    let (ascii, other) = text.chars().fold((0usize, 0usize), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    ascii.div_ceil(4) + other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(951_782_400), "2000-02-29");
        assert_eq!(civil_date(1_795_305_600), "2026-11-22");
    }

    #[test]
    fn prompt_mentions_facts_and_estimates_are_sane() {
        let facts = WorkspaceFacts {
            cwd: "/w".into(),
            os: "linux".into(),
            date: "2026-11-22".into(),
            git: Some(("main".into(), true)),
            files: FileListing {
                shown: vec!["a.txt".into(), "src/b.rs".into()],
                more: 3,
            },
        };
        let p = system_prompt(&facts, "");
        assert!(
            p.contains("\nFiles at session start: a.txt, src/b.rs (and 3 more)"),
            "{p}"
        );
        // The facts come after the instructions every session shares, and start where
        // prompted tool calling puts its tool list.
        let facts_at = p.find(saki_llm_client::prompted::SESSION_FACTS).unwrap();
        assert!(p.find("Rules:").unwrap() < facts_at, "{p}");
        assert!(facts_at < p.find("/w (linux").unwrap(), "{p}");
        assert!(!p[..facts_at].contains("2026-11-22"), "{p}");
        assert!(
            p.contains("/w (linux, git branch main (uncommitted changes))")
                && p.contains("2026-11-22")
        );
        assert_eq!(system_prompt(&facts, ""), p, "byte-stable");
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("日本"), 2);
    }

    #[test]
    fn the_listing_is_shallowest_first_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/deep/z.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join(".env"), "").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "").unwrap();
        let listing = FileListing::gather(dir.path());
        assert_eq!(
            listing.shown,
            [".env", "README.md", "src/a.rs", "src/deep/z.rs"]
        );
        assert_eq!(listing.more, 0);
        for i in 0..LISTED_FILES_MAX {
            std::fs::write(dir.path().join(format!("f{i:02}.txt")), "").unwrap();
        }
        let listing = FileListing::gather(dir.path());
        assert_eq!(listing.shown.len(), LISTED_FILES_MAX);
        assert_eq!(listing.shown[1], "README.md");
        assert_eq!(listing.more, 4);
        assert_eq!(FileListing::default().line(), None);
        let huge = FileListing {
            shown: vec!["a".into()],
            more: COUNTED_FILES_MAX - LISTED_FILES_MAX,
        };
        assert!(huge.line().unwrap().ends_with(" (and more than 9960 more)"));
    }

    #[test]
    fn agents_md_from_global_and_root_down_with_caps() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sub = repo.join("crates/x");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("cfg")).unwrap();
        std::fs::write(dir.path().join("cfg/AGENTS.md"), "global rule").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "repo rule").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "x".repeat(20_000)).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "above the repo: ignored").unwrap();
        let paths = agents_md_paths(&repo, &sub, Some(&dir.path().join("cfg")));
        assert_eq!(
            paths,
            [
                dir.path().join("cfg/AGENTS.md"),
                repo.join("AGENTS.md"),
                sub.join("AGENTS.md")
            ]
        );
        let text = project_instructions(&paths);
        assert!(text.find("global rule").unwrap() < text.find("repo rule").unwrap());
        // CLAUDE.md where a directory has no AGENTS.md; never both; never outside.
        std::fs::write(repo.join("CLAUDE.md"), "claude rule").unwrap();
        std::fs::remove_file(sub.join("AGENTS.md")).unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub claude rule").unwrap();
        let paths = agents_md_paths(&repo, &sub, None);
        assert_eq!(paths, [repo.join("AGENTS.md"), sub.join("CLAUDE.md")]);
        std::fs::remove_file(sub.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("cfg/AGENTS.md"), sub.join("CLAUDE.md"))
            .unwrap();
        assert_eq!(agents_md_paths(&repo, &sub, None), [repo.join("AGENTS.md")]);
        assert!(
            text.contains("[...cut: 8192 of 20000 bytes shown]"),
            "{}",
            &text[text.len() - 60..]
        );
    }
}
