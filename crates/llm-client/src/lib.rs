//! saki-llm-client: speaks four provider wire protocols and turns every one of them
//! into the same flat [`Event`] stream. See the crate README for the invariants.

pub mod constrained;
pub mod decode;
pub mod error;
pub mod event;
pub mod image;
pub mod prompted;
pub mod protocol;
pub mod request;
pub mod server_info;
pub mod sse;
pub mod transport;

pub use decode::decode_sse_chunks;
pub use error::{is_parser_failure, ClientError};
pub use event::*;
pub use image::{Base64, ImagePart};
pub use prompted::ToolCalling;
pub use protocol::{generate_call_id, Decoder, WireApi};
pub use request::{
    ContentPart, Message, Request, ResponseSchema, Role, ThinkingConfig, ToolChoice, ToolDefinition,
};
pub use tokio_util::sync::CancellationToken;
pub use transport::{Client, ClientConfig, EventStream, RetryPolicy, Timeouts};
