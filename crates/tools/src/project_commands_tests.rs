use super::*;

fn project(files: &[(&str, &str)], pytest: fn() -> bool) -> (tempfile::TempDir, ProjectCommands) {
    let (dir, ws) = crate::test_support::workspace_with(files);
    let mut commands = ProjectCommands::new(ws);
    commands.pytest = pytest;
    (dir, commands)
}

fn installed() -> bool {
    true
}

fn missing() -> bool {
    false
}

#[test]
fn a_prompt_asks_to_test_or_build_by_its_words() {
    assert_eq!(purposes("Run the tests."), [Purpose::Test]);
    assert_eq!(
        purposes("Does it compile? Then run pytest"),
        [Purpose::Test, Purpose::Build]
    );
    assert!(purposes("What does attest() do? Rebuild the latest cache").is_empty());
}

#[tokio::test]
async fn a_rust_crate_tests_with_cargo_whatever_its_ci_runs() {
    let (_dir, commands) = project(
        &[
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            (".github/workflows/ci.yml", "- run: cargo clippy --tests\n"),
        ],
        missing,
    );
    assert_eq!(
        commands
            .note("Run the tests and build it.")
            .await
            .as_deref(),
        Some(
            "[This project's tests run with `cargo test` (Cargo.toml). This project's build \
             runs with `cargo build` (Cargo.toml).]"
        )
    );
    assert_eq!(commands.note("What does this crate do?").await, None);
}

#[tokio::test]
async fn a_package_json_names_its_own_scripts_but_not_npm_s_placeholder() {
    let (_dir, commands) = project(
        &[(
            "package.json",
            r#"{"scripts": {"test": "tap tests/*.js --100", "lint": "standard"}}"#,
        )],
        installed,
    );
    assert_eq!(
        commands.note("run the tests").await.as_deref(),
        Some(
            "[This project's tests run with `npm test` (package.json: \"tap tests/*.js --100\").]"
        )
    );
    assert_eq!(commands.note("build it").await, None, "no build script");

    let (_dir, placeholder) = project(
        &[(
            "package.json",
            r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
        )],
        installed,
    );
    assert_eq!(placeholder.note("run the tests").await, None);
}

#[tokio::test]
async fn a_python_project_tests_with_pytest_and_says_when_it_is_missing() {
    let files = [
        ("pyproject.toml", "[project]\nname = \"x\"\n"),
        ("tests/test_x.py", "def test_x():\n    assert True\n"),
    ];
    let (_dir, with) = project(&files, installed);
    assert_eq!(
        with.note("Run the tests.").await.as_deref(),
        Some("[This project's tests run with `python3 -m pytest` (pyproject.toml).]")
    );
    let (_dir, without) = project(&files, missing);
    assert_eq!(
        without.note("Run the tests.").await.as_deref(),
        Some(
            "[This project's tests run with `python3 -m pytest` (pyproject.toml; pytest is \
             not installed here).]"
        )
    );
    assert_eq!(without.note("Build it.").await, None, "no build command");
}

#[tokio::test]
async fn loose_files_with_no_manifest_get_no_note() {
    let (_dir, commands) = project(
        &[
            ("test_stack.py", "assert 1 == 1\n"),
            ("Makefile", "test:\n\tpip install -e .\n"),
        ],
        installed,
    );
    assert_eq!(commands.note("Make test_stack.py pass.").await, None);
}

#[tokio::test]
async fn a_manifest_linked_from_outside_the_workspace_is_not_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("package.json");
    std::fs::write(&secret, r#"{"scripts": {"test": "SECRET-TOKEN"}}"#).unwrap();
    let (dir, commands) = project(&[], installed);
    std::os::unix::fs::symlink(&secret, dir.path().join("package.json")).unwrap();
    assert_eq!(commands.note("run the tests").await, None);
}
