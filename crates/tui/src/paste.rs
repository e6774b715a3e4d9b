//! A pasted image path becomes an `@path` reference. Dragging a file into a terminal, or
//! copying it in a file manager, pastes its path (quoted, with escaped spaces, or as a
//! `file://` URL, depending on the terminal); when that is all the paste holds and it
//! names an existing PNG, JPEG, GIF or WebP file, the image is attached like a typed
//! `@path`. A path inside the workspace is shortened to its workspace path; one outside
//! stays absolute, and the engine then refuses it with an alert (`@path` stays in scope).

use std::path::{Path, PathBuf};

/// The `@path ` reference for a pasted image path, or `None` for any other paste.
pub fn image_reference(pasted: &str, root: &Path) -> Option<String> {
    let path = pasted_path(pasted)?;
    if !saki_engine::fs::is_image_name(&path) {
        return None;
    }
    let full = if path.is_absolute() {
        path
    } else {
        root.join(path)
    };
    if !std::fs::metadata(&full).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let shown = match (full.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(root)) => match real.strip_prefix(&root) {
            Ok(inside) => inside.to_path_buf(),
            Err(_) => full,
        },
        _ => full,
    };
    let shown = shown.to_str()?;
    Some(if shown.contains(char::is_whitespace) {
        format!("@\"{shown}\" ")
    } else {
        format!("@{shown} ")
    })
}

/// The one path a paste holds: quotes, shell escapes and `file://` taken off.
fn pasted_path(pasted: &str) -> Option<PathBuf> {
    let text = pasted.trim();
    if text.is_empty() || text.contains(['\n', '\r']) {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q)?.strip_suffix(*q))
        .map(str::to_owned);
    let text = match unquoted {
        Some(inner) => inner,
        None => unescape(text)?,
    };
    match text.strip_prefix("file://") {
        Some(url) => percent_decode(url).map(PathBuf::from),
        None => Some(PathBuf::from(text)),
    }
}

/// `my\ shot.png` → `my shot.png`; a bare space means it is not one path.
fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            c if c.is_whitespace() => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// `%20` and the like in a `file://` URL (invalid UTF-8: not a path).
fn percent_decode(url: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(url)
        .decode_utf8()
        .ok()?;
    Some(decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/shots")).unwrap();
        for name in [
            "ws/shots/a.png",
            "ws/my shot.PNG",
            "ws/notes.txt",
            "out.jpg",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        dir
    }

    #[test]
    fn an_image_path_in_any_pasted_form_becomes_a_reference() {
        let dir = workspace();
        let root = dir.path().join("ws");
        let abs = root.join("shots/a.png");
        let abs = abs.to_str().unwrap();
        for pasted in [
            "shots/a.png".to_owned(),
            abs.to_owned(),
            format!("  '{abs}'\n"),
            format!("\"{abs}\""),
            format!("file://{abs}"),
        ] {
            assert_eq!(
                image_reference(&pasted, &root).as_deref(),
                Some("@shots/a.png "),
                "{pasted:?}"
            );
        }
        let spaced = root.join("my shot.PNG");
        let escaped = spaced.to_str().unwrap().replace(' ', "\\ ");
        let url = format!("file://{}", spaced.to_str().unwrap().replace(' ', "%20"));
        for pasted in [escaped, url] {
            assert_eq!(
                image_reference(&pasted, &root).as_deref(),
                Some("@\"my shot.PNG\" "),
                "{pasted:?}"
            );
        }
    }

    #[test]
    fn other_pastes_stay_text() {
        let dir = workspace();
        let root = dir.path().join("ws");
        for pasted in [
            "notes.txt",
            "missing.png",
            "shots",
            "see shots/a.png",
            "shots/a.png\nshots/a.png",
            "",
        ] {
            assert_eq!(image_reference(pasted, &root), None, "{pasted:?}");
        }
    }

    #[test]
    fn an_image_outside_the_workspace_stays_absolute() {
        let dir = workspace();
        let outside = dir.path().join("out.jpg");
        let reference = image_reference(outside.to_str().unwrap(), &dir.path().join("ws"));
        assert_eq!(reference, Some(format!("@{} ", outside.display())));
    }
}
