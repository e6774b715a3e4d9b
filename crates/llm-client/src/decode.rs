//! Decoding without a network: feed SSE bytes, get events. Used by the transport's
//! tests, the benchmark and anyone replaying a captured stream.

use crate::event::Event;
use crate::protocol::WireApi;
use eventsource_stream::Eventsource;
use futures::StreamExt;

/// Decodes a complete SSE body delivered in the given chunks (any split is allowed)
/// and returns every event, ending with the terminal status.
pub fn decode_sse_chunks<I, B>(wire: WireApi, chunks: I) -> Vec<Event>
where
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    let owned: Vec<Result<bytes::Bytes, std::convert::Infallible>> = chunks
        .into_iter()
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c.as_ref())))
        .collect();
    futures::executor::block_on(async move {
        let mut decoder = wire.decoder();
        let mut out = Vec::new();
        let mut sse = futures::stream::iter(owned).eventsource();
        while let Some(event) = sse.next().await {
            match event {
                Ok(e) => decoder.on_sse(&e.event, &e.data, &mut out),
                Err(e) => decoder.fail(Some("sse".into()), e.to_string(), &mut out),
            }
            if decoder.is_finished() {
                break;
            }
        }
        decoder.end_of_stream(&mut out);
        out
    })
}
