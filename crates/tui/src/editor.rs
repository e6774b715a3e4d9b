//! Ctrl+G: the prompt in the person's editor (`$VISUAL`, else `$EDITOR`, else `vi`). The
//! text goes into a private temporary file, the editor runs on the real terminal (the
//! terminal loop leaves the UI's screen first and comes back after), and the file's text
//! replaces the prompt. An editor that fails, or is quit with an error, leaves the prompt
//! as it was.

use std::io::{self, Write};
use std::process::Command;

/// The editor command from the environment.
pub fn editor_command(env: &dyn Fn(&str) -> Option<String>) -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|k| env(k))
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// Opens `text` in `editor` (a shell command, so `code --wait` works) and returns what the
/// file holds when it exits successfully, without the one line break editors add.
pub fn edit(text: &str, editor: &str) -> io::Result<String> {
    let mut file = tempfile::Builder::new()
        .prefix("saki-prompt-")
        .suffix(".md")
        .tempfile()?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(file.path())
        .status()?;
    if !status.success() {
        return Err(io::Error::other(format!("{editor} exited with {status}")));
    }
    let edited = std::fs::read_to_string(file.path())?;
    Ok(edited
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&edited)
        .to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fake editor: appends a line to the file it is given.
    fn fake_editor(dir: &std::path::Path, body: &str) -> String {
        let path = dir.join("fake-editor");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    #[test]
    fn the_edited_text_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let editor = fake_editor(dir.path(), r#"printf 'second line\n' >> "$1""#);
        let out = edit("first line\n", &editor).unwrap();
        assert_eq!(out, "first line\nsecond line");
    }

    #[test]
    fn a_failing_editor_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let editor = fake_editor(dir.path(), r#"echo gone > "$1"; exit 1"#);
        assert!(edit("keep", &editor).is_err());
    }

    #[test]
    fn visual_wins_over_editor() {
        let env = |k: &str| match k {
            "VISUAL" => Some("code --wait".to_owned()),
            "EDITOR" => Some("nano".to_owned()),
            _ => None,
        };
        assert_eq!(editor_command(&env), "code --wait");
        assert_eq!(editor_command(&|_| None), "vi");
    }
}
