//! The workspace's roots: every path a tool, an `@path` reference or a shell command
//! names is resolved (symlinks followed) and must stay inside one of them.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("{path} is outside the workspace ({root})")]
    OutOfScope { path: String, root: String },
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("cannot resolve {path}: {message}")]
    Io { path: String, message: String },
}

/// Canonical roots; the first is where relative paths start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    roots: Vec<PathBuf>,
}

impl Roots {
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self {
            roots: vec![root.as_ref().canonicalize()?],
        })
    }

    /// Adds another root (`--add-dir`).
    pub fn add_root(&mut self, root: impl AsRef<Path>) -> std::io::Result<()> {
        self.roots.push(root.as_ref().canonicalize()?);
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.roots[0]
    }

    /// All canonical roots, the first one first.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn absolute(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            self.rooted_in_workspace(p)
                .unwrap_or_else(|| p.to_path_buf())
        } else {
            self.root().join(p)
        }
    }

    /// Small models often write workspace paths as if the workspace were `/` (`/docs`
    /// for `docs`), or as if it were one of its parents: they drop the workspace's last
    /// name from its absolute path (`/home/ann/config.json` in `/home/ann/shop`). Such a
    /// path that names nothing on this machine, while the rest of it after that parent
    /// (the nearest first) does exist under the first root, means the workspace one. It
    /// only resolves to a path that exists, and `check` still keeps it inside.
    ///
    /// They also copy the workspace's path with what follows it on the system prompt's
    /// line, `/home/ann/shop (linux, git branch main (clean))`, as a path (with `.txt`
    /// after it, at times): missing, and the first root's path then ` (` with nothing
    /// below it, it means the workspace itself.
    fn rooted_in_workspace(&self, p: &Path) -> Option<PathBuf> {
        if self.roots.iter().any(|r| p.starts_with(r)) || p.symlink_metadata().is_ok() {
            return None;
        }
        let annotated = p
            .to_str()
            .zip(self.root().to_str())
            .and_then(|(p, root)| p.strip_prefix(root))
            .is_some_and(|rest| {
                // The line's annotation, and at most a file ending after it: a path that
                // goes on below it (`… (x)/../etc`) is read as written.
                let tail = rest.rsplit_once(')').map_or(rest, |(_, tail)| tail);
                rest.starts_with(" (") && !tail.contains('/')
            });
        if annotated {
            return Some(self.root().to_path_buf());
        }
        let under_a_parent = self
            .root()
            .ancestors()
            .skip(1)
            .filter_map(|parent| p.strip_prefix(parent).ok())
            .map(|rest| self.root().join(rest))
            .find(|inside| inside.symlink_metadata().is_ok());
        under_a_parent.or_else(|| self.system_path_of_a_workspace_file(p))
    }

    /// A missing system path whose end names a file of the workspace, the longest end
    /// first: asked to change the port in the workspace's `nginx.conf`, a small model
    /// edits `/etc/nginx/nginx.conf`, where such files live on a server.
    fn system_path_of_a_workspace_file(&self, p: &Path) -> Option<PathBuf> {
        let parts: Vec<_> = p
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        (1..parts.len())
            .map(|skip| parts[skip..].iter().collect::<PathBuf>())
            .map(|end| self.root().join(end))
            .find(|inside| inside.is_file())
    }

    fn check(&self, original: &str, resolved: PathBuf) -> Result<PathBuf, ScopeError> {
        if self.roots.iter().any(|r| resolved.starts_with(r)) {
            Ok(resolved)
        } else {
            Err(ScopeError::OutOfScope {
                path: original.to_owned(),
                root: self.root().display().to_string(),
            })
        }
    }

    /// Resolves an existing path (following symlinks) inside the scope.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ScopeError> {
        let abs = self.absolute(path);
        match abs.canonicalize() {
            Ok(real) => self.check(path, real),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Say "outside" rather than "missing" for paths that point outside anyway.
                self.resolve_for_write(path)?;
                Err(ScopeError::NotFound(path.to_owned()))
            }
            Err(e) => Err(ScopeError::Io {
                path: path.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// The existing file a missing `path` was meant to name, as an absolute path to
    /// resolve (and so to scope-check) like any other; see [`meant`]. Only for a path to
    /// read: whatever judges a change (approval, undo, the speculation overlay) resolves
    /// the path as written, so a change goes only where it says.
    pub fn meant(&self, path: &str) -> Option<String> {
        let abs = self.absolute(path);
        if abs.symlink_metadata().is_ok() {
            return None;
        }
        meant(&abs).and_then(|p| p.to_str().map(str::to_owned))
    }

    /// Resolves a path that may not exist yet: its deepest existing ancestor is
    /// canonicalized (so a symlinked directory cannot lead outside); a `..` below a
    /// missing directory cannot be resolved and is refused.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ScopeError> {
        self.resolve_abs_for_write(path, self.absolute(path))
    }

    /// [`Self::resolve_for_write`] for a path as a program reads it: without the reading
    /// of a model's misplaced absolute paths, which only the tools apply. A shell command
    /// opens `/docs` itself, never the workspace's `docs`.
    pub fn resolve_literal_for_write(&self, path: &str) -> Result<PathBuf, ScopeError> {
        self.resolve_abs_for_write(path, self.root().join(path))
    }

    fn resolve_abs_for_write(&self, path: &str, abs: PathBuf) -> Result<PathBuf, ScopeError> {
        let mut existing = abs.as_path();
        let mut rest = Vec::new();
        loop {
            match existing.canonicalize() {
                Ok(real) => {
                    let mut full = real;
                    for part in rest.iter().rev() {
                        full.push(part);
                    }
                    return self.check(path, full);
                }
                Err(_) => {
                    let (Some(parent), Some(name)) = (existing.parent(), existing.file_name())
                    else {
                        return Err(ScopeError::Io {
                            path: path.to_owned(),
                            message: "`..` after a directory that does not exist".into(),
                        });
                    };
                    rest.push(name.to_owned());
                    existing = parent;
                }
            }
        }
    }

    /// A path as shown to the model: relative to the first root when inside it.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(self.root()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// The existing file a missing path was meant to name, when it is written in one of two
/// ways models write a file they have seen:
///
/// - with a line after it, as grep and compilers print it: `settings.py:2`,
///   `settings.py:2:DEBUG = True` (a small model copied a search's line as the path);
/// - without the leading dot of a dotfile: `env` for `.env` (beside which the listing
///   said `.env`), when nothing of that name exists.
///
/// Only for paths to read, never for a path to create or change. What it finds is
/// checked against the scope like any other path.
fn meant(abs: &Path) -> Option<PathBuf> {
    let text = abs.to_str()?;
    let with_line = text
        .char_indices()
        .filter(|&(_, c)| c == ':')
        .find_map(|(i, _)| {
            let (file, rest) = (&text[..i], &text[i + 1..]);
            let line_number = rest.split(':').next()?;
            let is_line =
                !line_number.is_empty() && line_number.bytes().all(|b| b.is_ascii_digit());
            (is_line && Path::new(file).is_file()).then(|| PathBuf::from(file))
        });
    with_line.or_else(|| {
        let name = abs.file_name()?.to_str()?;
        if name.starts_with('.') {
            return None;
        }
        let dotted = abs.with_file_name(format!(".{name}"));
        dotted.is_file().then_some(dotted)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace `shop` inside a parent that holds nothing but it.
    fn shop() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shop");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("config.json"), "{}").unwrap();
        let roots = Roots::new(&root).unwrap();
        (dir, roots)
    }

    #[test]
    fn a_missing_absolute_path_that_names_a_workspace_path_means_it() {
        let (dir, roots) = shop();
        let root = roots.root().to_path_buf();
        let parent = dir.path().canonicalize().unwrap();
        // Rooted at `/`, or at a parent of the workspace (its last name dropped).
        assert_eq!(roots.resolve("/docs").unwrap(), root.join("docs"));
        let dropped = parent.join("config.json");
        assert_eq!(
            roots.resolve(dropped.to_str().unwrap()).unwrap(),
            root.join("config.json")
        );
        // Nothing that exists is read differently, and nothing missing is created inside.
        std::fs::write(parent.join("real.txt"), "x").unwrap();
        assert!(roots
            .resolve(parent.join("real.txt").to_str().unwrap())
            .is_err());
        assert!(roots
            .resolve_for_write(parent.join("new.txt").to_str().unwrap())
            .is_err());
        // `..` in the rest cannot lead out: the result is checked like any other.
        let sneaky = parent.join("../shop/../../etc/passwd");
        assert!(roots.resolve(sneaky.to_str().unwrap()).is_err());
    }

    #[test]
    fn a_missing_system_path_that_ends_in_a_workspace_file_means_it() {
        let (dir, roots) = shop();
        let root = roots.root().to_path_buf();
        std::fs::create_dir_all(root.join("conf")).unwrap();
        std::fs::write(root.join("conf/nginx.conf"), "x").unwrap();
        let system = dir.path().join("etc/nginx/conf/nginx.conf");
        assert_eq!(
            roots.resolve(system.to_str().unwrap()).unwrap(),
            root.join("conf/nginx.conf")
        );
        assert_eq!(
            roots.resolve("/nowhere/config.json").unwrap(),
            root.join("config.json")
        );
        // A directory, a file the workspace lacks, or a system file that exists: as written.
        assert!(roots.resolve("/nowhere/docs").is_err());
        assert!(roots.resolve("/nowhere/other.conf").is_err());
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/config.json"), "{}").unwrap();
        let real = dir.path().join("etc/config.json");
        assert!(roots.resolve(real.to_str().unwrap()).is_err());
        // A program reads it as written.
        assert!(roots
            .resolve_literal_for_write("/nowhere/config.json")
            .is_err());
        // A workspace name that links outside leads nowhere outside: the check still holds.
        let secret = dir.path().join("secret.conf");
        std::fs::write(&secret, "x").unwrap();
        std::os::unix::fs::symlink(&secret, root.join("link.conf")).unwrap();
        assert!(matches!(
            roots.resolve("/nowhere/link.conf"),
            Err(ScopeError::OutOfScope { .. })
        ));
        assert!(roots.resolve("/nowhere/../../link.conf").is_err());
    }

    #[test]
    fn the_workspace_path_with_its_prompt_line_means_the_workspace() {
        let (dir, roots) = shop();
        let root = roots.root().to_path_buf();
        let line = format!("{} (linux, git branch main (clean))", root.display());
        assert_eq!(roots.resolve(&line).unwrap(), root);
        assert_eq!(roots.resolve(&format!("{line}.txt")).unwrap(), root);
        let branch = format!("{} (linux, git branch feature/x (clean))", root.display());
        assert_eq!(roots.resolve(&branch).unwrap(), root);
        // A path that goes on below the annotation is read as written (and is outside).
        let below = format!("{line}/../../etc/passwd");
        assert!(roots.resolve(&below).is_err());
        // A directory beside the workspace that really has such a name is itself.
        let beside = dir.path().canonicalize().unwrap().join("shop (copy)");
        std::fs::create_dir(&beside).unwrap();
        assert!(roots.resolve(beside.to_str().unwrap()).is_err());
        // A program reads it as written.
        assert!(roots.resolve_literal_for_write(&line).is_err());
    }

    #[test]
    fn a_file_written_with_its_line_or_without_its_leading_dot_means_the_file() {
        let (dir, roots) = shop();
        let root = roots.root().to_path_buf();
        std::fs::write(root.join("settings.py"), "DEBUG = True\n").unwrap();
        std::fs::write(root.join(".env"), "URL=x\n").unwrap();
        let settings = root.join("settings.py");
        // The path to resolve, and its resolution, scope-checked as usual.
        let read = |path: &str| roots.resolve(&roots.meant(path)?).ok();
        assert_eq!(read("settings.py:1"), Some(settings.clone()));
        assert_eq!(read("settings.py:1:DEBUG = True"), Some(settings.clone()));
        let absolute = format!("{}:1:DEBUG", settings.display());
        assert_eq!(read(&absolute), Some(settings.clone()));
        assert_eq!(read("env"), Some(root.join(".env")));
        // Not a line number, no such file, or a path that exists: nothing else meant.
        assert_eq!(roots.meant("settings.py:x"), None);
        assert_eq!(roots.meant("other.py:1"), None);
        assert_eq!(roots.meant("docs:1"), None);
        assert_eq!(roots.meant("settings.py"), None);
        // A path as written is resolved as written, for a change above all.
        assert!(matches!(roots.resolve("env"), Err(ScopeError::NotFound(_))));
        assert_eq!(roots.resolve_for_write("env").unwrap(), root.join("env"));
        // A file outside the workspace is outside, whatever is written after it.
        let outside = dir.path().canonicalize().unwrap().join("secret.txt");
        std::fs::write(&outside, "x").unwrap();
        let past_root = format!("{}/../secret.txt:1", root.display());
        let meant = roots.meant(&past_root).unwrap();
        assert!(matches!(
            roots.resolve(&meant),
            Err(ScopeError::OutOfScope { .. })
        ));
    }

    #[test]
    fn a_program_reads_an_absolute_path_as_written() {
        let (dir, roots) = shop();
        let dropped = dir.path().canonicalize().unwrap().join("config.json");
        assert!(roots
            .resolve_literal_for_write(dropped.to_str().unwrap())
            .is_err());
        assert!(roots.resolve_literal_for_write("/docs").is_err());
        assert!(roots.resolve_literal_for_write("docs/new.md").is_ok());
    }
}

#[cfg(test)]
mod hostile_tests {
    use super::*;

    #[test]
    fn hostile_spellings_of_a_line_or_a_dot_lead_nowhere_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join(".link")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        let roots = Roots::new(&root).unwrap();
        for path in [
            "/etc/passwd:1",
            "../../../../etc/passwd:1:x",
            "link",
            "etc/passwd:1",
            "/proc/self/environ:1",
            "etc/../../../etc/passwd:2",
        ] {
            let resolved = roots.meant(path).map(|m| roots.resolve(&m));
            assert!(
                !matches!(resolved, Some(Ok(_))),
                "{path} resolved to {resolved:?}"
            );
        }
    }
}
