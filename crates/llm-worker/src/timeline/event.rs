//! Timeline events. The client's normalized events already have exactly the shape the
//! Timeline needs, so they are re-exported rather than copied into a twin type.

pub use saki_llm_client::event::{
    BlockAbort, BlockDelta, BlockMetadata, BlockStart, BlockStop, BlockType, DeltaContent,
    ErrorEvent, Event, PingEvent, ResponseStatus, StatusEvent, StopReason, UsageEvent,
};
