//! Shared block bookkeeping for every decoder: opens and closes blocks so that the
//! Event invariants hold whatever the provider sends (or fails to send).

use crate::event::{
    BlockAbort, BlockDelta, BlockMetadata, BlockStart, BlockStop, BlockType, DeltaContent,
    ErrorEvent, Event, ResponseStatus, StatusEvent, StopReason, UsageEvent,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most text, reasoning and tool arguments one response may carry. A tool call that
/// writes a 5 MB file fits many times over; a server that streams without end does not
/// take the machine's memory with it.
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, Default)]
pub(crate) struct DecoderCore {
    started: bool,
    finished: bool,
    open: Option<(usize, BlockType)>,
    next_index: usize,
    tool_calls: usize,
    /// Tool-call ids already used in this response.
    call_ids: std::collections::HashSet<String>,
    /// Bytes of content received so far.
    received: usize,
}

impl DecoderCore {
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn open_block_type(&self) -> Option<BlockType> {
        self.open.map(|(_, t)| t)
    }

    pub fn saw_tool_calls(&self) -> bool {
        self.tool_calls > 0
    }

    /// Emits `Status(Started)` once, before anything else.
    pub fn ensure_started(&mut self, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::Status(StatusEvent::new(ResponseStatus::Started)));
        }
    }

    /// Closes whatever is open and opens a new block. A tool-call id the response already
    /// used gets a suffix: results are matched to calls by id, by saki and the provider.
    pub fn open(&mut self, out: &mut Vec<Event>, mut metadata: BlockMetadata) {
        self.ensure_started(out);
        self.close(out, None);
        if let BlockMetadata::ToolUse { id, .. } = &mut metadata {
            if self.call_ids.contains(id.as_str()) {
                let mut n = 2;
                while self.call_ids.contains(&format!("{id}_{n}")) {
                    n += 1;
                }
                tracing::warn!(id = %id, "duplicate tool-call id in one response; renamed");
                *id = format!("{id}_{n}");
            }
            self.call_ids.insert(id.clone());
        }
        let block_type = metadata.block_type();
        if block_type == BlockType::ToolUse {
            self.tool_calls += 1;
        }
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((index, block_type));
        out.push(Event::BlockStart(BlockStart {
            index,
            block_type,
            metadata,
        }));
    }

    /// Appends a delta to the open block, opening a text or thinking block first when
    /// the delta needs one and a different block (or none) is open.
    pub fn delta(&mut self, out: &mut Vec<Event>, delta: DeltaContent) {
        if self.finished {
            return;
        }
        let size = match &delta {
            DeltaContent::Text(t)
            | DeltaContent::Thinking(t)
            | DeltaContent::InputJson(t)
            | DeltaContent::Signature(t) => t.len(),
        };
        if self.take(out, size) {
            self.push_delta(out, delta);
        }
    }

    /// [`Self::delta`] for content already counted with [`Self::take`].
    pub fn push_delta(&mut self, out: &mut Vec<Event>, delta: DeltaContent) {
        let wanted = match &delta {
            DeltaContent::Text(_) => Some(BlockMetadata::Text),
            DeltaContent::Thinking(_) => Some(BlockMetadata::Thinking),
            DeltaContent::InputJson(_) | DeltaContent::Signature(_) => None,
        };
        if let Some(metadata) = wanted {
            if self.open_block_type() != Some(metadata.block_type()) {
                self.open(out, metadata);
            }
        }
        match self.open {
            Some((index, _)) => out.push(Event::BlockDelta(BlockDelta { index, delta })),
            None => tracing::debug!("delta without an open block dropped"),
        }
    }

    /// Counts `size` more bytes of content; past [`MAX_RESPONSE_BYTES`] the response fails.
    /// Decoders that accumulate content before emitting it (Chat tool calls) call it as
    /// the bytes arrive.
    pub fn take(&mut self, out: &mut Vec<Event>, size: usize) -> bool {
        self.received = self.received.saturating_add(size);
        if self.received > MAX_RESPONSE_BYTES {
            self.fail(
                out,
                Some("response_too_large".into()),
                format!(
                    "the response exceeded saki's limit of {} MiB of text and tool arguments",
                    MAX_RESPONSE_BYTES / (1024 * 1024)
                ),
            );
            return false;
        }
        true
    }

    /// A stream event that is not valid JSON. Outside a tool call it is skipped; inside
    /// one, joining the fragments around it could make different valid arguments, so the
    /// call is aborted and the response fails. `in_call` says whether a decoder that
    /// accumulates calls itself holds a partial one.
    pub fn malformed(
        &mut self,
        out: &mut Vec<Event>,
        wire: &str,
        data: &str,
        err: &serde_json::Error,
        in_call: bool,
    ) {
        let preview: String = data.chars().take(200).collect();
        if in_call || self.open_block_type() == Some(BlockType::ToolUse) {
            tracing::warn!(wire, error = %err, data = %preview, "malformed stream event inside a tool call");
            self.fail(
                out,
                Some("malformed_event".into()),
                format!("the {wire} stream sent a malformed event inside a tool call ({err}); the call was not run"),
            );
        } else {
            tracing::warn!(wire, error = %err, data = %preview, "skipping malformed stream event");
        }
    }

    pub fn close(&mut self, out: &mut Vec<Event>, stop_reason: Option<StopReason>) {
        if let Some((index, block_type)) = self.open.take() {
            out.push(Event::BlockStop(BlockStop {
                index,
                block_type,
                stop_reason,
            }));
        }
    }

    pub fn abort(&mut self, out: &mut Vec<Event>, reason: &str) {
        if let Some((index, block_type)) = self.open.take() {
            out.push(Event::BlockAbort(BlockAbort {
                index,
                block_type,
                reason: reason.to_owned(),
            }));
        }
    }

    pub fn usage(&mut self, out: &mut Vec<Event>, usage: UsageEvent) {
        if !usage.is_empty() {
            self.ensure_started(out);
            out.push(Event::Usage(usage));
        }
    }

    /// Normal end. A response that carried tool calls stopped for tool use, whatever
    /// the provider called it.
    pub fn complete(&mut self, out: &mut Vec<Event>, stop_reason: Option<StopReason>) {
        if self.finished {
            return;
        }
        let stop_reason = match stop_reason {
            Some(StopReason::EndTurn) | None if self.saw_tool_calls() => Some(StopReason::ToolUse),
            other => other,
        };
        self.ensure_started(out);
        if stop_reason == Some(StopReason::MaxTokens)
            && self.open_block_type() == Some(BlockType::ToolUse)
        {
            // The output limit cut this call short: its arguments are not whole.
            self.abort(out, "the tool call was cut off by the output token limit");
        }
        self.close(out, stop_reason);
        self.terminal(out, ResponseStatus::Completed, stop_reason);
    }

    pub fn fail(&mut self, out: &mut Vec<Event>, code: Option<String>, message: String) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        self.abort(out, &message);
        out.push(Event::Error(ErrorEvent { code, message }));
        self.terminal(out, ResponseStatus::Failed, None);
    }

    pub fn cancel(&mut self, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        self.abort(out, "cancelled");
        self.terminal(out, ResponseStatus::Cancelled, None);
    }

    /// The byte stream ended. Without a finish signal the text received so far is
    /// kept (text and thinking blocks stop) but a half-streamed tool call is aborted.
    pub fn end_of_stream(&mut self, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        match self.open_block_type() {
            Some(BlockType::ToolUse) => self.abort(out, "stream ended inside a tool call"),
            _ => self.close(out, None),
        }
        self.terminal(out, ResponseStatus::Incomplete, None);
    }

    fn terminal(
        &mut self,
        out: &mut Vec<Event>,
        status: ResponseStatus,
        stop_reason: Option<StopReason>,
    ) {
        self.finished = true;
        out.push(Event::Status(StatusEvent {
            status,
            stop_reason,
        }));
    }
}

/// A tool-call id for providers that give none. Unique within the process: a random
/// prefix per process plus a counter.
pub fn generate_call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let prefix = *PREFIX.get_or_init(|| fastrand::u32(..));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("call_{prefix:08x}{n:06x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_unique() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| generate_call_id()).collect();
        assert_eq!(ids.len(), 1000);
    }

    #[test]
    fn end_of_stream_keeps_text_and_aborts_tool_call() {
        let mut core = DecoderCore::default();
        let mut out = Vec::new();
        core.delta(&mut out, DeltaContent::Text("hi".into()));
        core.end_of_stream(&mut out);
        assert!(matches!(out[3], Event::BlockStop(_)));
        assert!(matches!(
            out.last(),
            Some(Event::Status(StatusEvent {
                status: ResponseStatus::Incomplete,
                ..
            }))
        ));

        let mut core = DecoderCore::default();
        let mut out = Vec::new();
        core.open(
            &mut out,
            BlockMetadata::ToolUse {
                id: "a".into(),
                name: "b".into(),
            },
        );
        core.end_of_stream(&mut out);
        assert!(matches!(out[2], Event::BlockAbort(_)));
    }

    #[test]
    fn terminal_status_is_emitted_once() {
        let mut core = DecoderCore::default();
        let mut out = Vec::new();
        core.complete(&mut out, Some(StopReason::EndTurn));
        core.fail(&mut out, None, "late".into());
        core.end_of_stream(&mut out);
        let terminals = out
            .iter()
            .filter(|e| matches!(e, Event::Status(s) if s.status.is_terminal()))
            .count();
        assert_eq!(terminals, 1);
    }
}
