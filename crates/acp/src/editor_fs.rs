//! The editor's buffers as a session's files: where the client offers `fs/read_text_file`
//! and `fs/write_text_file`, the file tools read and write workspace files through it, so
//! the model sees what the person has not saved yet and its edits land in the open
//! buffers. Paths were resolved and scope-checked before they get here, as for the disk;
//! listing, search, deletion and anything not text (images) stay on disk.

use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use saki_engine::fs::{DiskFs, Found, Fs, GlobMatcher, GrepQuery, Opened, Stat};
use std::io::{Error, ErrorKind};
use std::path::Path;

#[derive(Debug)]
pub(crate) struct EditorFs {
    cx: ConnectionTo<Client>,
    session: String,
    reads: bool,
    writes: bool,
}

impl EditorFs {
    pub(crate) fn new(
        cx: ConnectionTo<Client>,
        session: String,
        reads: bool,
        writes: bool,
    ) -> Self {
        Self {
            cx,
            session,
            reads,
            writes,
        }
    }

    /// The buffer's text, or `None` where the disk answers (the client reads no such
    /// file, or the file is not text).
    async fn text(&self, path: &Path) -> Option<String> {
        if !self.reads || saki_engine::fs::is_image_name(path) {
            return None;
        }
        let asked = ReadTextFileRequest::new(self.session.clone(), path.to_path_buf());
        match self.cx.send_request(asked).block_task().await {
            Ok(response) => Some(response.content),
            Err(e) => {
                tracing::debug!(error = %e, path = %path.display(), "the editor did not read a file; reading the disk");
                None
            }
        }
    }
}

fn too_large(len: u64, max: u64) -> Error {
    Error::new(
        ErrorKind::FileTooLarge,
        format!("{len} bytes, more than {max}"),
    )
}

#[async_trait::async_trait]
impl Fs for EditorFs {
    async fn stat(&self, path: &Path) -> std::io::Result<Option<Stat>> {
        DiskFs.stat(path).await
    }

    async fn read(&self, path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
        match self.text(path).await {
            Some(text) if text.len() as u64 > max => Err(too_large(text.len() as u64, max)),
            Some(text) => Ok(text.into_bytes()),
            None => DiskFs.read(path, max).await,
        }
    }

    async fn open(&self, path: &Path) -> std::io::Result<Opened> {
        match self.text(path).await {
            Some(text) => {
                let bytes = text.into_bytes();
                Ok(Opened {
                    len: bytes.len() as u64,
                    reader: Box::new(std::io::Cursor::new(bytes)),
                })
            }
            None => DiskFs.open(path).await,
        }
    }

    async fn write(&self, path: &Path, content: &[u8]) -> std::io::Result<()> {
        // Only text goes to a buffer; anything else is the disk's.
        let text = match std::str::from_utf8(content) {
            Ok(text) if self.writes => text,
            _ => return DiskFs.write(path, content).await,
        };
        let asked = WriteTextFileRequest::new(self.session.clone(), path.to_path_buf(), text);
        self.cx
            .send_request(asked)
            .block_task()
            .await
            .map(|_| ())
            .map_err(|e| Error::other(format!("the editor did not write the file: {e}")))
    }

    async fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        DiskFs.remove_file(path).await
    }

    async fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        DiskFs.list_dir(dir).await
    }

    async fn glob(
        &self,
        base: &Path,
        matcher: &GlobMatcher,
    ) -> Result<Vec<String>, saki_engine::fs::ToolError> {
        DiskFs.glob(base, matcher).await
    }

    async fn grep(
        &self,
        base: &Path,
        query: &GrepQuery,
    ) -> Result<Found, saki_engine::fs::ToolError> {
        DiskFs.grep(base, query).await
    }
}
