//! placeholder
use std::path::Path;
pub struct FileFinder {
    files: Vec<String>,
}
pub struct FileMatch {
    pub path: String,
    pub indices: Vec<usize>,
}
impl FileFinder {
    pub fn scan(_root: &Path, _limit: usize) -> FileFinder {
        FileFinder { files: Vec::new() }
    }
    pub fn len(&self) -> usize {
        self.files.len()
    }
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
    pub fn search(&mut self, _query: &str, _limit: usize) -> Vec<FileMatch> {
        Vec::new()
    }
}
