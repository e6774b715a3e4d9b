#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The failure shapes of small local models, replayed over real HTTP: calls written as
//! text (Qwen tags, a fenced block, a bare object), junk argument keys, a call repeated
//! until the turn limit, llama.cpp's mid-stream parser failure, and an empty response.

use saki_llm_client::*;
use saki_llm_worker::*;
use saki_testkit::{MockServer, Reply, Turn};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// `read_file` over a fixed file, recording the arguments it ran with.
struct Notes(Arc<Mutex<Vec<Value>>>);

#[async_trait::async_trait]
impl Tool for Notes {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a file"
    }
    fn read_only(&self) -> bool {
        true
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1}
        }, "required": ["path"]})
    }
    async fn execute(&self, input: &str, _: ToolExecutionContext) -> Result<ToolOutput, ToolError> {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::from_str(input).unwrap());
        Ok(ToolOutput::new("The secret word is MANGO."))
    }
}

struct Run {
    server: MockServer,
    worker: Worker,
    ran: Arc<Mutex<Vec<Value>>>,
    events: Arc<Mutex<Vec<WorkerEvent>>>,
}

/// Every text delta the Timeline dispatched, as a front end would print it.
#[derive(Clone, Default)]
struct Shown(Arc<Mutex<String>>);

impl Handler<TextBlockKind> for Shown {
    type Scope = ();
    fn on_event(&mut self, _: &mut (), event: &TextBlockEvent) {
        if let TextBlockEvent::Delta(text) = event {
            self.0.lock().unwrap().push_str(text);
        }
    }
}

fn run() -> Run {
    run_with(|_| {})
}

fn run_with(configure: impl FnOnce(&mut WorkerConfig)) -> Run {
    let server = MockServer::start().unwrap();
    let client = Client::new(ClientConfig::new(WireApi::Chat, server.openai_url())).unwrap();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut tools = ToolServer::new();
    tools.register(Arc::new(Notes(ran.clone()))).unwrap();
    let mut config = WorkerConfig::new("qwen");
    config.tool_call_recovery = true;
    config.max_turns = 12;
    configure(&mut config);
    let mut worker = Worker::new(client, Arc::new(tools), config);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    worker.set_observer(Arc::new(move |e| sink.lock().unwrap().push(e.clone())));
    Run {
        server,
        worker,
        ran,
        events,
    }
}

impl Run {
    async fn turn(&mut self) -> TurnOutcome {
        self.worker
            .run_turn(
                "Read NOTE.txt and tell me the word.",
                CancellationToken::new(),
            )
            .await
            .unwrap()
    }

    /// Runs the turn, which must complete.
    async fn completed_turn(&mut self) -> TurnOutcome {
        let outcome = self.turn().await;
        assert!(
            matches!(outcome.status, TurnStatus::Completed { .. }),
            "{outcome:?}"
        );
        outcome
    }

    fn events(&self) -> Vec<WorkerEvent> {
        self.events.lock().unwrap().clone()
    }

    /// The tool results in history, in order.
    fn results(&self) -> Vec<String> {
        self.worker
            .history()
            .iter()
            .filter_map(|i| match i {
                Item::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect()
    }
}

const CALL: &str = r#"{"name": "read_file", "arguments": {"path": "NOTE.txt"}}"#;

#[tokio::test]
async fn calls_written_as_text_run_in_every_form() {
    for text in [
        format!("<tool_call>\n{CALL}\n</tool_call>"),
        format!("I'll read it.\n```json\n{CALL}\n```"),
        CALL.to_owned(),
    ] {
        let mut r = run();
        r.server.push(Turn::text(text.clone()));
        r.server.push(Turn::text("The word is MANGO."));
        let outcome = r.turn().await;
        assert!(
            matches!(outcome.status, TurnStatus::Completed { .. }),
            "{text}"
        );
        assert_eq!(r.ran.lock().unwrap().len(), 1, "{text}");
        let history = r.worker.history();
        let call = history
            .iter()
            .find_map(|i| match i {
                Item::ToolCall {
                    name, arguments, ..
                } => Some((name, arguments)),
                _ => None,
            })
            .unwrap();
        assert_eq!(call.0, "read_file");
        assert_eq!(call.1, r#"{"path":"NOTE.txt"}"#);
        assert!(
            !history
                .iter()
                .any(|i| matches!(i, Item::AssistantText { text } if text.contains("\"name\""))),
            "the call is not left in the answer: {history:#?}"
        );
        assert!(r
            .events()
            .iter()
            .any(|e| matches!(e, WorkerEvent::CallsRecovered(ids) if ids.len() == 1)));
        // The model's next request carries a native call and its result.
        let second = &r.server.requests()[1].body;
        let messages = second["messages"].as_array().unwrap();
        assert!(
            messages.iter().any(|m| m["tool_calls"].is_array()),
            "{second}"
        );
    }
}

#[tokio::test]
async fn a_call_quoted_inside_prose_is_shown_and_never_runs() {
    let quoted = format!("Here is how you would call it: ```json\n{CALL}\n``` but I won't.");
    let mut r = run();
    r.server.push(Turn::text(quoted.clone()));
    let shown = Shown::default();
    r.worker.timeline_mut().on_text_block(shown.clone());
    r.completed_turn().await;
    assert!(r.ran.lock().unwrap().is_empty(), "the quoted call ran");
    assert_eq!(*shown.0.lock().unwrap(), quoted);
    assert_eq!(r.server.requests().len(), 1);
}

#[tokio::test]
async fn a_call_the_model_ended_a_brace_short_runs_unless_the_output_limit_cut_it() {
    let short = r#"{"name": "read_file", "arguments": {"path": "NOTE.txt"}"#;
    let mut r = run();
    r.server.push(Turn::text(short));
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 1, "the closed call ran");
    // Cut by the output limit, the same text is not the model's end: it stays text.
    let mut r = run();
    r.server
        .push(Turn::text(short).with_finish(saki_testkit::Finish::MaxTokens));
    for _ in 0..3 {
        r.server.push(Turn::text("MANGO"));
    }
    r.turn().await;
    assert!(r.ran.lock().unwrap().is_empty());
}

#[tokio::test]
async fn junk_argument_keys_are_dropped_and_the_model_is_told() {
    let mut r = run();
    r.server.push(Turn::new().with_tool_call(
        "c1",
        "read_file",
        r#"{"path": "NOTE.txt", "type": "object", "limit": "5"}"#,
    ));
    r.server.push(Turn::text("MANGO"));
    r.turn().await;
    assert_eq!(
        r.ran.lock().unwrap()[0],
        json!({"path": "NOTE.txt", "limit": 5})
    );
    let result = r.results()[0].clone();
    assert!(
        result.contains("ignored unknown argument `type`"),
        "{result}"
    );
    assert!(result.contains("The secret word"), "{result}");
}

#[tokio::test]
async fn a_missing_required_field_is_an_error_naming_it() {
    let mut r = run();
    r.server
        .push(Turn::new().with_tool_call("c1", "read_file", r#"{"file": "NOTE.txt"}"#));
    r.server.push(Turn::text("sorry"));
    r.turn().await;
    assert!(r.ran.lock().unwrap().is_empty());
    let (content, status) = r
        .worker
        .history()
        .iter()
        .find_map(|i| match i {
            Item::ToolResult {
                content, status, ..
            } => Some((content.clone(), *status)),
            _ => None,
        })
        .unwrap();
    assert_eq!(status, ToolResultStatus::Error);
    assert!(
        content.contains("missing required argument `path`"),
        "{content}"
    );
}

#[tokio::test]
async fn a_repeated_call_never_burns_the_turn_limit() {
    // Where small models are expected (text-call recovery on), the first repeat ends the
    // tool use, and the answer is asked for in the form they follow: the turn folded
    // into one user message, with no tools offered.
    let mut r = run();
    for _ in 0..4 {
        r.server.push(Turn::text(CALL));
    }
    r.server.push(Turn::text("The word is MANGO."));
    let outcome = r.completed_turn().await;
    assert_eq!(outcome.requests, 3, "a call, its repeat, then an answer");
    assert_eq!(r.ran.lock().unwrap().len(), 1, "the repeat is answered");
    let requests = r.server.requests();
    assert_eq!(requests.len(), 3);
    for early in &requests[..2] {
        assert!(early.body.get("tool_choice").is_none());
        assert!(early.body["tools"].is_array());
    }
    let answer = &requests[2].body;
    assert!(answer.get("tools").is_none(), "{answer}");
    assert!(answer.get("tool_choice").is_none(), "{answer}");
    let messages = answer["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user"], "one message: {answer}");
    let folded = messages[0]["content"].as_str().unwrap();
    assert!(folded.starts_with("Request: Read NOTE.txt"), "{folded}");
    assert!(
        folded.contains("read_file {\"path\":\"NOTE.txt\"} returned:\nThe secret word"),
        "{folded}"
    );
    assert!(folded.ends_with("Do not repeat the request."), "{folded}");
    assert!(r.events().iter().any(
        |e| matches!(e, WorkerEvent::LoopDetected { reason } if reason.contains("called again"))
    ));
    // The history keeps the real calls and the note.
    assert!(r
        .worker
        .history()
        .iter()
        .any(|i| matches!(i, Item::System { text } if text.contains("Do not call tools again"))));
    assert_eq!(
        r.worker
            .history()
            .iter()
            .filter(|i| matches!(i, Item::ToolCall { .. }))
            .count(),
        2
    );
    // With no tools offered, text that looks like a call stays text.
    let mut r = run();
    for _ in 0..4 {
        r.server.push(Turn::text(CALL));
    }
    let outcome = r.turn().await;
    assert_eq!(outcome.requests, 3);
    assert!(matches!(
        r.worker.history().last(),
        Some(Item::AssistantText { text }) if text.contains("read_file")
    ));
}

#[tokio::test]
async fn a_model_that_calls_natively_gets_three_tries_then_tool_choice_none() {
    let mut r = run_with(|c| c.tool_call_recovery = false);
    for id in ["c1", "c2", "c3"] {
        r.server
            .push(Turn::new().with_tool_call(id, "read_file", r#"{"path": "NOTE.txt"}"#));
    }
    r.server.push(Turn::text("The word is MANGO."));
    let outcome = r.completed_turn().await;
    assert_eq!(outcome.requests, 4, "three calls, then an answer in text");
    assert_eq!(r.ran.lock().unwrap().len(), 1, "repeats are answered");
    let requests = r.server.requests();
    for early in &requests[..3] {
        assert!(early.body.get("tool_choice").is_none());
    }
    assert_eq!(requests[3].body["tool_choice"], "none");
    assert!(requests[3].body["tools"].is_array(), "the tool list stays");
    assert!(r.events().iter().any(
        |e| matches!(e, WorkerEvent::LoopDetected { reason } if reason.contains("three times"))
    ));
}

/// llama.cpp's answer when its tool-call parser rejects what the model wrote.
fn parser_failure() -> Reply {
    Reply::raw_sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"{\\\"na\"}}]}\n\n\
         data: {\"error\":{\"code\":500,\"message\":\"The model produced output that does not match the expected peg-native format\",\"type\":\"server_error\"}}\n\n",
    )
}

#[tokio::test]
async fn a_parser_failure_is_retried_then_sent_without_tool_calls() {
    let mut r = run();
    r.server.push(parser_failure());
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    let requests = r.server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
    assert!(r
        .events()
        .iter()
        .any(|e| matches!(e, WorkerEvent::Retrying { reason } if reason.contains("peg-native"))));
    assert!(
        matches!(r.worker.history().last(), Some(Item::AssistantText { text }) if text.contains("MANGO"))
    );

    let mut r = run();
    r.server.push(parser_failure());
    r.server.push(parser_failure());
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    let requests = r.server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["tool_choice"], "none");

    // A third failure is the turn's.
    failures_fail_the_turn(run(), 3).await;
}

/// `n` parser failures in a row fail the turn, with no request more.
async fn failures_fail_the_turn(mut r: Run, n: usize) {
    for _ in 0..n {
        r.server.push(parser_failure());
    }
    let outcome = r.turn().await;
    assert!(
        matches!(outcome.status, TurnStatus::Failed { .. }),
        "{outcome:?}"
    );
    assert_eq!(r.server.requests().len(), n);
}

#[tokio::test]
async fn an_empty_response_is_retried_once() {
    let mut r = run();
    r.server.push(Turn::new());
    r.server.push(Turn::text("MANGO"));
    r.completed_turn().await;
    assert_eq!(r.server.requests().len(), 2);
    assert!(
        matches!(r.worker.history().last(), Some(Item::AssistantText { text }) if text == "MANGO")
    );
}

#[tokio::test]
async fn an_empty_answer_with_a_reason_or_from_a_strong_model_is_an_answer() {
    // A content filter that left nothing (a refusal) is not sent again.
    let mut r = run();
    r.server.push(Reply::raw_sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\ndata: [DONE]\n\n",
    ));
    r.completed_turn().await;
    assert_eq!(r.server.requests().len(), 1);
    // Without text-call recovery (a provider for strong models) an empty answer stands.
    let mut r = run_with(|c| c.tool_call_recovery = false);
    r.server.push(Turn::new());
    r.completed_turn().await;
    assert_eq!(r.server.requests().len(), 1);
}

#[tokio::test]
async fn a_parser_failure_before_the_stream_is_retried_by_the_worker_alone() {
    let mut r = run();
    r.server.push(Reply::status(
        500,
        r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON"}}"#,
    ));
    r.server.push(Turn::text("MANGO"));
    r.completed_turn().await;
    assert_eq!(
        r.server.requests().len(),
        2,
        "no transport retries with backoff"
    );
}

#[tokio::test]
async fn identical_calls_in_one_response_run_once() {
    let mut r = run();
    r.server.push(
        Turn::new()
            .with_tool_call("c1", "read_file", r#"{"path": "NOTE.txt"}"#)
            .with_tool_call(
                "c2",
                "read_file",
                r#"{"type": "object", "path": "NOTE.txt"}"#,
            ),
    );
    r.server.push(Turn::text("MANGO"));
    r.turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 1, "the same call after repair");
    let results = r.results();
    assert_eq!(results.len(), 2, "every call has its result");
    assert!(results[0].contains("The secret word"));
    assert!(
        results[1].contains("identical") && results[1].contains("The secret word"),
        "{}",
        results[1]
    );
}

#[tokio::test]
async fn a_read_asked_for_again_after_other_reads_is_a_repeat() {
    // Paging through a file and back: the reads in between changed nothing.
    let mut r = run();
    for path in ["NOTE.txt", "other.txt", "NOTE.txt"] {
        r.server.push(Turn::new().with_tool_call(
            "c1",
            "read_file",
            format!(r#"{{"path": "{path}"}}"#),
        ));
    }
    r.server.push(Turn::text("MANGO"));
    let outcome = r.completed_turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 2, "the third read is answered");
    let results = r.results();
    assert!(results[2].contains("identical"), "{}", results[2]);
    assert_eq!(outcome.requests, 4);
    let last = &r.server.requests()[3].body;
    assert!(
        last.get("tools").is_none(),
        "the answer is asked for: {last}"
    );
}

#[tokio::test]
async fn without_the_servers_parser_a_call_written_as_text_still_runs() {
    let mut r = run();
    r.server.push(parser_failure());
    r.server.push(parser_failure());
    r.server
        .push(Turn::text(format!("<tool_call>\n{CALL}\n</tool_call>")));
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    let requests = r.server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[2].body["tool_choice"], "none");
    assert!(
        requests[3].body.get("tool_choice").is_none(),
        "the next request offers tools again"
    );
    assert_eq!(r.ran.lock().unwrap().len(), 1, "the recovered call ran");
    assert!(r
        .events()
        .iter()
        .any(|e| matches!(e, WorkerEvent::CallsRecovered(ids) if ids.len() == 1)));
}

#[tokio::test]
async fn greedy_sampling_goes_straight_to_the_request_without_tool_calls() {
    let mut r = run_with(|c| c.temperature = Some(0.0));
    r.server.push(parser_failure());
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    let requests = r.server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["tool_choice"], "none",
        "the same greedy request would fail the same way"
    );
    // A second failure is the turn's.
    failures_fail_the_turn(run_with(|c| c.temperature = Some(0.0)), 2).await;
}

#[tokio::test]
async fn an_older_llama_cpp_error_field_is_a_failure_worth_a_retry() {
    let mut r = run();
    r.server.push(Reply::raw_sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me\"}}]}\n\n\
         error: {\"code\":500,\"message\":\"The model produced output that does not match the expected peg-native format\",\"type\":\"server_error\"}\n\n\
         data: [DONE]\n\n",
    ));
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    assert_eq!(r.server.requests().len(), 2);
    assert!(
        !r.worker
            .history()
            .iter()
            .any(|i| matches!(i, Item::AssistantText { text } if text.contains("Let me"))),
        "the failed attempt's text is not the answer"
    );
}

#[tokio::test]
async fn a_failed_attempt_never_shows_the_call_it_was_writing() {
    let mut r = run();
    let shown = Shown::default();
    r.worker.timeline_mut().on_text_block(shown.clone());
    r.server.push(Reply::raw_sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"<tool_call>\\n{\\\"name\\\": \\\"read_\"}}]}\n\n\
         data: {\"error\":{\"code\":500,\"message\":\"The model produced output that does not match the expected peg-native format\",\"type\":\"server_error\"}}\n\n",
    ));
    r.server
        .push(Turn::text(format!("<tool_call>\n{CALL}\n</tool_call>")));
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 1);
    let shown = shown.0.lock().unwrap().clone();
    assert_eq!(shown, "The word is MANGO.", "nothing of a call was printed");
}

#[tokio::test]
async fn a_required_first_call_is_asked_for_as_a_schema_and_only_first() {
    let mut r = run_with(|c| c.first_tool_call_required = true);
    r.server.push(Turn::text(CALL));
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 1, "the object ran as a call");
    let requests = r.server.requests();
    let first = &requests[0].body;
    assert_eq!(first["response_format"]["type"], "json_schema");
    let schema = &first["response_format"]["json_schema"]["schema"];
    assert_eq!(
        schema["anyOf"][0]["properties"]["name"]["const"],
        "read_file"
    );
    assert_eq!(
        schema["anyOf"][0]["properties"]["arguments"]["required"][0],
        "path"
    );
    assert_eq!(
        first["tools"], requests[1].body["tools"],
        "the tool list (the cached prefix) is the same"
    );
    assert!(
        requests[1].body.get("response_format").is_none(),
        "after a result, the model may answer: {}",
        requests[1].body
    );
    // Without text-call recovery the object could not become a call: nothing is forced.
    let mut r = run_with(|c| {
        c.first_tool_call_required = true;
        c.tool_call_recovery = false;
    });
    r.server.push(Turn::text("The word is MANGO."));
    r.completed_turn().await;
    assert!(r.server.requests()[0].body.get("response_format").is_none());
}

#[tokio::test]
async fn an_answer_that_only_calls_an_invented_tool_is_answered_as_that_failed_call_once() {
    let invented = r#"{"name": "secret_word", "arguments": {"file": "NOTE.txt"}}"#;
    let mut r = run();
    r.server.push(Turn::text(invented));
    r.server
        .push(Turn::text(format!("<tool_call>\n{CALL}\n</tool_call>")));
    // A second invented tool in the same turn, written over and over, is read up to its
    // third copy, and the answer is asked for again in text.
    r.server.push(Turn::text(
        "{\"name\": \"word_finder\", \"arguments\": {}}\n".repeat(40),
    ));
    r.server.push(Turn::text("The secret word is MANGO."));
    r.completed_turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 1, "only read_file ran");
    let results = r.results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("unknown tool `secret_word`") && results[0].contains("read_file"),
        "the failure names the real tools: {}",
        results[0]
    );
    // The model read it as a failed call of its own, in the protocol's form, and its
    // next answer, only that one, was held to a call to a tool that exists.
    let second = &r.server.requests()[1].body;
    let held = second["response_format"]["json_schema"]["schema"]["anyOf"]
        .as_array()
        .expect("the next answer is held to a call");
    assert!(held
        .iter()
        .any(|a| a["properties"]["name"]["const"] == "read_file"));
    assert!(r.server.requests()[2].body.get("response_format").is_none());
    let messages = second["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array())
        .expect("a native call in the next request");
    assert_eq!(call[0]["function"]["name"], "secret_word");
    assert!(messages
        .iter()
        .any(|m| m["role"] == "tool" && m["content"].as_str().unwrap().contains("unknown tool")));
    let history = r.worker.history();
    assert!(history.iter().any(
        |item| matches!(item, Item::AssistantText { text } if text.matches("word_finder").count() == 3)
    ));
    assert!(matches!(
        history.last(),
        Some(Item::AssistantText { text }) if text == "The secret word is MANGO."
    ));
    let recovered: usize = r
        .events()
        .iter()
        .map(|e| match e {
            WorkerEvent::CallsRecovered(ids) => ids.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(recovered, 2);
}

#[tokio::test]
async fn a_second_invented_call_as_the_whole_answer_is_asked_again_for_text() {
    let mut r = run();
    r.server
        .push(Turn::text(r#"{"name": "run_calc.py", "arguments": {}}"#));
    r.server
        .push(Turn::text(format!("<tool_call>\n{CALL}\n</tool_call>")));
    // Verbatim from Qwen2.5-Coder-0.5B after it had the result it needed.
    r.server.push(Turn::text(
        "{\"name\": \"print\", \"arguments\": {\"expression\": \"6 * 7\"}}\n",
    ));
    r.server.push(Turn::text("The secret word is MANGO."));
    r.completed_turn().await;
    assert_eq!(r.ran.lock().unwrap().len(), 1, "only read_file ran");
    assert_eq!(
        r.results().len(),
        2,
        "print is never a call: {:?}",
        r.results()
    );
    let requests = r.server.requests();
    assert_eq!(requests.len(), 4);
    let last = &requests[3].body;
    assert!(
        last.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "the answer is asked for without tools: {last}"
    );
    let asked = last["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(asked.contains("Do not call tools"), "{asked}");
    assert!(
        !asked.contains("\"print\""),
        "the invented answer is not quoted: {asked}"
    );
    assert!(r.events().iter().any(|e| matches!(
        e,
        WorkerEvent::LoopDetected { reason } if reason.contains("`print`, a tool that does not exist")
    )));
    assert!(matches!(
        r.worker.history().last(),
        Some(Item::AssistantText { text }) if text == "The secret word is MANGO."
    ));
}
