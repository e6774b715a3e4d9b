#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The edit tool's edge cases, on real files: unique matches, appends, saki's own notes
//! refused, and the second chances for an old_string not in the file verbatim.

mod common;

use common::fixture;
use serde_json::json;

#[tokio::test]
async fn edit_requires_a_unique_match_and_returns_a_diff() {
    let f = fixture();
    std::fs::write(f.ws().join("a.txt"), "x = 1\ny = 1\nx = 1\n").unwrap();
    let err = f
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("matches 2 places"), "{err}");
    let err = f
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "z", "new_string": "w"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("not found"), "{err}");
    let out = f
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "y = 1", "new_string": "y = 9"}),
        )
        .await
        .unwrap();
    assert!(
        out.contains("-y = 1") && out.contains("+y = 9") && out.contains("--- a/a.txt"),
        "{out}"
    );
    let out = f
        .call("edit", json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}))
        .await
        .unwrap();
    assert!(out.starts_with("2 replacements"), "{out}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
        "x = 3\ny = 9\nx = 3\n"
    );
    let err = f
        .call(
            "edit",
            json!({"path": "missing.txt", "old_string": "a", "new_string": "b"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("does not exist"));
}

#[tokio::test]
async fn edit_with_an_empty_old_string_appends_a_line() {
    let f = fixture();
    let ws = f.ws();
    std::fs::write(ws.join("TODO.md"), "# TODO\n- write tests\n").unwrap();
    f.call(
        "edit",
        json!({"path": "TODO.md", "old_string": "", "new_string": "- buy milk"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.join("TODO.md")).unwrap(),
        "# TODO\n- write tests\n- buy milk\n"
    );
    std::fs::write(ws.join("raw.txt"), "no newline").unwrap();
    f.call(
        "edit",
        json!({"path": "raw.txt", "old_string": "", "new_string": "next"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.join("raw.txt")).unwrap(),
        "no newline\nnext"
    );
}

#[tokio::test]
async fn a_tool_result_written_back_into_a_file_is_refused() {
    // What Qwen2.5-Coder-0.5B did to TODO.md: its read, then its write's own result.
    let f = fixture();
    let ws = f.ws();
    let original = "# TODO\n- write tests\n";
    std::fs::write(ws.join("TODO.md"), original).unwrap();
    for content in [
        "write tests\n[2 lines in all]",
        "overwrote TODO.md (28 bytes)",
    ] {
        let err = f
            .call("write_file", json!({"path": "TODO.md", "content": content}))
            .await
            .unwrap_err();
        assert!(err.contains("a note from a tool result"), "{err}");
    }
    let err = f
        .call(
            "edit",
            json!({"path": "TODO.md", "old_string": "- write tests",
                   "new_string": "- write tests\n[...truncated: showing lines 1-1 of 2; use offset=2 to read more]"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("refused to write TODO.md"), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("TODO.md")).unwrap(),
        original
    );
    // A file that already documents a note keeps being editable.
    std::fs::write(ws.join("notes.md"), "Reads end with:\n[3 lines in all]\n").unwrap();
    f.call(
        "write_file",
        json!({"path": "notes.md", "content": "Whole reads end with:\n[3 lines in all]\n"}),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn edit_with_other_punctuation_changes_only_the_words_at_the_one_place() {
    let f = fixture();
    std::fs::write(f.ws().join("config.json"), "{\n  \"port\": 8080\n}\n").unwrap();
    let out = f
        .call(
            "edit",
            json!({"path": "config.json", "old_string": "port=8080", "new_string": "port=9090"}),
        )
        .await
        .unwrap();
    assert!(
        out.starts_with(
            "[old_string was not in the file verbatim; it matched `port\": 8080` on line 2"
        ),
        "{out}"
    );
    assert!(out.contains("+  \"port\": 9090"), "{out}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join("config.json")).unwrap(),
        "{\n  \"port\": 9090\n}\n"
    );
}

#[tokio::test]
async fn edit_with_other_spacing_keeps_the_files_line_breaks() {
    let f = fixture();
    let calc = "def add(a, b):\n    return a - b\n";
    std::fs::write(f.ws().join("calc.py"), calc).unwrap();
    let out = f
        .call(
            "edit",
            json!({"path": "calc.py", "old_string": "def add(a, b): return a - b", "new_string": "def add(a, b): return a + b"}),
        )
        .await
        .unwrap();
    assert!(
        out.starts_with("[old_string was not in the file verbatim; it matched `def add(a, b):\n    return a - b` on line 1 with other spacing"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
}

#[tokio::test]
async fn edit_not_found_shows_the_text_there_is() {
    let f = fixture();
    let err = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "old_string": "port=8080", "new_string": "port=9090"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("was not found in src/main.rs"), "{err}");
    assert!(err.contains("    println!(\"hi\");\n"), "{err}");
    assert!(!err.contains("empty old_string"), "{err}");
}

#[tokio::test]
async fn edit_looking_for_the_line_it_adds_is_told_how_to_append() {
    let f = fixture();
    let before = std::fs::read_to_string(f.ws().join("src/main.rs")).unwrap();
    let err = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "old_string": "buy milk", "new_string": "- buy milk"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.contains("To add new_string as a line at the end of the file, call edit with an empty old_string."),
        "{err}"
    );
    // The line to add sent as both strings: the same hint, not "nothing would change".
    let err = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "old_string": "- buy milk", "new_string": "- buy milk"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.contains("was not found in src/main.rs; copy the exact text from the file. To add new_string as a line at the end of the file, call edit with an empty old_string. Call it as {\"name\":\"edit\",\"arguments\":{\"path\":\"src/main.rs\",\"old_string\":\"\",\"new_string\":\"- buy milk\"}}. Its content:\n"),
        "{err}"
    );
    // Text the file has, sent as both strings, changes nothing.
    let err = f
        .call(
            "edit",
            json!({"path": "src/main.rs", "old_string": "fn main", "new_string": "fn main"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("are the same; nothing would change"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join("src/main.rs")).unwrap(),
        before
    );
}

#[tokio::test]
async fn an_edit_that_writes_again_what_is_beside_its_match_is_refused() {
    let f = fixture();
    std::fs::write(f.ws().join(".gitignore"), "__pycache__/\n").unwrap();
    let err = f
        .call(
            "edit",
            json!({"path": ".gitignore", "old_string": "__pycache__", "new_string": "__pycache__/"}),
        )
        .await
        .unwrap_err();
    assert!(err.contains("would write what it adds twice"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join(".gitignore")).unwrap(),
        "__pycache__/\n",
        "the file is left as it was"
    );
    // The same edit sent again after it landed.
    std::fs::write(f.ws().join("app.py"), "print(greet('Ann'))\n").unwrap();
    let edit = json!({"path": "app.py", "old_string": "Ann", "new_string": "Hello, Ann!"});
    f.call("edit", edit.clone()).await.unwrap();
    let err = f.call("edit", edit).await.unwrap_err();
    assert!(err.contains("already reads"), "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws().join("app.py")).unwrap(),
        "print(greet('Hello, Ann!'))\n"
    );
    // Taking in the text beside the match makes it on purpose.
    f.call(
        "edit",
        json!({"path": ".gitignore", "old_string": "__pycache__/", "new_string": "__pycache__//"}),
    )
    .await
    .unwrap();
}
