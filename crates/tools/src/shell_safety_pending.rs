//! Placeholder until the tree-sitter classifier lands: proves nothing read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Safety {
    ReadOnly,
    Write,
    Unknown,
}
pub fn classify(_command: &str) -> Safety {
    Safety::Unknown
}
