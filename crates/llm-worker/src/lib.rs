//! saki-llm-worker: the Timeline (Kind / Handler / Scope dispatch over the normalized
//! event stream), the built-in collectors, and the [`Responder`] that runs one request.

pub mod handler;
pub mod responder;
pub mod timeline;

pub use handler::*;
pub use responder::{AssistantResponse, Responder};
pub use timeline::Timeline;
