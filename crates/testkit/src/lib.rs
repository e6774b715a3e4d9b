//! saki-testkit: a mock LLM provider server for tests. It speaks OpenAI Chat
//! Completions, OpenAI Responses, Anthropic Messages and Gemini streaming, plays
//! scripted turns or raw SSE files, records every request, and injects faults.

mod images;
mod render;
mod script;
mod server;

pub use images::{TINY_PNG, TINY_PNG_BASE64};
pub use render::{render, split_sse, Wire};
pub use script::{Block, Endless, Faults, Finish, Gate, Reply, Turn, Usage};
pub use server::{MockServer, RecordedRequest, StartError};
