#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Responder over real HTTP: blocks of every protocol assembled in arrival order.

use saki_llm_client::*;
use saki_llm_worker::{Handler, Responder, TextBlockEvent, TextBlockKind};
use saki_testkit::{MockServer, Turn};
use std::sync::{Arc, Mutex};

fn client(server: &MockServer, wire: WireApi) -> Client {
    let base = match wire {
        WireApi::Chat | WireApi::Responses => server.openai_url(),
        _ => server.url(),
    };
    Client::new(ClientConfig::new(wire, base)).unwrap()
}

struct Live(Arc<Mutex<String>>);
impl Handler<TextBlockKind> for Live {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), e: &TextBlockEvent) {
        if let TextBlockEvent::Delta(d) = e {
            self.0.lock().unwrap().push_str(d);
        }
    }
}

#[tokio::test]
async fn responses_are_assembled_in_block_order_for_every_protocol() {
    let server = MockServer::start().unwrap();
    for wire in WireApi::ALL {
        server.push(
            Turn::new()
                .with_thinking("plan it")
                .with_text("Looking.")
                .with_tool_call("call_a", "read_file", r#"{"path":"x"}"#)
                .with_usage(10, 5),
        );
        let live = Arc::new(Mutex::new(String::new()));
        let mut responder = Responder::new();
        responder.timeline_mut().on_text_block(Live(live.clone()));
        let request = Request {
            model: "m".into(),
            ..Default::default()
        };
        let r = responder
            .respond(&client(&server, wire), &request, CancellationToken::new())
            .await
            .unwrap();
        assert!(
            matches!(r.content[0], ContentPart::Thinking { .. }),
            "{wire}: {:?}",
            r.content
        );
        assert!(matches!(r.content[1], ContentPart::Text { .. }), "{wire}");
        assert!(
            matches!(r.content[2], ContentPart::ToolUse { .. }),
            "{wire}"
        );
        assert_eq!(r.thinking(), "plan it");
        assert_eq!(r.text(), "Looking.");
        assert_eq!(
            *live.lock().unwrap(),
            "Looking.",
            "{wire}: extra handlers see the deltas"
        );
        assert_eq!(r.tool_calls()[0].1, "read_file");
        assert_eq!(r.status, ResponseStatus::Completed);
        assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            (r.usage.input_tokens, r.usage.output_tokens),
            (Some(10), Some(5))
        );
    }
}

#[tokio::test]
async fn a_broken_stream_is_a_failed_response_with_its_error() {
    let server = MockServer::start().unwrap();
    server.push(Turn::text("one two three four").drop_after(3));
    let mut responder = Responder::new();
    let request = Request {
        model: "m".into(),
        ..Default::default()
    };
    let r = responder
        .respond(
            &client(&server, WireApi::Chat),
            &request,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, ResponseStatus::Failed);
    assert!(r
        .error
        .as_ref()
        .unwrap()
        .message
        .contains("connection broke"));
    assert_eq!(r.text(), "", "an aborted block is not committed");
}
