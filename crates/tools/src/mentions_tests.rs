use super::*;

fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, PromptMentions) {
    let (dir, ws) = crate::test_support::workspace_with(files);
    (dir, PromptMentions::new(ws))
}

#[test]
fn distinctive_words_leave_out_function_words_file_names_and_numbers() {
    assert_eq!(
        distinctive_words("What currency does the shop use?"),
        ["currency", "shop"]
    );
    assert_eq!(distinctive_words("Set LIMIT to 25."), ["LIMIT"]);
    assert_eq!(
        distinctive_words("Bump the version in pyproject.toml to 0.4.0 and the Version test"),
        ["version", "test"]
    );
    assert_eq!(
        distinctive_words("It doesn't work: fix `is_even` in src/utils.py"),
        ["is_even"]
    );
    // A name in code written with dots gives its words; a file's name does not.
    assert_eq!(
        distinctive_words("What does `Session.send()` do, and os.path.join in app.py, e.g. v1.2?"),
        ["Session", "send", "path", "join"]
    );
}

#[tokio::test]
async fn the_note_shows_the_lines_where_a_prompt_word_occurs() {
    let (_dir, mentions) = workspace(&[
        ("src/shop/config.py", "TAX_RATE = 0.2\nCURRENCY = 'EUR'\n"),
        ("README.md", "# Shop\n"),
        ("main.py", "print('hi')\n"),
        ("app.py", "url = SHOP_URL\n"),
    ]);
    let note = mentions
        .note("What currency does the shop use?")
        .await
        .unwrap();
    assert_eq!(
        note,
        format!(
            "{NOTE_START} (currency, shop):\nREADME.md:1:# Shop\napp.py:1:url = SHOP_URL\n\
             src/shop/config.py:2:CURRENCY = 'EUR']"
        )
    );
}

#[tokio::test]
async fn the_note_is_one_of_saki_s_notes_to_the_echo_refusal() {
    let (_dir, mentions) = workspace(&[("config.py", "LIMIT = 10\n")]);
    let note = mentions.note("Set LIMIT to 25.").await.unwrap();
    assert!(crate::echo::echoed_note(&note, "").is_some(), "{note}");
}

#[tokio::test]
async fn no_note_when_no_word_is_found_or_a_word_is_everywhere() {
    let (_dir, mentions) = workspace(&[
        ("a.py", "import os\n"),
        ("b.py", "import os\n"),
        ("c.py", "import os\n"),
        ("d.py", "import os\n"),
    ]);
    assert_eq!(mentions.note("What does the parser do?").await, None);
    // `os` is too short; `import` is in four files.
    assert_eq!(mentions.note("Which import of os is unused?").await, None);
}

#[tokio::test]
async fn the_note_is_bounded_and_respects_gitignore() {
    let body: String = (0..10).map(|i| format!("limit_{i} = LIMIT\n")).collect();
    let (_dir, mentions) = workspace(&[
        (".gitignore", "secret.txt\n"),
        ("secret.txt", "LIMIT = 99\n"),
        ("config.py", "LIMIT = 10\n"),
        ("many.py", &body),
    ]);
    let note = mentions.note("Set LIMIT to 25.").await.unwrap();
    assert!(!note.contains("secret"), "{note}");
    assert!(note.contains("config.py:1:LIMIT = 10"), "{note}");
    assert!(note.lines().count() <= MAX_LINES + 1, "{note}");
}

#[tokio::test]
async fn the_interceptor_adds_the_note_after_the_prompt() {
    let (_dir, mentions) = workspace(&[("config.py", "LIMIT = 10\n")]);
    let action = mentions
        .on_prompt_submit(&Item::user("Set LIMIT to 25."))
        .await;
    let PromptAction::ContinueWith(items) = action else {
        panic!("no note: {action:?}");
    };
    assert!(
        matches!(&items[..], [Item::System { text }] if text.starts_with(NOTE_START)),
        "{items:?}"
    );
    let quiet = mentions.on_prompt_submit(&Item::user("Hello there")).await;
    assert_eq!(quiet, PromptAction::Continue);
}

proptest::proptest! {
    #[test]
    fn any_prompt_gives_bounded_words(prompt in "\\PC{0,300}") {
        let words = distinctive_words(&prompt);
        proptest::prop_assert!(words.len() <= MAX_WORDS);
        for word in words {
            proptest::prop_assert!(word.chars().count() >= 3);
        }
    }
}

#[tokio::test]
async fn a_link_leading_out_of_the_workspace_is_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOKEN = hunter2\n").unwrap();
    let (dir, mentions) = workspace(&[("config.py", "LIMIT = 10\n")]);
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked_dir")).unwrap();
    assert_eq!(mentions.note("What is the TOKEN?").await, None);
}

#[tokio::test]
async fn a_common_word_points_to_the_few_lines_that_define_it() {
    // "version" is on many lines of many files; three lines set it.
    let mentions_of = "# version history\nsee the version notes\n";
    let (_dir, mentions) = workspace(&[
        (
            "pyproject.toml",
            "[project]\nname = \"pkg\"\nversion = \"2.2.0\"\n",
        ),
        ("PKG-INFO", "Metadata-Version: 2.1\nVersion: 2.2.0\n"),
        ("src/pkg/__version__.py", "__version__ = \"2.2.0\"\n"),
        ("CHANGES.md", mentions_of),
        ("docs/a.md", mentions_of),
        ("docs/b.md", mentions_of),
        (
            "src/pkg/check.py",
            "if version == 2:\n        version: str = \"deep\"\n",
        ),
    ]);
    let note = mentions.note("Bump the version to 2.2.1.").await.unwrap();
    assert_eq!(
        note,
        format!(
            "{NOTE_START} (version):\nPKG-INFO:1:Metadata-Version: 2.1\nPKG-INFO:2:Version: 2.2.0\n\
             pyproject.toml:3:version = \"2.2.0\"\nsrc/pkg/__version__.py:1:__version__ = \"2.2.0\"]"
        )
    );
}

#[tokio::test]
async fn a_common_word_that_nothing_defines_still_points_nowhere() {
    let body = "the parser reads it\n";
    let (_dir, mentions) = workspace(&[
        ("a.md", body),
        ("b.md", body),
        ("c.md", body),
        ("d.md", body),
        ("e.py", "        parser = make()\n"),
    ]);
    assert_eq!(mentions.note("What does the parser do?").await, None);
}

#[test]
fn a_definition_is_a_key_at_the_start_of_a_line_then_a_colon_or_equals() {
    let pattern = regex::RegexBuilder::new(&definition_pattern(&["python".to_owned()]))
        .case_insensitive(true)
        .build()
        .unwrap();
    for line in [
        "requires-python = \">=3.8\"",
        "Requires-Python: >=3.8",
        "  \"python\": \"3.11\",",
        "PYTHON_VERSION=3.11",
        "tool.python.path = 1",
        "class Python(object):",
        "    def python(self):",
        "pub(crate) async fn python() {",
        "export const PYTHON = 1;",
        "struct Python {",
    ] {
        assert!(pattern.is_match(line), "{line}");
    }
    for line in [
        "python == 3",
        "if python: run()",
        "        python = deep",
        "pythonic = yes",
        "use python: always",
        "classify python",
        "        def python(self):",
        "class Pythonic:",
        "return python(1)",
    ] {
        assert!(!pattern.is_match(line), "{line}");
    }
}

#[tokio::test]
async fn too_many_definitions_leave_the_top_level_ones() {
    let setup = "setup(\n    version=about[\"__version__\"],\n)\n";
    let (_dir, mentions) = workspace(&[
        ("PKG-INFO", "Version: 2.32.3\n"),
        ("src/pkg.egg-info/PKG-INFO", "Version: 2.32.3\n"),
        ("src/pkg/__version__.py", "__version__ = \"2.32.3\"\n"),
        ("setup.py", setup),
        ("HISTORY.md", "version 1\nversion 2\nversion 3\n"),
    ]);
    let note = mentions.note("Bump the version to 2.32.4.").await.unwrap();
    assert_eq!(
        note,
        format!(
            "{NOTE_START} (version):\nPKG-INFO:1:Version: 2.32.3\n\
             src/pkg.egg-info/PKG-INFO:1:Version: 2.32.3\n\
             src/pkg/__version__.py:1:__version__ = \"2.32.3\"]"
        )
    );
}

#[tokio::test]
async fn a_word_on_more_lines_than_shown_in_few_files_points_nowhere() {
    let body: String = (0..20).map(|i| format!("the parser {i}\n")).collect();
    let (_dir, mentions) = workspace(&[("notes.md", &body)]);
    assert_eq!(mentions.note("What does the parser do?").await, None);
}

#[tokio::test]
async fn a_common_name_points_to_the_line_that_declares_it() {
    // As in itsdangerous 2.2.0: "signer" is on lines of many files, four of which look
    // like definitions; one, not indented, declares the class.
    let uses = "from .signer import Signer\n\n\ndef make(key):\n    return Signer(key)\n";
    let (_dir, mentions) = workspace(&[
        (
            "src/pkg/signer.py",
            "import hmac\n\n\nclass Signer:\n    pass\n",
        ),
        ("src/pkg/a.py", uses),
        ("src/pkg/b.py", uses),
        (
            "src/pkg/serializer.py",
            "class Serializer:\n    default_signer: type[Signer] = Signer\n",
        ),
        (
            "src/pkg/timed.py",
            "class TimestampSigner(Signer):\n    default_signer = TimestampSigner\n",
        ),
        (
            "tests/test_signer.py",
            "class TestSigner:\n    def signer(self):\n        pass\n",
        ),
    ]);
    let note = mentions.note("What does the Signer do?").await.unwrap();
    assert_eq!(
        note,
        format!("{NOTE_START} (Signer):\nsrc/pkg/signer.py:4:class Signer:]")
    );
}
