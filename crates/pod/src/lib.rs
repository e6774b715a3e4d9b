//! saki-pod: the session layer around a Worker. This first part holds the durable
//! session store; the scoped file view, `@path` references, alerts and project
//! instructions build on it.

pub mod commands;
pub mod dangling;
pub mod images;
pub mod store;
pub mod transcript;

pub use dangling::close_dangling_calls;
pub use store::{LoadedSession, SessionMeta, SessionStore, SessionWriter, StoreError, UndoNote};
pub mod file_ref;

pub use file_ref::{
    parse_prompt, Alert, AlertLevel, FsView, PodInterceptor, ResolveError, Segment,
};
pub mod instructions;

pub use instructions::{estimate_tokens, system_prompt, WorkspaceFacts};
pub mod compaction;
pub mod compactor;
pub mod reread;
pub mod summary;

pub use compactor::{CompactionSettings, Compactor};
pub mod agents;
pub mod frontmatter;
pub mod memory;
pub mod skill_tool;
pub mod skills;
pub mod subagent_log;
