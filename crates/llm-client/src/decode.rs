//! Decoding without a network: feed SSE bytes, get events. Used by tests, the
//! benchmark and anyone replaying a captured stream.

use crate::event::Event;
use crate::protocol::{Decoder, WireApi};
use crate::sse::SseParser;

/// Decodes a complete SSE body delivered in the given chunks (any split is allowed)
/// and returns every event, ending with the terminal status.
pub fn decode_sse_chunks<I, B>(wire: WireApi, chunks: I) -> Vec<Event>
where
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    let mut decoder = wire.decoder();
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for chunk in chunks {
        feed_chunk(&mut parser, decoder.as_mut(), chunk.as_ref(), &mut out);
        if decoder.is_finished() {
            break;
        }
    }
    end_stream(&mut parser, decoder.as_mut(), &mut out);
    out
}

/// Feeds one chunk; returns whether it completed any SSE event (keep-alive comments do
/// not). A line or event past the parser's limit fails the response.
pub(crate) fn feed_chunk(
    parser: &mut SseParser,
    decoder: &mut dyn Decoder,
    chunk: &[u8],
    out: &mut Vec<Event>,
) -> bool {
    let mut events = false;
    parser.feed(chunk, &mut |t, d| {
        events = true;
        decoder.on_sse(t, d, out);
    });
    if parser.overflow() {
        decoder.fail(Some("stream_too_large".into()), too_large(), out);
    }
    events
}

/// The byte stream ended: a last event without its blank line still counts, and a JSON
/// error written into the stream without SSE framing (Gemini does this, with status 200)
/// fails the response with the provider's message.
pub(crate) fn end_stream(parser: &mut SseParser, decoder: &mut dyn Decoder, out: &mut Vec<Event>) {
    parser.finish(&mut |t, d| decoder.on_sse(t, d, out));
    match stray_json_error(parser.stray()) {
        Some((code, message)) => decoder.fail_at_end(code, message, out),
        None => decoder.end_of_stream(out),
    }
}

pub(crate) fn too_large() -> String {
    format!(
        "a stream line or event exceeded saki's limit of {} MiB",
        crate::sse::MAX_EVENT_BYTES / (1024 * 1024)
    )
}

/// `{"error": {...}}` (or a list of them) in the lines that were not SSE.
pub(crate) fn stray_json_error(stray: &str) -> Option<(Option<String>, String)> {
    let value: serde_json::Value = serde_json::from_str(stray.trim()).ok()?;
    let error = value
        .get("error")
        .or_else(|| value.as_array()?.first()?.get("error"))?;
    Some(crate::protocol::error_parts(error))
}
