//! read_file, write_file, edit and delete_file.

use crate::common::{failed, looks_binary, parse_args, prefix_at_boundary};
use crate::doubled::{doubled_error, doubles_text};
use crate::echo::{echo_error, echoed_note};
use crate::edit_match::{loose_edit, spaced_edit, whole_line_removal};
use crate::suggest::scope_failure;
use crate::workspace::Workspace;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

mod page;

pub struct ReadFile(pub Arc<Workspace>);
pub struct WriteFile(pub Arc<Workspace>);
pub struct Edit(pub Arc<Workspace>);
pub struct DeleteFile(pub Arc<Workspace>);

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    /// First line to show, 1-based.
    offset: Option<usize>,
    limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn read_only(&self) -> bool {
        true
    }
    fn description(&self) -> &str {
        "Read a text file, or view an image (PNG, JPEG, GIF, WebP). Optional offset (first line, 1-based) and limit (number of lines) for large files."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root"},
            "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based); omit to start at the top"},
            "limit": {"type": "integer", "minimum": 1, "description": "Number of lines; omit to read the whole file"}
        }, "required": ["path"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse_args(input)?;
        let path = self
            .0
            .resolve_to_read(&args.path)
            .map_err(|e| scope_failure(&self.0, &args.path, e))?;
        let fs = self.0.fs();
        if is_dir(fs, &path).await {
            // What the model wanted to see is most likely in the listing.
            let listing = crate::listing::list_dir(fs.as_ref(), &path, &args.path).await?;
            return Ok(ToolOutput::new(format!(
                "[{} is a directory, not a file; its entries:]\n{}",
                args.path, listing.content
            )));
        }
        // Named like an image: read as one (with its own size cap) or refused, never
        // as text; an image under another name is found by its bytes below.
        if crate::image::is_image_name(&path) {
            return crate::image::load_from(fs.as_ref(), &path, &args.path)
                .await
                .map(|image| image_output(&args.path, image))
                .map_err(|e| failed(e.to_string()));
        }
        // Read as a stream: a huge file or line costs what is shown, not its size.
        let cannot = |e: std::io::Error| failed(format!("cannot read {}: {e}", args.path));
        let opened = fs.open(&path).await.map_err(cannot)?;
        let (mut file, len) = (opened.reader, opened.len);
        let head = page::head(&mut file).map_err(cannot)?;
        if crate::image::sniff(&head).is_some() {
            // An image under another name: read whole, within the image size cap.
            return crate::image::load_from(fs.as_ref(), &path, &args.path)
                .await
                .map(|image| image_output(&args.path, image))
                .map_err(|e| failed(e.to_string()));
        }
        if page::head_is_binary(&head, len) {
            return Err(failed(format!(
                "{} is a binary file ({len} bytes); not shown",
                args.path
            )));
        }
        page::render(
            file,
            &args.path,
            args.offset.unwrap_or(1),
            args.limit,
            self.0.output_cap(),
        )
    }
}

/// Whether `path` is a directory (as `fs` sees it).
async fn is_dir(fs: &std::sync::Arc<dyn crate::fs::Fs>, path: &std::path::Path) -> bool {
    matches!(fs.stat(path).await, Ok(Some(s)) if s.kind == crate::fs::Kind::Dir)
}

/// An image read for the model: a line saying what it is, the image itself after it
/// (the Worker shows it, or says it is not shown when the model reads no images).
fn image_output(shown: &str, image: crate::image::Prepared) -> ToolOutput {
    let what = image.describe();
    ToolOutput::new(format!("[Image: {shown} ({what})]"))
        .with_summary(what)
        .with_image(shown, image.image)
}

/// The most of a file read to see whether it already holds a tool-result note.
const ECHO_CHECK_MAX_BYTES: u64 = 16 << 20;

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "Create or overwrite a file with the given content. Prefer edit for changes to existing files."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "content": {"type": "string", "description": "The complete new file content"}
        }, "required": ["path", "content"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_args(input)?;
        let path = self
            .0
            .resolve_for_write(&args.path)
            .map_err(|e| scope_failure(&self.0, &args.path, e))?;
        let fs = self.0.fs();
        let existing = fs.stat(&path).await.ok().flatten();
        if existing.is_some_and(|s| s.kind == crate::fs::Kind::Dir) {
            return Err(failed(format!("{} is a directory", args.path)));
        }
        let existed = existing.is_some();
        // The file's own text is read only when the new text holds a note at all.
        if echoed_note(&args.content, "").is_some() {
            let before = fs
                .read(&path, ECHO_CHECK_MAX_BYTES)
                .await
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            if let Some(note) = echoed_note(&args.content, &before) {
                return Err(failed(echo_error(&args.path, note)));
            }
        }
        fs.write(&path, args.content.as_bytes())
            .await
            .map_err(|e| failed(format!("cannot write {}: {e}", args.path)))?;
        let verb = if existed { "overwrote" } else { "created" };
        let msg = format!(
            "{verb} {} ({} bytes)",
            self.0.display(&path),
            args.content.len()
        );
        Ok(ToolOutput::new(msg.clone()).with_summary(msg))
    }
}

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait::async_trait]
impl Tool for Edit {
    fn name(&self) -> &str {
        "edit"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "Replace an exact string in a file. old_string must match exactly once unless replace_all is true; an empty old_string appends new_string to the end of the file. Returns a unified diff."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string", "description": "Exact text to replace, including whitespace; empty to append"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean", "default": false}
        }, "required": ["path", "old_string", "new_string"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: EditArgs = parse_args(input)?;
        let path = self
            .0
            .resolve(&args.path)
            .map_err(|e| scope_failure(&self.0, &args.path, e))?;
        let fs = self.0.fs();
        let bytes = fs
            .read(&path, u64::MAX)
            .await
            .map_err(|e| failed(format!("cannot read {}: {e}", args.path)))?;
        if looks_binary(&bytes) {
            return Err(failed(format!("{} is a binary file", args.path)));
        }
        let before = String::from_utf8_lossy(&bytes).into_owned();
        if args.old_string == args.new_string {
            // A line the file lacks, sent as both strings, is a line the model means to add.
            if !args.old_string.is_empty() && !before.contains(&args.old_string) {
                return Err(failed(not_found(
                    &args.path,
                    &before,
                    AppendHint::Call(&args.new_string),
                )));
            }
            return Err(ToolError::InvalidInput(
                "old_string and new_string are the same; nothing would change".into(),
            ));
        }
        if let Some(note) = echoed_note(&args.new_string, &before) {
            return Err(failed(echo_error(&args.path, note)));
        }
        let mut loose_note = None;
        let (after, count) = if args.old_string.is_empty() {
            (append_line(&before, &args.new_string), 1)
        } else {
            let old_string = whole_line_removal(&before, &args.old_string, &args.new_string)
                .unwrap_or_else(|| args.old_string.clone());
            let count = before.matches(&old_string).count();
            match (count, args.replace_all) {
                (0, _) => {
                    let (old, new) = (&args.old_string, &args.new_string);
                    let second_chance = spaced_edit(&before, old, new)
                        .map(|e| (e, "with other spacing, and was replaced keeping the file's line breaks and indentation"))
                        .or_else(|| {
                            loose_edit(&before, old, new)
                                .map(|e| (e, "word for word, and only its words were changed"))
                        });
                    let Some((loose, how)) = second_chance else {
                        let hint = if args.new_string.contains(&args.old_string) {
                            AppendHint::Words
                        } else {
                            AppendHint::None
                        };
                        return Err(failed(not_found(&args.path, &before, hint)));
                    };
                    loose_note = Some(format!(
                        "[old_string was not in the file verbatim; it matched `{}` on line {} {how}]\n",
                        prefix_at_boundary(&loose.matched, 200),
                        loose.line
                    ));
                    (loose.after, 1)
                }
                (n, false) if n > 1 => {
                    return Err(failed(format!(
                        "old_string matches {n} places in {}; include more surrounding text to make it unique, or set replace_all",
                        args.path
                    )))
                }
                _ => {
                    if count == 1 && doubles_text(&before, &old_string, &args.new_string) {
                        return Err(failed(doubled_error(&args.path, &args.new_string)));
                    }
                    let after = if args.replace_all {
                        before.replace(&old_string, &args.new_string)
                    } else {
                        before.replacen(&old_string, &args.new_string, 1)
                    };
                    (after, count)
                }
            }
        };
        fs.write(&path, after.as_bytes())
            .await
            .map_err(|e| failed(format!("cannot write {}: {e}", args.path)))?;
        let shown = self.0.display(&path);
        let diff = similar::TextDiff::from_lines(&before, &after)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string();
        let summary = if args.old_string.is_empty() {
            format!("appended a line to {shown}")
        } else {
            format!(
                "{count} replacement{} in {shown}",
                if count == 1 { "" } else { "s" }
            )
        };
        Ok(ToolOutput::new(format!(
            "{}{summary}\n{}",
            loose_note.unwrap_or_default(),
            prefix_at_boundary(&diff, self.0.output_cap())
        ))
        .with_summary(summary))
    }
}

/// `text` appended to `before` on a line of its own: after a newline if `before` lacks
/// one, and ending in one if `before` did (the file keeps its convention).
fn append_line(before: &str, text: &str) -> String {
    let mut after = before.to_owned();
    if !after.is_empty() && !after.ends_with('\n') {
        after.push('\n');
    }
    after.push_str(text);
    if before.ends_with('\n') && !text.ends_with('\n') {
        after.push('\n');
    }
    after
}

/// Lines of the file shown when old_string is not found: what it could have matched.
const NOT_FOUND_PREVIEW_LINES: usize = 40;

/// How a not-found error says to append.
enum AppendHint<'a> {
    None,
    /// new_string holds old_string: the model may have meant to add text, not change any;
    /// models asked to append a line search for the line they are adding, then replace
    /// the nearest line with it.
    Words,
    /// old_string and new_string are this same text, which the file lacks: nothing else
    /// is meant than adding it, so the error shows the call that does, in the model's
    /// own words (small models follow a call they are shown, not a sentence).
    Call(&'a str),
}

/// The not-found error, with the start of the file so the model can copy the exact
/// text rather than guess it again, and the way to append when that may be what was meant.
fn not_found(path: &str, content: &str, hint: AppendHint) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let shown = lines.len().min(NOT_FOUND_PREVIEW_LINES);
    let words =
        " To add new_string as a line at the end of the file, call edit with an empty old_string.";
    let hint = match hint {
        AppendHint::None => String::new(),
        AppendHint::Words => words.to_owned(),
        AppendHint::Call(text) => format!(
            "{words} Call it as {}.",
            json!({"name": "edit", "arguments": {"path": path, "old_string": "", "new_string": text}})
        ),
    };
    let mut message = format!(
        "old_string was not found in {path}; copy the exact text from the file.{hint} Its content{}:\n",
        if shown < lines.len() {
            format!(" (first {shown} of {} lines)", lines.len())
        } else {
            String::new()
        }
    );
    for line in &lines[..shown] {
        message.push_str(line);
        message.push('\n');
    }
    message
}

#[derive(Deserialize)]
struct DeleteArgs {
    path: String,
}

#[async_trait::async_trait]
impl Tool for DeleteFile {
    fn name(&self) -> &str {
        "delete_file"
    }
    fn rank(&self) -> u32 {
        crate::rank_of(self.name())
    }
    fn description(&self) -> &str {
        "Delete a file."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"}
        }, "required": ["path"]})
    }
    async fn execute(
        &self,
        input: &str,
        _ctx: ToolExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: DeleteArgs = parse_args(input)?;
        let path = self
            .0
            .resolve_for_write(&args.path)
            .map_err(|e| scope_failure(&self.0, &args.path, e))?;
        // A link is not followed: what is named is what goes, and only inside the scope.
        let lexical = self.0.absolute(&args.path);
        let fs = self.0.fs();
        let gone = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let meta = fs
            .stat(&lexical)
            .await
            .and_then(|s| s.ok_or_else(gone))
            .map_err(|e| failed(format!("cannot delete {}: {e}", args.path)))?;
        if meta.kind == crate::fs::Kind::Symlink {
            return Err(failed(format!(
                "{} is a symbolic link; delete_file removes regular files only",
                args.path
            )));
        }
        if meta.kind != crate::fs::Kind::File {
            return Err(failed(format!(
                "{} is not a regular file; delete_file removes regular files only",
                args.path
            )));
        }
        fs.remove_file(&path)
            .await
            .map_err(|e| failed(format!("cannot delete {}: {e}", args.path)))?;
        let msg = format!("deleted {} ({} bytes)", self.0.display(&path), meta.len);
        Ok(ToolOutput::new(msg.clone()).with_summary(msg))
    }
}
