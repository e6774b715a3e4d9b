//! The normalized event model: every provider stream becomes this flat sequence.
//!
//! Invariants the decoders uphold: a stream starts with `Status(Started)`, every
//! `BlockStart` is followed by exactly one `BlockStop` or `BlockAbort` for the same
//! index before the next block opens, and the stream ends with exactly one terminal
//! status (`Completed`, `Incomplete`, `Failed` or `Cancelled`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Ping(PingEvent),
    Usage(UsageEvent),
    Status(StatusEvent),
    Error(ErrorEvent),
    BlockStart(BlockStart),
    BlockDelta(BlockDelta),
    BlockStop(BlockStop),
    BlockAbort(BlockAbort),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PingEvent {
    pub timestamp: Option<u64>,
}

/// Token usage as a provider reported it. Fields a provider did not report stay `None`.
/// Within one request later values supersede earlier ones (providers report cumulative counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageEvent {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
}

impl UsageEvent {
    /// Folds a later report into this one: every field the later report carries wins.
    pub fn merge(&mut self, later: &UsageEvent) {
        fn pick(slot: &mut Option<u64>, later: Option<u64>) {
            if later.is_some() {
                *slot = later;
            }
        }
        pick(&mut self.input_tokens, later.input_tokens);
        pick(&mut self.output_tokens, later.output_tokens);
        pick(&mut self.total_tokens, later.total_tokens);
        pick(
            &mut self.cache_read_input_tokens,
            later.cache_read_input_tokens,
        );
        pick(
            &mut self.cache_creation_input_tokens,
            later.cache_creation_input_tokens,
        );
    }

    pub fn is_empty(&self) -> bool {
        *self == UsageEvent::default()
    }

    /// The size of the prompt the report describes. Anthropic counts cached input apart
    /// from `input_tokens`; the other protocols include it (their cache figure is a part).
    pub fn prompt_tokens(&self, wire_api: crate::WireApi) -> Option<u64> {
        let input = self.input_tokens?;
        Some(match wire_api {
            crate::WireApi::Anthropic => {
                input
                    + self.cache_read_input_tokens.unwrap_or(0)
                    + self.cache_creation_input_tokens.unwrap_or(0)
            }
            _ => input,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusEvent {
    pub status: ResponseStatus,
    /// Why the model stopped; set on `Completed` when the provider said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}

impl StatusEvent {
    pub fn new(status: ResponseStatus) -> Self {
        Self {
            status,
            stop_reason: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseStatus {
    Started,
    /// The provider signalled a normal end of the response.
    Completed,
    /// The stream ended without any finish signal; what arrived is kept.
    Incomplete,
    Cancelled,
    Failed,
}

impl ResponseStatus {
    pub fn is_terminal(self) -> bool {
        !matches!(self, ResponseStatus::Started)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEvent {
    pub code: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockType {
    Text,
    Thinking,
    ToolUse,
    ToolResult,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStart {
    pub index: usize,
    pub block_type: BlockType,
    pub metadata: BlockMetadata,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockMetadata {
    Text,
    Thinking,
    ToolUse { id: String, name: String },
    ToolResult { tool_use_id: String },
}

impl BlockMetadata {
    pub fn block_type(&self) -> BlockType {
        match self {
            BlockMetadata::Text => BlockType::Text,
            BlockMetadata::Thinking => BlockType::Thinking,
            BlockMetadata::ToolUse { .. } => BlockType::ToolUse,
            BlockMetadata::ToolResult { .. } => BlockType::ToolResult,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDelta {
    pub index: usize,
    pub delta: DeltaContent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum DeltaContent {
    Text(String),
    Thinking(String),
    InputJson(String),
    /// An opaque signature that must be sent back with the block it belongs to
    /// (Anthropic thinking signatures, Gemini thought signatures).
    Signature(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStop {
    pub index: usize,
    pub block_type: BlockType,
    pub stop_reason: Option<StopReason>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    ContentFilter,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockAbort {
    pub index: usize,
    pub block_type: BlockType,
    pub reason: String,
}
