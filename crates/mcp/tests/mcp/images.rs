//! Images in MCP results: a valid one reaches the model as `read_file`'s do, an image
//! part sent with the result; the others, and audio, are notes in the text.

use crate::{call, start, stdio};
use saki_llm_worker::SharedTools;
use saki_testkit::TINY_PNG_BASE64;
use serde_json::json;

/// The text of `mcp__s__image`'s result.
const IMAGE_TEXT: &str = "the chart:\n\
    [Image: mcp__s__image image 1 (PNG 3×2)]\n\
    [Image not shown: mcp__s__image image 2 is not valid base64]\n\
    [Image not shown: mcp__s__image image 3 is image/svg+xml; only PNG, JPEG, GIF and WebP \
    images are passed to the model]\n\
    [audio: audio/wav, 3 bytes; audio from tools is not passed to the model]";

/// Calls `mcp__s__image` of a connected server `s`: the valid PNG is the output's image.
pub async fn the_image_tool_returns_its_image(tools: &SharedTools) {
    let output = call(tools, "mcp__s__image", json!({})).await.unwrap();
    assert_eq!(output.content, IMAGE_TEXT);
    let [shown] = &output.images[..] else {
        panic!("{:?}", output.images);
    };
    assert_eq!(shown.path, "mcp__s__image image 1");
    assert_eq!(shown.image.media_type, "image/png");
    let data = shown.image.data.as_ref().unwrap();
    assert_eq!(data.as_str(), TINY_PNG_BASE64);
}

/// Through the Worker to a provider: the image goes out with the result in every
/// protocol; to a model without vision, the result says it is not shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_image_is_sent_to_the_model_in_every_protocol() {
    use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
    use saki_llm_worker::{Item, Worker, WorkerConfig};
    use saki_testkit::{MockServer, Turn};
    let session = start(vec![("s", stdio("stdio"))]);
    session.manager.ready().await;
    for wire in WireApi::ALL {
        for vision in [true, false] {
            let provider = MockServer::start().unwrap();
            provider.push(Turn::new().with_tool_call("c1", "mcp__s__image", "{}"));
            provider.push(Turn::text("a chart"));
            let base = match wire {
                WireApi::Chat | WireApi::Responses => provider.openai_url(),
                _ => provider.url(),
            };
            let client = Client::new(ClientConfig::new(wire, base)).unwrap();
            let mut config = WorkerConfig::new("m");
            config.vision = vision;
            let mut worker = Worker::new(client, std::sync::Arc::default(), config);
            worker.set_shared_tools(session.tools.clone());
            worker
                .run_turn("show the chart", CancellationToken::new())
                .await
                .unwrap();
            let body = provider.requests().remove(1).body.to_string();
            let history = worker.history();
            // Gemini has no call ids: the Worker makes one up.
            let call_id = history
                .iter()
                .find_map(|i| match i {
                    Item::ToolResult { ctx, .. } => Some(ctx.call_id.clone()),
                    _ => None,
                })
                .unwrap();
            let images = history
                .iter()
                .filter(|i| matches!(i, Item::Image { call_id: Some(id), .. } if *id == call_id))
                .count();
            assert_eq!(images, usize::from(vision), "{wire}: {history:#?}");
            assert_eq!(body.contains(TINY_PNG_BASE64), vision, "{wire}: {body}");
            if !vision {
                assert!(body.contains("does not accept images"), "{wire}: {body}");
            }
        }
    }
    session.manager.shutdown().await;
}
