//! Decoding without a network: feed SSE bytes, get events. Used by tests, the
//! benchmark and anyone replaying a captured stream.

use crate::event::Event;
use crate::protocol::WireApi;
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
        parser.feed(chunk.as_ref(), &mut |t, d| decoder.on_sse(t, d, &mut out));
        if decoder.is_finished() {
            break;
        }
    }
    parser.finish(&mut |t, d| decoder.on_sse(t, d, &mut out));
    decoder.end_of_stream(&mut out);
    out
}
