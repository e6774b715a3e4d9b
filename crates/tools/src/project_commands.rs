//! How the project runs its tests and builds, shown with a prompt that asks for either
//! where small models run.
//!
//! Asked "Run the tests." in a Rust crate, a small model took its command from the
//! lines where the prompt's words were found: a CI workflow's `cargo clippy …
//! -Dclippy::pedantic`. A strong model reads the manifest first; a small one does not
//! think to. So when a prompt's words ask to test or build, the command that the
//! manifest at the workspace's root declares follows the prompt as a note:
//!
//! ```text
//! [This project's tests run with `cargo test` (Cargo.toml).]
//! ```
//!
//! Only what a manifest says is named: `Cargo.toml`, `go.mod`, `package.json`'s own
//! `test` or `build` script (not npm's placeholder), and for a Python project with a
//! manifest and tests `python3 -m pytest`, saying so when pytest is not installed (a
//! small model ran `pytest` there and read "command not found"). A Makefile's `test`
//! target is not used: it often installs before it tests. Nothing runs here; the model
//! still calls `shell`, through approval.

use crate::workspace::Workspace;
use saki_llm_worker::interceptor::{Interceptor, PromptAction};
use saki_llm_worker::Item;
use std::sync::Arc;

/// The largest manifest read.
const MANIFEST_MAX: u64 = 256 * 1024;

/// What a prompt asks to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Test,
    Build,
}

impl Purpose {
    fn noun(self) -> &'static str {
        match self {
            Purpose::Test => "tests run",
            Purpose::Build => "build runs",
        }
    }
}

/// The purposes `prompt`'s words ask for, each once, tests first.
pub fn purposes(prompt: &str) -> Vec<Purpose> {
    let words = crate::intent::lower_words(prompt);
    let any = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let mut out = Vec::new();
    if any(&[
        "test",
        "tests",
        "testing",
        "unittest",
        "unittests",
        "pytest",
    ]) {
        out.push(Purpose::Test);
    }
    if any(&["build", "builds", "compile", "compiles", "compiling"]) {
        out.push(Purpose::Build);
    }
    out
}

/// Adds the project's test or build command after a prompt that asks for one.
#[derive(Debug)]
pub struct ProjectCommands {
    workspace: Arc<Workspace>,
    /// Whether pytest can be run here; asked only when a Python project has tests.
    pytest: fn() -> bool,
}

impl ProjectCommands {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self {
            workspace,
            pytest: pytest_on_path,
        }
    }

    /// The note for `prompt`, or `None` when it asks for neither or no manifest says.
    pub async fn note(&self, prompt: &str) -> Option<String> {
        let purposes = purposes(prompt);
        if purposes.is_empty() {
            return None;
        }
        let manifest = self.manifest().await?;
        let lines: Vec<String> = purposes
            .into_iter()
            .filter_map(|purpose| {
                let (command, source) = manifest.command(purpose, self.pytest)?;
                Some(format!(
                    "This project's {} with `{command}` ({source}).",
                    purpose.noun()
                ))
            })
            .collect();
        (!lines.is_empty()).then(|| format!("[{}]", lines.join(" ")))
    }

    /// The manifest at the workspace's root, reading only the file it needs.
    async fn manifest(&self) -> Option<Manifest> {
        let workspace = &self.workspace;
        let entries = workspace.fs().list_dir(workspace.root()).await.ok()?;
        let has = |name: &str| entries.iter().any(|e| e == name);
        // Through the workspace's scope check: a manifest that is a link out of the
        // workspace is not read (its scripts would go to the model).
        let read = |name: &'static str| async move {
            Some(workspace.read_text(name, MANIFEST_MAX).await?.1)
        };
        if let Some(&(file, test, build)) = TOOL_MANIFESTS.iter().find(|(file, ..)| has(file)) {
            return Some(Manifest::Tool { file, test, build });
        }
        if has("package.json") {
            return Some(Manifest::Npm(read("package.json").await?));
        }
        let pyproject = if has("pyproject.toml") {
            read("pyproject.toml").await
        } else {
            None
        };
        Some(Manifest::Python(PythonProject::of(
            &entries,
            pyproject.as_deref(),
        )))
    }
}

/// Manifests whose build tool has its own commands: the file, the test command, the build
/// command; the first found wins.
const TOOL_MANIFESTS: &[(&str, &str, &str)] = &[
    ("Cargo.toml", "cargo test", "cargo build"),
    ("go.mod", "go test ./...", "go build ./..."),
];

/// What declares how the project is tested and built.
enum Manifest {
    Tool {
        file: &'static str,
        test: &'static str,
        build: &'static str,
    },
    /// `package.json`'s text.
    Npm(String),
    Python(PythonProject),
}

impl Manifest {
    /// The command for `purpose` and what declares it.
    fn command(&self, purpose: Purpose, pytest: fn() -> bool) -> Option<(String, String)> {
        match (self, purpose) {
            (Manifest::Tool { file, test, .. }, Purpose::Test) => {
                Some(((*test).into(), (*file).into()))
            }
            (Manifest::Tool { file, build, .. }, Purpose::Build) => {
                Some(((*build).into(), (*file).into()))
            }
            (Manifest::Npm(package), _) => {
                let (script, command) = match purpose {
                    Purpose::Test => ("test", "npm test"),
                    Purpose::Build => ("build", "npm run build"),
                };
                let body = npm_script(package, script)?;
                Some((command.into(), format!("package.json: \"{body}\"")))
            }
            (Manifest::Python(python), Purpose::Test) => {
                let mut source = python.manifest?.to_owned();
                if !(python.has_tests || python.names_pytest) {
                    return None;
                }
                if !pytest() {
                    source.push_str("; pytest is not installed here");
                }
                Some(("python3 -m pytest".into(), source))
            }
            (Manifest::Python(_), Purpose::Build) => None,
        }
    }
}

#[async_trait::async_trait]
impl Interceptor for ProjectCommands {
    async fn on_prompt_submit(&self, user: &Item) -> PromptAction {
        let Item::User { text } = user else {
            return PromptAction::Continue;
        };
        match self.note(text).await {
            Some(note) => PromptAction::ContinueWith(vec![Item::system(note)]),
            None => PromptAction::Continue,
        }
    }
}

/// What the root says of a Python project's tests.
#[derive(Debug)]
struct PythonProject {
    /// The manifest that makes it one, if any.
    manifest: Option<&'static str>,
    /// A `tests/` or `test/` directory, or test files at the root.
    has_tests: bool,
    /// `pyproject.toml` configures pytest.
    names_pytest: bool,
}

impl PythonProject {
    fn of(entries: &[String], pyproject: Option<&str>) -> Self {
        let manifest = [
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "tox.ini",
            "pytest.ini",
        ]
        .into_iter()
        .find(|m| entries.iter().any(|e| e == m));
        let has_tests = entries.iter().any(|e| {
            e == "tests/"
                || e == "test/"
                || (e.ends_with(".py") && (e.starts_with("test_") || e.ends_with("_test.py")))
        });
        Self {
            manifest,
            has_tests,
            names_pytest: pyproject.is_some_and(|p| p.contains("[tool.pytest")),
        }
    }
}

/// `package.json`'s script `name`, unless it is npm's placeholder that only fails.
fn npm_script(package: &str, name: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(package).ok()?;
    let body = value.get("scripts")?.get(name)?.as_str()?.trim();
    let placeholder = body.contains("no test specified");
    (!body.is_empty() && !placeholder)
        .then(|| crate::common::prefix_at_boundary(body, 80).to_owned())
}

/// Whether `pytest` is an executable file on `PATH` (where pip puts it, in a virtual
/// environment too).
fn pytest_on_path() -> bool {
    let path = std::env::var("PATH").ok();
    saki_sandbox::shell_env::on_path("pytest", path.as_deref())
}

#[cfg(test)]
#[path = "project_commands_tests.rs"]
mod tests;
