//! `@path` references: the prompt as `Segment`s, their resolution through the scoped
//! file view into `[File: <path>]` system items, and the interceptor that places those
//! items right after the user item (the spec's stash + `ContinueWith` path).

use saki_llm_worker::{Interceptor, Item, PromptAction};
use saki_tools::common::{looks_binary, utf8_prefix_len};
use saki_tools::{ScopeError, Workspace};
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    FileRef { path: String },
}

/// Splits a prompt into text and `@path` references. A reference starts with `@` at the
/// start or after whitespace; `@"path with spaces"` quotes; `\@` is a literal `@`.
/// Trailing sentence punctuation (`.,;:!?)`) is not part of a path.
pub fn parse_prompt(input: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut text = String::new();
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && chars.get(i + 1) == Some(&'@') {
            text.push('@');
            i += 2;
            continue;
        }
        let at_boundary = i == 0 || chars[i - 1].is_whitespace();
        if c == '@' && at_boundary {
            let (path, next) = if chars.get(i + 1) == Some(&'"') {
                match chars[i + 2..].iter().position(|c| *c == '"') {
                    Some(end) => (
                        chars[i + 2..i + 2 + end].iter().collect::<String>(),
                        i + 3 + end,
                    ),
                    None => (String::new(), i),
                }
            } else {
                let end = chars[i + 1..]
                    .iter()
                    .position(|c| c.is_whitespace())
                    .map_or(chars.len(), |p| i + 1 + p);
                let mut raw: String = chars[i + 1..end].iter().collect();
                let mut next = end;
                while raw.ends_with(['.', ',', ';', ':', '!', '?', ')']) {
                    raw.pop();
                    next -= 1;
                }
                (raw, next)
            };
            if !path.is_empty() {
                if !text.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut text)));
                }
                segments.push(Segment::FileRef { path });
                i = next;
                continue;
            }
        }
        text.push(c);
        i += 1;
    }
    if !text.is_empty() {
        segments.push(Segment::Text(text));
    }
    segments
}

fn token(path: &str) -> String {
    if path.contains(char::is_whitespace) {
        format!("@\"{path}\"")
    } else {
        format!("@{path}")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("{0} is outside the workspace")]
    OutOfScope(String),
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("{0} is a binary file")]
    Binary(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// An image that cannot be attached: not one, too large, or the model reads none.
    #[error("{0}")]
    Image(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertLevel {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Alert {
    pub level: AlertLevel,
    pub message: String,
}

/// The workspace as the Pod reads it.
pub struct FsView {
    workspace: Arc<Workspace>,
    /// The model's name when it reads no images (an `@path` image is then an alert).
    no_vision: Option<String>,
}

impl FsView {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self {
            workspace,
            no_vision: None,
        }
    }

    /// Whether the session's model reads images: `@path` images are attached for one
    /// that does, and refused with an alert naming `model` for one that does not.
    pub fn with_vision(mut self, model: &str, vision: bool) -> Self {
        self.no_vision = (!vision).then(|| model.to_owned());
        self
    }

    /// Reads a referenced file into a `[File: <path>]` system item, cut at a UTF-8
    /// boundary past `max_bytes` with a notice the model can act on; an image (by its
    /// name or its bytes) into an image item.
    pub async fn resolve_file_ref(
        &self,
        path: &str,
        max_bytes: usize,
    ) -> Result<Item, ResolveError> {
        let real = self.real(path).await?;
        let image = |e: crate::images::ImageRefError| ResolveError::Image(e.to_string());
        let fs = self.workspace.fs();
        let no_vision = self.no_vision.as_deref();
        if saki_tools::image::is_image_name(&real) {
            return crate::images::resolve_image(fs.as_ref(), &real, path, no_vision)
                .await
                .map_err(image);
        }
        let (bytes, len) = self.read_start(&real, path, max_bytes).await?;
        if saki_tools::image::sniff(&bytes).is_some() {
            // An image under another name: read whole, within the image size cap.
            return crate::images::resolve_image(fs.as_ref(), &real, path, no_vision)
                .await
                .map_err(image);
        }
        let body = text_of(&bytes, len, path, max_bytes)?;
        Ok(Item::system(format!("[File: {path}]\n{body}")))
    }

    /// A file's contents as a front end holds them (an editor's unsaved buffer), as the
    /// item an `@path` reference to it would be: `path` must lead into the workspace
    /// (the file itself may not exist yet), and the text is cut past `max_bytes`. A
    /// `path` that is a URI of another scheme (`zed://…`) names no file: it is shown as
    /// it is, with nothing to check.
    pub fn attach_text(
        &self,
        path: &str,
        text: &str,
        max_bytes: usize,
    ) -> Result<Item, ResolveError> {
        if path.contains("://") {
            let body = text_of(text.as_bytes(), text.len() as u64, path, max_bytes)?;
            return Ok(Item::system(format!("[Resource: {path}]\n{body}")));
        }
        let real = self
            .workspace
            .resolve_for_write(path)
            .map_err(|e| match e {
                ScopeError::OutOfScope { .. } => ResolveError::OutOfScope(path.to_owned()),
                ScopeError::NotFound(_) => ResolveError::NotFound(path.to_owned()),
                ScopeError::Io { message, .. } => ResolveError::Io {
                    path: path.to_owned(),
                    message,
                },
            })?;
        let shown = self.workspace.display(&real);
        let body = text_of(text.as_bytes(), text.len() as u64, &shown, max_bytes)?;
        Ok(Item::system(format!("[File: {shown}]\n{body}")))
    }

    /// An image's bytes as an image item (refused when the model reads none).
    pub fn attach_image(&self, name: &str, data: &[u8]) -> Result<Item, ResolveError> {
        crate::images::image_from_bytes(data, name, self.no_vision.as_deref())
            .map_err(|e| ResolveError::Image(e.to_string()))
    }

    /// A text file of the workspace, cut past `max_bytes` with a notice.
    pub async fn read_text(&self, path: &str, max_bytes: usize) -> Result<String, ResolveError> {
        let real = self.real(path).await?;
        let (bytes, len) = self.read_start(&real, path, max_bytes).await?;
        text_of(&bytes, len, path, max_bytes)
    }

    /// Where `path` leads, in scope, and not a directory.
    async fn real(&self, path: &str) -> Result<std::path::PathBuf, ResolveError> {
        let real = self.workspace.resolve(path).map_err(|e| match e {
            ScopeError::OutOfScope { .. } => ResolveError::OutOfScope(path.to_owned()),
            ScopeError::NotFound(_) => ResolveError::NotFound(path.to_owned()),
            ScopeError::Io { message, .. } => ResolveError::Io {
                path: path.to_owned(),
                message,
            },
        })?;
        let stat = self.workspace.fs().stat(&real).await;
        if matches!(stat, Ok(Some(s)) if s.kind == saki_tools::fs::Kind::Dir) {
            return Err(ResolveError::Io {
                path: path.to_owned(),
                message: "is a directory".into(),
            });
        }
        Ok(real)
    }

    /// The start of a file: what a reference shows (`max_bytes`) and the few bytes that
    /// finish a character cut there, never the rest; and the file's length. Read through
    /// the workspace's file system: an editor's unsaved buffer, a speculation's overlay.
    async fn read_start(
        &self,
        real: &std::path::Path,
        path: &str,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, u64), ResolveError> {
        let io = |e: std::io::Error| ResolveError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let opened = self.workspace.fs().open(real).await.map_err(io)?;
        let max = max_bytes.saturating_add(CHAR_ROOM);
        saki_tools::common::read_prefix(opened.reader, opened.len, max).map_err(io)
    }

    /// Resolves every reference in order: the user text (failed references become
    /// `[unresolved file ref: <path>]`), the system items, and one Warn alert per failure.
    pub async fn prepare(
        &self,
        segments: &[Segment],
        max_bytes: usize,
    ) -> (String, Vec<Item>, Vec<Alert>) {
        let mut text = String::new();
        let mut items = Vec::new();
        let mut alerts = Vec::new();
        for segment in segments {
            match segment {
                Segment::Text(t) => text.push_str(t),
                Segment::FileRef { path } => match self.resolve_file_ref(path, max_bytes).await {
                    Ok(item) => {
                        text.push_str(&token(path));
                        items.push(item);
                    }
                    Err(e) => {
                        text.push_str(&format!("[unresolved file ref: {path}]"));
                        alerts.push(Alert {
                            level: AlertLevel::Warn,
                            message: format!("@{path} was not attached: {e}"),
                        });
                    }
                },
            }
        }
        (text, items, alerts)
    }
}

/// Bytes read past a reference's cap: a UTF-8 character cut at the cap is whole in them.
const CHAR_ROOM: usize = 4;

/// A file's text from its start (`bytes`, of a file of `len` bytes), cut past
/// `max_bytes` with a notice; binary files (by what is shown) are refused.
fn text_of(bytes: &[u8], len: u64, path: &str, max_bytes: usize) -> Result<String, ResolveError> {
    let shown = &bytes[..utf8_prefix_len(bytes, max_bytes)];
    let binary = || ResolveError::Binary(path.to_owned());
    if looks_binary(shown) {
        return Err(binary());
    }
    let text = std::str::from_utf8(shown).map_err(|_| binary())?;
    if len > max_bytes as u64 {
        Ok(format!(
            "{text}\n[...truncated, {len} bytes total — use read_file for the rest]"
        ))
    } else {
        Ok(text.to_owned())
    }
}

/// Holds the resolved file items of the prompt being submitted and hands them to the
/// Worker right after the user item.
#[derive(Clone, Default)]
pub struct PodInterceptor {
    stash: Arc<Mutex<Vec<Item>>>,
}

impl PodInterceptor {
    pub fn stash(&self, items: Vec<Item>) {
        self.stash
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(items);
    }
}

#[async_trait::async_trait]
impl Interceptor for PodInterceptor {
    async fn on_prompt_submit(&self, _user: &Item) -> PromptAction {
        let items = std::mem::take(&mut *self.stash.lock().unwrap_or_else(PoisonError::into_inner));
        if items.is_empty() {
            PromptAction::Continue
        } else {
            PromptAction::ContinueWith(items)
        }
    }
}
