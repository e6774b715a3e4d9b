use super::*;

fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, PromptMentions) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    let ws = Arc::new(Workspace::new(dir.path()).unwrap());
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
