//! saki-llm-worker: the Timeline (Kind / Handler / Scope dispatch over the normalized
//! event stream), the built-in collectors, the [`Responder`] that runs one request, and
//! the [`Worker`] loop with its Tool API, interceptors and user hooks.

pub mod answer;
pub mod background;
pub mod batch_ids;
pub mod compaction;
pub mod durability;
pub mod first_call;
pub mod handler;
pub mod hook;
pub mod image;
pub mod interceptor;
mod invented;
pub mod item;
pub mod loop_guard;
pub mod pricing;
pub mod recovery;
pub mod responder;
pub mod schema;
pub mod timeline;
pub mod tool;
pub mod tool_set;
pub mod worker;

pub use background::{BackgroundBreakdown, BackgroundKind, BackgroundUsage, TokenCount};
pub use batch_ids::BatchIds;
pub use compaction::{
    Compaction, CompactionReport, CompactionStatus, CompactionTrigger, ContextGuard, ContextView,
    HistoryEdit,
};
pub use durability::Durability;
pub use handler::*;
pub use image::{image_note, ImageRef, NamedImage};
pub use interceptor::{
    Interceptor, LoopStopAction, OwnCall, PromptAction, ToolAction, ToolCallInfo, ToolResultInfo,
    TurnEndAction,
};
pub use item::{to_messages, to_messages_with, Item, ToolResultStatus};
pub use loop_guard::LoopGuard;
pub use responder::{AssistantResponse, Responder};
pub use schema::Checked;
pub use timeline::Timeline;
pub use tool::{
    ArgumentError, Tool, ToolError, ToolExecutionContext, ToolOutput, ToolServer, ToolServerError,
};
pub use tool_set::SharedTools;
pub use worker::{Observer, TurnOutcome, TurnStatus, Worker, WorkerConfig, WorkerEvent};
