#![allow(clippy::unwrap_used, clippy::expect_used)]
//! One agent loop: the same scripted model, once as the person's turn in the main
//! Worker and once as a speculation, makes the same requests and ends with the same
//! items. Each case is a repair the main loop makes for a weak model: a call written as
//! text, a call to an invented tool, a repeated call, a server that cannot parse what
//! the model wrote.

use saki_llm_client::{CancellationToken, Client, ClientConfig, WireApi};
use saki_llm_worker::{Item, ToolResultStatus, Worker, WorkerConfig};
use saki_read_ahead::*;
use saki_testkit::{MockServer, Reply, Turn};
use saki_tools::rewrite::{RewriteEdits, RewriteModel};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::{json, Value};
use std::sync::Arc;

const PROMPT: &str = "read the readme";
const DEPLOY: &str = "name: api\nreplicas: 2\nimage: api:1.4\n";

struct Fixture {
    _ws: tempfile::TempDir,
    base: tempfile::TempDir,
    workspace: Arc<Workspace>,
}

fn fixture() -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README.md"), "# demo\n").unwrap();
    std::fs::write(ws.path().join("deploy.yaml"), DEPLOY).unwrap();
    let workspace = Arc::new(Workspace::new(ws.path()).unwrap());
    Fixture {
        _ws: ws,
        base: tempfile::tempdir().unwrap(),
        workspace,
    }
}

/// The main loop's settings for a small local model.
fn config() -> WorkerConfig {
    let mut config = WorkerConfig::new("fast");
    config.system_prompt = Some("sys".into());
    config.tool_call_recovery = true;
    config
}

fn client(server: &MockServer) -> Client {
    Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap()
}

fn history() -> Vec<Item> {
    vec![
        Item::user("what is here?"),
        Item::AssistantText {
            text: "A readme.".into(),
        },
    ]
}

/// What a run produced and asked, with what differs by design left out (call ids are
/// the model's; the overlay is where a speculation's paths lead).
#[derive(Debug, PartialEq)]
struct Run {
    items: Vec<Value>,
    requests: Vec<Value>,
}

fn shape(items: &[Item]) -> Vec<Value> {
    items
        .iter()
        .map(|item| match item {
            Item::ToolCall {
                name, arguments, ..
            } => json!({"call": name, "arguments": arguments}),
            Item::ToolResult {
                name,
                content,
                status,
                ..
            } => json!({"result": name, "status": format!("{status:?}"), "content": content}),
            other => serde_json::to_value(other).unwrap(),
        })
        .collect()
}

/// The requests' bodies with the ids saki generates for calls written as text (from a
/// counter the two runs do not share) made equal.
fn bodies(server: &MockServer) -> Vec<Value> {
    fn same_ids(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if key == "id" || key == "tool_call_id" {
                        *v = json!("ID");
                    } else {
                        same_ids(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(same_ids),
            _ => {}
        }
    }
    server
        .requests()
        .into_iter()
        .map(|r| {
            let mut body = r.body;
            same_ids(&mut body);
            body
        })
        .collect()
}

async fn main_loop(f: &Fixture, prompt: &str, config: WorkerConfig, replies: &[Reply]) -> Run {
    let server = MockServer::start().unwrap();
    for reply in replies {
        server.push(reply.clone());
    }
    let tools = saki_tools::builtin_server(f.workspace.clone()).unwrap();
    let mut worker = Worker::new(client(&server), Arc::new(tools), config.clone());
    if config.guard_unasked_changes {
        // As the engine installs them for a small local model.
        let rewrite = config.rewrite_edits.then(|| {
            let model = RewriteModel::new(
                client(&server),
                "fast",
                config.temperature,
                config.max_output_tokens,
            );
            RewriteEdits::new(f.workspace.clone(), model)
        });
        for guard in saki_tools::guards::small_model_guards(&f.workspace, rewrite) {
            worker.add_interceptor(guard);
        }
    }
    worker.set_history(history());
    worker
        .run_turn(prompt, CancellationToken::new())
        .await
        .unwrap();
    Run {
        items: shape(&worker.history()[history().len()..]),
        requests: bodies(&server),
    }
}

async fn speculation(
    f: &Fixture,
    prompt: &str,
    config: WorkerConfig,
    mode: ApprovalMode,
    replies: &[Reply],
) -> (Run, Speculation) {
    let server = MockServer::start().unwrap();
    for reply in replies {
        server.push(reply.clone());
    }
    let mut speculator = Speculator::new(client(&server), "fast", mode, f.workspace.clone());
    speculator.overlay_base = f.base.path().to_path_buf();
    speculator.worker = config;
    let tools = saki_tools::builtin_server(f.workspace.clone()).unwrap();
    let params = CacheSafeParams {
        system: Some("sys".into()),
        tools: tools.definitions(),
        history: history(),
        model: "fast".into(),
        ..Default::default()
    };
    let spec = speculator
        .run(&params, prompt, CancellationToken::new())
        .await;
    let run = Run {
        items: shape(&spec.items),
        requests: bodies(&server),
    };
    (run, spec)
}

/// Runs `replies` both ways and checks they agree; returns the speculation.
async fn agree(replies: &[Reply]) -> Speculation {
    agree_on(PROMPT, config(), ApprovalMode::Default, replies)
        .await
        .0
}

/// Runs `replies` for `prompt` both ways, each on a workspace of its own, and checks
/// they agree; returns the speculation and the two workspaces (the main loop's first).
async fn agree_on(
    prompt: &str,
    config: WorkerConfig,
    mode: ApprovalMode,
    replies: &[Reply],
) -> (Speculation, [Fixture; 2]) {
    let f = fixture();
    let main = main_loop(&f, prompt, config.clone(), replies).await;
    // Its own workspace, kept while the speculation's overlay is read.
    let own = fixture();
    let (speculated, spec) = speculation(&own, prompt, config, mode, replies).await;
    assert_eq!(
        main.requests.len(),
        speculated.requests.len(),
        "{:?}: {:?}",
        spec.status,
        spec.reason
    );
    for (i, (a, b)) in main.requests.iter().zip(&speculated.requests).enumerate() {
        assert!(a == b, "request {i} differs:\nmain {a}\nspeculation {b}");
    }
    assert_eq!(main.items, speculated.items);
    (spec, [f, own])
}

fn text(text: &str) -> Reply {
    Turn::text(text).into()
}

#[tokio::test]
async fn a_call_written_as_text_runs_in_both() {
    let spec = agree(&[
        text("{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}"),
        text("It is a demo."),
    ])
    .await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    assert_eq!(spec.answer(), "It is a demo.");
}

#[tokio::test]
async fn an_invented_tool_is_answered_with_the_real_ones_in_both() {
    let spec = agree(&[
        text("{\"name\": \"test_calc.py\", \"arguments\": {}}"),
        Turn::new()
            .with_tool_call("c1", "read_file", json!({"path": "README.md"}).to_string())
            .into(),
        text("It is a demo."),
    ])
    .await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    let unknown = spec.items.iter().find_map(|i| match i {
        Item::ToolResult {
            content, status, ..
        } if *status == ToolResultStatus::Error => Some(content.clone()),
        _ => None,
    });
    assert!(
        unknown.as_deref().is_some_and(|c| c.contains("read_file")),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn a_repeated_call_is_answered_from_its_result_in_both() {
    let call = || -> Reply {
        Turn::new()
            .with_tool_call("c", "read_file", json!({"path": "README.md"}).to_string())
            .into()
    };
    let spec = agree(&[call(), call(), text("It is a demo.")]).await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    assert_eq!(spec.answer(), "It is a demo.");
}

/// llama.cpp's answer when its tool-call parser rejects what the model wrote.
fn parser_failure() -> Reply {
    Reply::raw_sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"{\\\"na\"}}]}\n\n\
         data: {\"error\":{\"code\":500,\"message\":\"The model produced output that does not match the expected peg-native format\",\"type\":\"server_error\"}}\n\n",
    )
}

#[tokio::test]
async fn a_server_parse_error_is_retried_then_asked_without_tools_in_both() {
    let spec = agree(&[parser_failure(), parser_failure(), text("It is a demo.")]).await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    assert_eq!(spec.answer(), "It is a demo.");
}

#[tokio::test]
async fn an_answer_that_is_only_a_call_is_never_a_finished_speculation() {
    let f = fixture();
    // The model invents a tool, is told the real ones, and invents another.
    let replies = [
        text("{\"name\": \"test_calc.py\", \"arguments\": {}}"),
        text("{\"name\": \"run_tests\", \"arguments\": {}}"),
        text("{\"name\": \"run_tests\", \"arguments\": {}}"),
    ];
    let (_, spec) = speculation(&f, PROMPT, config(), ApprovalMode::Default, &replies).await;
    assert_ne!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.items
    );
}

#[tokio::test]
async fn a_call_written_as_text_that_does_not_parse_is_not_an_answer() {
    let f = fixture();
    let broken = "{\"name\":\"run the tests\",\"arguments\":{\"path\":\"README.md\",\
                  \"old_string\":\"Run the tests with: python3 -m unittest -q\"]}";
    for answer in [broken.to_owned(), format!("```json\n{broken}\n```")] {
        let (_, spec) = speculation(
            &f,
            PROMPT,
            config(),
            ApprovalMode::Default,
            &[text(&answer)],
        )
        .await;
        assert_eq!(
            spec.status,
            SpeculationStatus::Boundary,
            "{answer}: {:?}",
            spec.items
        );
        assert!(
            spec.reason.as_deref().unwrap().contains("does not parse"),
            "{:?}",
            spec.reason
        );
    }
    // An answer that shows a JSON object is still an answer.
    for shown in [
        "The config is:\n```json\n{\"name\": \"app\"}\n```",
        "{\"name\": \"app\", \"version\": \"1.0\"}",
    ] {
        let (_, spec) =
            speculation(&f, PROMPT, config(), ApprovalMode::Default, &[text(shown)]).await;
        assert_eq!(
            spec.status,
            SpeculationStatus::Completed,
            "{shown}: {:?}",
            spec.reason
        );
    }
}

#[tokio::test]
async fn a_call_to_a_tool_only_the_main_loop_has_is_a_boundary_not_an_unknown_tool() {
    let f = fixture();
    let server = MockServer::start().unwrap();
    server.push(Turn::new().with_tool_call(
        "m1",
        "mcp__srv__deploy",
        json!({"to": "prod"}).to_string(),
    ));
    let mut speculator = Speculator::new(
        client(&server),
        "fast",
        ApprovalMode::Yolo,
        f.workspace.clone(),
    );
    speculator.overlay_base = f.base.path().to_path_buf();
    speculator.worker = config();
    let mut tools = saki_tools::builtin_server(f.workspace.clone())
        .unwrap()
        .definitions();
    tools.push(saki_llm_client::ToolDefinition {
        name: "mcp__srv__deploy".into(),
        description: "deploys".into(),
        input_schema: json!({"type": "object", "properties": {"to": {"type": "string"}}}),
    });
    let params = CacheSafeParams {
        system: Some("sys".into()),
        tools: tools.clone(),
        history: history(),
        model: "fast".into(),
        ..Default::default()
    };
    let spec = speculator
        .run(&params, "deploy it", CancellationToken::new())
        .await;
    assert_eq!(spec.status, SpeculationStatus::Boundary, "{:?}", spec.items);
    assert!(
        spec.reason.as_deref().unwrap().contains("mcp__srv__deploy"),
        "{:?}",
        spec.reason
    );
    // The fork offered the main request's tools, byte for byte.
    let offered = &server.requests()[0].body["tools"];
    assert_eq!(offered.as_array().unwrap().len(), tools.len());
}

/// The main loop's settings for a small local model whose changes are held to the
/// prompt and made from files' whole new text.
fn guarded() -> WorkerConfig {
    let mut config = config();
    config.guard_unasked_changes = true;
    config.rewrite_edits = true;
    config.temperature = Some(0.0);
    config
}

#[tokio::test]
async fn a_small_models_edit_is_made_from_the_files_new_text_in_both() {
    let scale = "Scale the api to 5 replicas in deploy.yaml.";
    let replies = [
        // The model's own edit picks the wrong line...
        text(
            "{\"name\": \"edit\", \"arguments\": {\"path\": \"deploy.yaml\", \
             \"old_string\": \"api:1.4\", \"new_string\": \"api:1.5\"}}",
        ),
        // ...so the file's whole new text is asked for, and written instead.
        text("```yaml\nname: api\nreplicas: 5\nimage: api:1.4\n```"),
        text("The api now has 5 replicas."),
    ];
    let (spec, [main, speculated_in]) =
        agree_on(scale, guarded(), ApprovalMode::AutoEdit, &replies).await;
    assert_eq!(
        spec.status,
        SpeculationStatus::Completed,
        "{:?}",
        spec.reason
    );
    let want = "name: api\nreplicas: 5\nimage: api:1.4\n";
    let main_file = std::fs::read_to_string(main.workspace.root().join("deploy.yaml")).unwrap();
    assert_eq!(main_file, want);
    let speculated = spec.overlay_dir().unwrap().join("deploy.yaml");
    assert_eq!(std::fs::read_to_string(speculated).unwrap(), want);
    // Written in the overlay only.
    let real = speculated_in.workspace.root().join("deploy.yaml");
    assert_eq!(std::fs::read_to_string(real).unwrap(), DEPLOY);
}

#[tokio::test]
async fn a_question_may_not_change_files_in_a_speculation_either() {
    let replies = [
        text(
            "{\"name\": \"write_file\", \"arguments\": {\"path\": \"README.md\", \
             \"content\": \"# Overwrote README.md\"}}",
        ),
        text("It is a demo."),
        // Its one call refused, the turn gets README.md read by saki, in both loops.
        text("It says demo."),
    ];
    let question = "What is in README.md?";
    let (spec, [main, _]) = agree_on(question, guarded(), ApprovalMode::AutoEdit, &replies).await;
    let denied = spec.items.iter().any(
        |i| matches!(i, Item::ToolResult { status, .. } if *status == ToolResultStatus::Denied),
    );
    assert!(denied, "{:?}", spec.items);
    let readme = std::fs::read_to_string(main.workspace.root().join("README.md")).unwrap();
    assert_eq!(readme, "# demo\n");
}
