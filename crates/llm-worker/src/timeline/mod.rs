//! The Timeline: dispatches the flat event stream to typed handlers, giving block
//! handlers a scope that lives from `BlockStart` to `BlockStop` / `BlockAbort`.

mod collectors;
pub mod event;
#[allow(clippy::module_inception)]
mod timeline;

pub use collectors::{
    TextBlockCollector, TextCollectorState, Thinking, ThinkingBlockCollector,
    ThinkingCollectorState, ToolCall, ToolCallCollector, ToolCollectorState, UsageCollector,
};
pub use timeline::{ErasedBlockHandler, ErasedHandler, HandlerWrapper, Timeline};

#[cfg(test)]
mod tests;
