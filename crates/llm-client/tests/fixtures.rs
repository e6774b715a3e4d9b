#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every raw SSE fixture, decoded offline, over real HTTP through the mock server, and
//! re-chunked at random byte boundaries.

mod common;

use common::*;
use futures::StreamExt;
use proptest::prelude::*;
use saki_llm_client::{decode_sse_chunks, CancellationToken, Client, ClientConfig, Request};
use saki_testkit::{MockServer, Reply};

#[test]
fn every_fixture_decodes_to_its_expectation() {
    for fixture in all_fixtures() {
        let events = decode_sse_chunks(fixture.wire(), [fixture.sse.as_bytes()]);
        assert_matches_expect(&fixture, &fold(&events));
    }
}

#[tokio::test]
async fn every_fixture_streams_over_http() {
    let server = MockServer::start().unwrap();
    for fixture in all_fixtures() {
        server.push(Reply::raw_sse(fixture.sse.clone()));
        let wire = fixture.wire();
        let base = match wire {
            saki_llm_client::WireApi::Chat | saki_llm_client::WireApi::Responses => {
                server.openai_url()
            }
            _ => server.url(),
        };
        let client = Client::new(ClientConfig::new(wire, base)).unwrap();
        let request = Request {
            model: "mock-model".into(),
            ..Default::default()
        };
        let stream = client
            .stream(&request, CancellationToken::new())
            .await
            .unwrap();
        let events: Vec<_> = stream.collect().await;
        assert_matches_expect(&fixture, &fold(&events));
    }
}

fn split_at_points(bytes: &[u8], mut points: Vec<usize>) -> Vec<&[u8]> {
    points.retain(|p| *p < bytes.len());
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for p in points {
        chunks.push(&bytes[start..p]);
        start = p;
    }
    chunks.push(&bytes[start..]);
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_rechunking_yields_the_same_events(
        fixture_pick in any::<prop::sample::Index>(),
        points in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let fixtures = all_fixtures();
        let fixture = &fixtures[fixture_pick.index(fixtures.len())];
        let bytes = fixture.sse.as_bytes();
        let whole = decode_sse_chunks(fixture.wire(), [bytes]);
        let cut = split_at_points(bytes, points.iter().map(|i| i.index(bytes.len().max(1))).collect());
        let rechunked = decode_sse_chunks(fixture.wire(), cut);
        prop_assert_eq!(without_ids(&whole), without_ids(&rechunked));
    }
}

#[test]
fn byte_at_a_time_matches_for_every_fixture() {
    for fixture in all_fixtures() {
        let bytes = fixture.sse.as_bytes();
        let whole = decode_sse_chunks(fixture.wire(), [bytes]);
        let single = decode_sse_chunks(fixture.wire(), bytes.chunks(1));
        assert_eq!(
            without_ids(&whole),
            without_ids(&single),
            "{}/{}",
            fixture.provider,
            fixture.name
        );
    }
}
