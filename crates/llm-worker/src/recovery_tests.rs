use super::*;
use saki_llm_client::{
    BlockDelta, BlockMetadata, BlockStart, BlockStop, BlockType, DeltaContent, Event,
    ResponseStatus, StatusEvent, StopReason,
};

fn offered() -> Vec<String> {
    ["read_file", "edit", "ls"].map(String::from).to_vec()
}

fn calls(text: &str) -> Option<(String, Vec<(String, String)>)> {
    recover(text, &offered()).map(|r| (r.text, r.calls))
}

fn one(name: &str, args: &str) -> Vec<(String, String)> {
    vec![(name.to_owned(), args.to_owned())]
}

#[test]
fn every_written_form_is_recovered() {
    let read = one("read_file", r#"{"path":"a.txt"}"#);
    for text in [
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}",
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
        "```\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"a.txt\"}}\n```",
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}",
        "  {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}",
        "{\"function\": {\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}}",
    ] {
        assert_eq!(calls(text), Some((String::new(), read.clone())), "{text}");
    }
}

#[test]
fn a_list_is_several_calls_but_only_the_first_place_counts() {
    let text = "[{\"name\": \"ls\", \"arguments\": {}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}]";
    let (_, found) = calls(text).unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].0, "ls");
    let text = "<tool_call>{\"name\": \"ls\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"edit\", \"arguments\": {\"path\": \"x\"}}</tool_call>";
    assert_eq!(
        calls(text).unwrap().1,
        one("ls", "{}"),
        "the edit was a guess"
    );
    let text =
        "{\"name\": \"ls\", \"arguments\": {}}\n{\"name\": \"edit\", \"arguments\": {}}\nnow done";
    assert_eq!(calls(text), Some((String::new(), one("ls", "{}"))));
}

#[test]
fn prose_around_a_call_stays_text() {
    let text = "I will read the file first.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\n";
    let (kept, found) = calls(text).unwrap();
    assert_eq!(kept, "I will read the file first.");
    assert_eq!(found.len(), 1);
    // A stray brace after the object is not worth keeping.
    let (kept, _) = calls("{\"name\": \"ls\", \"arguments\": {}}}").unwrap();
    assert_eq!(kept, "");
}

#[test]
fn text_that_only_mentions_json_stays_text() {
    for text in [
        "Use the format {\"name\": \"read_file\", \"arguments\": {}} to call a tool.",
        "Your package.json:\n```json\n{\"name\": \"my-package\", \"version\": \"1.0.0\"}\n```",
        "{\"port\": 8080}",
        "{\"name\": \"delete_everything\", \"arguments\": {}}",
        "{\"name\": \"read_file\"}",
        "```python\nd = {\"name\": \"read_file\", \"arguments\": {}}\n```",
        "[1] see the docs\n[link](http://x)",
        "The answer is 42.",
        "<tool_call>not json</tool_call>",
    ] {
        assert_eq!(calls(text), None, "{text}");
    }
}

fn text_events(pieces: &[&str]) -> Vec<Event> {
    let mut events = vec![
        Event::Status(StatusEvent::new(ResponseStatus::Started)),
        Event::BlockStart(BlockStart {
            index: 0,
            block_type: BlockType::Text,
            metadata: BlockMetadata::Text,
        }),
    ];
    for p in pieces {
        events.push(Event::BlockDelta(BlockDelta {
            index: 0,
            delta: DeltaContent::Text((*p).to_owned()),
        }));
    }
    events.push(Event::BlockStop(BlockStop {
        index: 0,
        block_type: BlockType::Text,
        stop_reason: None,
    }));
    events.push(Event::Status(StatusEvent::new(ResponseStatus::Completed)));
    events
}

/// Runs events through a filter; returns (text shown before the end, all output).
fn filter(events: Vec<Event>) -> (String, Vec<Event>, CallFilter) {
    let mut f = CallFilter::new(offered());
    let mut shown_early = String::new();
    let mut all = Vec::new();
    for event in events {
        let terminal = matches!(&event, Event::Status(s) if s.status.is_terminal());
        let mut out = Vec::new();
        f.push(event, &mut out);
        for e in &out {
            if let (
                false,
                Event::BlockDelta(BlockDelta {
                    delta: DeltaContent::Text(t),
                    ..
                }),
            ) = (terminal, e)
            {
                shown_early.push_str(t);
            }
        }
        all.extend(out);
    }
    (shown_early, all, f)
}

fn tool_starts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::BlockStart(BlockStart {
                metadata: BlockMetadata::ToolUse { name, .. },
                ..
            }) => Some(name.clone()),
            _ => None,
        })
        .collect()
}

fn all_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::BlockDelta(BlockDelta {
                delta: DeltaContent::Text(t),
                ..
            }) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_call_split_at_awkward_places_is_never_shown() {
    let (early, out, f) = filter(text_events(&[
        "Let me look.\n<tool_",
        "call>\n{\"name\": \"read",
        "_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
    ]));
    assert_eq!(early, "Let me look.\n");
    assert!(!all_text(&out).contains("tool_call"));
    assert_eq!(tool_starts(&out), ["read_file"]);
    assert_eq!(f.recovered().len(), 1);
    let Some(Event::Status(last)) = out.last() else {
        panic!("no status")
    };
    assert_eq!(last.stop_reason, Some(StopReason::ToolUse));
    // Every block still opens and closes in order.
    let starts = out
        .iter()
        .filter(|e| matches!(e, Event::BlockStart(_)))
        .count();
    let stops = out
        .iter()
        .filter(|e| matches!(e, Event::BlockStop(_)))
        .count();
    assert_eq!(starts, stops);
}

#[test]
fn plain_answers_and_other_code_stream_at_once() {
    let (early, out, _) = filter(text_events(&[
        "Here is the fix:\n```rust\nfn f() {\n",
        "    let x = {1};\n}\n```\nDone.",
    ]));
    assert_eq!(
        early,
        "Here is the fix:\n```rust\nfn f() {\n    let x = {1};\n}\n```\nDone."
    );
    assert!(tool_starts(&out).is_empty());
}

/// The text shown after each piece arrived, and everything the filter put out.
fn steps(pieces: &[&str]) -> (Vec<String>, Vec<Event>) {
    let mut f = CallFilter::new(offered());
    let mut shown = Vec::new();
    let mut all = Vec::new();
    let events = text_events(pieces);
    let deltas = 2..2 + pieces.len();
    for (i, event) in events.into_iter().enumerate() {
        f.push(event, &mut all);
        if deltas.contains(&i) {
            shown.push(all_text(&all));
        }
    }
    (shown, all)
}

#[test]
fn held_text_that_is_not_a_call_is_shown_as_soon_as_that_is_clear() {
    let (shown, out) = steps(&["Config:\n", "{\"port\": ", "8080}\nok"]);
    assert_eq!(
        shown,
        ["Config:\n", "Config:\n", "Config:\n{\"port\": 8080}\nok"]
    );
    assert!(tool_starts(&out).is_empty());

    // A fenced block that is not a call is shown when its fence closes.
    let (shown, out) = steps(&[
        "Your package.json:\n```json\n{\"name\": \"my-package\",",
        " \"version\": \"1.0.0\"}\n``",
        "`\nThen run npm install.",
    ]);
    assert_eq!(shown[0], "Your package.json:\n");
    assert_eq!(shown[1], "Your package.json:\n", "the fence is still open");
    assert!(
        shown[2].ends_with("```\nThen run npm install."),
        "{}",
        shown[2]
    );
    assert!(tool_starts(&out).is_empty());

    // A brace that opens code, not JSON, is shown once the next line says so.
    let (shown, _) = steps(&["{\n", "  let x = 1;\n", "}\nDone."]);
    assert_eq!(
        shown,
        ["", "{\n  let x = 1;\n", "{\n  let x = 1;\n}\nDone."]
    );

    // Tags around something that is not a call.
    let (shown, out) = steps(&["<tool_call>not js", "on</tool_call>\nsorry"]);
    assert_eq!(shown, ["", "<tool_call>not json</tool_call>\nsorry"]);
    assert!(tool_starts(&out).is_empty());
}

#[test]
fn a_call_after_text_that_was_shown_early_is_still_recovered() {
    let (shown, out) = steps(&[
        "Config:\n{\"port\": 1}\n",
        "<tool_call>{\"name\": \"ls\", \"arguments\": {}}</tool_call>",
    ]);
    assert_eq!(
        shown,
        ["Config:\n{\"port\": 1}\n", "Config:\n{\"port\": 1}\n"]
    );
    assert_eq!(tool_starts(&out), ["ls"]);
    assert_eq!(all_text(&out), "Config:\n{\"port\": 1}\n");
}

#[test]
fn a_fence_split_at_awkward_places_is_never_shown() {
    let (shown, out) = steps(&[
        "Let me check.\n``",
        "`js",
        "on\n{\"name\": \"read_file\", \"arg",
        "uments\": {\"path\": \"a\"}}\n`",
        "``",
    ]);
    assert!(shown.iter().all(|s| s == "Let me check.\n"), "{shown:?}");
    assert_eq!(tool_starts(&out), ["read_file"]);
    assert!(!all_text(&out).contains('`'));
}

#[test]
fn a_failed_or_cancelled_response_never_shows_what_was_held() {
    for status in [ResponseStatus::Failed, ResponseStatus::Cancelled] {
        let mut events = text_events(&["Sure.\n<tool_call>{\"name\": \"read_"]);
        events.truncate(3);
        events.push(Event::BlockAbort(saki_llm_client::BlockAbort {
            index: 0,
            block_type: BlockType::Text,
            reason: "boom".into(),
        }));
        events.push(Event::Status(StatusEvent::new(status)));
        let (_, out, f) = filter(events);
        assert_eq!(all_text(&out), "Sure.\n", "{status:?}");
        assert!(tool_starts(&out).is_empty());
        assert!(f.recovered().is_empty());
    }
    // The block had ended, the response failed after it.
    let mut events = text_events(&["{\"name\": \"ls\", \"arguments\": {"]);
    events.pop();
    events.push(Event::Status(StatusEvent::new(ResponseStatus::Failed)));
    let (_, out, _) = filter(events);
    assert_eq!(all_text(&out), "");
    assert_eq!(
        out.iter()
            .filter(|e| matches!(e, Event::BlockStop(_)))
            .count(),
        1,
        "the block is still closed"
    );
}

#[test]
fn native_calls_turn_recovery_off() {
    let mut events = text_events(&["{\"name\": \"ls\", \"arguments\": {}}"]);
    let status = events.pop().unwrap();
    events.push(Event::BlockStart(BlockStart {
        index: 1,
        block_type: BlockType::ToolUse,
        metadata: BlockMetadata::ToolUse {
            id: "n1".into(),
            name: "read_file".into(),
        },
    }));
    events.push(Event::BlockStop(BlockStop {
        index: 1,
        block_type: BlockType::ToolUse,
        stop_reason: None,
    }));
    events.push(status);
    let (_, out, f) = filter(events);
    assert_eq!(tool_starts(&out), ["read_file"], "only the native call");
    assert!(all_text(&out).contains("\"ls\""), "the text stays text");
    assert!(f.recovered().is_empty());
}

#[test]
fn an_empty_offer_passes_everything_through() {
    let mut f = CallFilter::new(Vec::new());
    let mut out = Vec::new();
    for e in text_events(&["{\"name\": \"ls\", \"arguments\": {}}"]) {
        f.push(e, &mut out);
    }
    assert!(tool_starts(&out).is_empty());
}

#[test]
fn an_answer_that_goes_on_past_a_call_ends_there() {
    let line = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n";
    let list = format!("[{0}, {0}]", line.trim());
    assert_eq!(
        calls(&list).unwrap().1.len(),
        1,
        "a repeated call is made once"
    );
    let mut f = CallFilter::new(offered());
    let mut out = Vec::new();
    for e in text_events(&[line, line]).into_iter().take(4) {
        f.push(e, &mut out);
    }
    assert!(f.saturated(), "a second call starts after a complete one");
    f.finish(&mut out);
    assert_eq!(tool_starts(&out), ["read_file"]);
    assert!(matches!(out.last(), Some(Event::Status(s)) if s.status == ResponseStatus::Completed));
}

#[test]
fn only_a_whole_answer_that_calls_a_tool_not_offered_is_an_unknown_call() {
    let invented = Some(("todo_comments".to_owned(), r#"{"count":1}"#.to_owned()));
    for text in [
        r#"{"name": "todo_comments", "arguments": {"count": 1}}"#,
        "\n```json\n{\"name\": \"todo_comments\", \"parameters\": {\"count\": 1}}\n```\n",
        "<tool_call>\n{\"name\": \"todo_comments\", \"arguments\": {\"count\": 1}}\n</tool_call>",
    ] {
        assert_eq!(unknown_call(text, &offered()), invented, "{text}");
    }
    // Words on lines of their own after it: the model explaining the call it made up
    // (asked to run the tests, a 0.5B model wrote `run_tests` and how to run pytest).
    assert_eq!(
        unknown_call(
            "{\"name\": \"todo_comments\", \"arguments\": {\"count\": 1}}\nThat would count them.",
            &offered()
        ),
        invented
    );
    for text in [
        // Data, not a call: a key a call does not have, or no arguments.
        r#"{"name": "app", "port": 9090}"#,
        r#"{"name": "my-package", "version": "1.0.0", "arguments": {}}"#,
        r#"{"name": "web"}"#,
        // More than the object: words before it, or on its line.
        r#"Try this: {"name": "todo_comments", "arguments": {}}"#,
        r#"{"name": "todo_comments", "arguments": {}} would count them."#,
        r#"[{"name": "todo_comments", "arguments": {}}]"#,
        // Not a tool name, or a tool that was offered (that one is recovered).
        r#"{"name": "count the TODOs?", "arguments": {}}"#,
        r#"{"name": "ls", "arguments": {}}"#,
        "```rust\n{\"name\": \"x\", \"arguments\": {}}\n```",
    ] {
        assert_eq!(unknown_call(text, &offered()), None, "{text}");
    }
    // Arguments that are not an object, as a real 0.5B model wrote them.
    assert_eq!(
        unknown_call(r#"{"name": "print", "arguments": ["LIMIT"]}"#, &offered()),
        Some(("print".to_owned(), "{}".to_owned()))
    );
    // A file's path as the name, as a real 0.5B model answered a question about a class.
    assert_eq!(
        unknown_call(
            r#"{"name": "tests/test_requests.py", "arguments": {"path": "tests/test_requests.py"}}"#,
            &offered()
        ),
        Some((
            "tests/test_requests.py".to_owned(),
            r#"{"path":"tests/test_requests.py"}"#.to_owned()
        ))
    );
    // A name written as words, as a real 0.5B model wrote a speculation's whole answer.
    assert_eq!(
        unknown_call(
            r#"{"name":"run the tests","arguments":{"command":"test_calc.py","timeout_secs":120}}"#,
            &offered()
        ),
        Some((
            "run_the_tests".to_owned(),
            r#"{"command":"test_calc.py","timeout_secs":120}"#.to_owned()
        ))
    );
}

/// `steps`, with unknown calls on.
fn steps_unknown(pieces: &[&str]) -> (Vec<String>, Vec<Event>) {
    let mut f = CallFilter::new(offered()).with_unknown_calls(true);
    let (mut shown, mut all) = (Vec::new(), Vec::new());
    for (i, event) in text_events(pieces).into_iter().enumerate() {
        f.push(event, &mut all);
        if (2..2 + pieces.len()).contains(&i) {
            shown.push(all_text(&all));
        }
    }
    (shown, all)
}

#[test]
fn an_answer_that_only_calls_an_invented_tool_becomes_that_call_when_asked() {
    let pieces = [
        "{\"name\": \"todo_",
        "comments\", \"arguments\": {\"count\": 1}}",
        "\n",
    ];
    let (shown, out) = steps_unknown(&pieces);
    assert_eq!(shown, ["", "", ""], "held back, never shown");
    assert_eq!(tool_starts(&out), ["todo_comments"]);
    assert_eq!(all_text(&out), "");

    // Off (the default), it is the answer it is.
    let (_, out) = steps(&pieces);
    assert!(tool_starts(&out).is_empty());
    assert_eq!(all_text(&out), pieces.concat());

    // Words after it on its line make it an answer, shown once they arrive.
    let (shown, out) = steps_unknown(&[
        "{\"name\": \"todo_comments\", \"arguments\": {}}",
        " is how I would count them.\n",
    ]);
    assert_eq!(
        shown[1],
        "{\"name\": \"todo_comments\", \"arguments\": {}} is how I would count them.\n"
    );
    assert!(tool_starts(&out).is_empty());
    // Words on the lines after it are its explanation: held, and the call is made.
    let (shown, out) = steps_unknown(&[
        "{\"name\": \"todo_comments\", \"arguments\": {}}\n",
        "That is how I would count them.\n",
    ]);
    assert_eq!(shown, ["", ""], "held back, never shown");
    assert_eq!(tool_starts(&out), ["todo_comments"]);

    // Text shown before it keeps it text.
    let (_, out) = steps_unknown(&[
        "Counting.\n",
        "{\"name\": \"todo_comments\", \"arguments\": {}}",
    ]);
    assert!(tool_starts(&out).is_empty());
}

#[test]
fn an_answer_that_writes_one_line_over_and_over_is_cut() {
    let line = "{\"name\": \"run_calc.py\", \"arguments\": {\"python3\": \"python3\"}}\n";
    let mut f = CallFilter::new(offered());
    let mut out = Vec::new();
    for (i, event) in text_events(&[line, line, "\n", line, line])
        .into_iter()
        .enumerate()
    {
        f.push(event, &mut out);
        // Start, block start, then the pieces: the third copy is where it stops.
        assert_eq!(f.saturated(), i >= 5, "after event {i}");
        if f.saturated() {
            break;
        }
    }
    // Short lines (code's closing braces) and lines that differ are an answer.
    for pieces in [
        &["}\n", "}\n", "}\n", "}\n"][..],
        &[
            "Step one is done.\n",
            "Step two is done.\n",
            "Step one is done.\n",
        ][..],
    ] {
        let (_, _, f) = filter(text_events(pieces));
        assert!(!f.saturated(), "{pieces:?}");
    }
}

/// Feeds `pieces` as one answer until the filter is saturated: the filter, what it let
/// out, and how many events it took.
fn feed_until_saturated(pieces: &[&str]) -> (CallFilter, Vec<Event>, usize) {
    let mut f = CallFilter::new(offered());
    let mut out = Vec::new();
    let mut fed = 0;
    for event in text_events(pieces) {
        f.push(event, &mut out);
        fed += 1;
        if f.saturated() {
            break;
        }
    }
    (f, out, fed)
}

#[test]
fn an_answer_that_writes_a_few_lines_over_and_over_is_cut() {
    // Qwen2.5-Coder-0.5B asked to run the tests, until its output limit.
    let block = [
        "To run tests, use this command:\n",
        "```\n",
        "pytest tests/\n",
        "```\n",
        "\n",
    ];
    let pieces: Vec<&str> = block
        .iter()
        .cycle()
        .take(block.len() * 6)
        .copied()
        .collect();
    let (_, _, fed) = feed_until_saturated(&pieces);
    // Start, block start, two copies, then the third copy's four lines.
    assert_eq!(fed, 2 + 2 * block.len() + 4);
    // A list whose items differ, and code that repeats a block twice, are an answer.
    for pieces in [
        &[
            "- a: 1\n", "- b: 1\n", "- a: 1\n", "- b: 2\n", "- a: 1\n", "- b: 1\n",
        ][..],
        &[
            "x = read()\n",
            "y = x\n",
            "x = read()\n",
            "y = x\n",
            "done()\n",
        ][..],
    ] {
        let (_, _, f) = filter(text_events(pieces));
        assert!(!f.saturated(), "{pieces:?}");
    }
}

#[test]
fn an_answer_looping_inside_one_line_is_cut_and_its_half_call_never_runs() {
    // Qwen2.5-Coder-0.5B after a good append: an invented call, then a write whose
    // content repeats until the output limit, in one JSON string (no line ends).
    let start = "{\"name\": \"append_line\", \"arguments\": {\"path\": \"TODO.md\"}}\n\
                 {\"name\": \"edit\", \"arguments\": {\"path\": \"TODO.md\", \"old_string\": \"\", \
                 \"new_string\": \"";
    let mut pieces = vec![start.to_owned()];
    pieces.extend(std::iter::repeat_n(
        "# TODO\\n\\n- write tests\\n\\n".to_owned(),
        60,
    ));
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let (mut f, mut out, fed) = feed_until_saturated(&pieces);
    // Eight copies or more of the 27-byte piece (256 bytes, looked at every 128 bytes),
    // not the 38 of the whole span.
    assert!(f.saturated() && fed <= 1 + 18, "cut after {fed} events");
    f.finish(&mut out);
    assert!(
        tool_starts(&out).is_empty(),
        "the cut call is not run: {out:?}"
    );
    // Prose, code and a table that only look alike are read to the end.
    let table: String = (0..80).map(|i| format!("| row {i} | 0 | 0 |\n")).collect();
    let code: String = (0..60)
        .map(|i| format!("let x{i} = [0, 0, 0, 0];\n"))
        .collect();
    // A short piece repeated for less than the whole span: a rule line, a row of zeros.
    let rule = format!("{}\n{}", "=".repeat(200), "0, ".repeat(300));
    for text in [table, code, rule] {
        let (_, _, f) = filter(text_events(&[&text]));
        assert!(!f.saturated(), "{text}");
    }
}

#[test]
fn a_call_left_a_brace_short_is_closed_and_nothing_else() {
    // Qwen2.5-Coder-0.5B's answer, verbatim: the outer object never closes.
    let cut = r#"{"name": "edit", "arguments": {"path": "/etc/nginx/nginx.conf", "old_string": "server { listen 80; }", "new_string": "server { listen 9090; }"}"#;
    assert_eq!(calls(cut), None);
    let closed = close_cut_call(cut).unwrap();
    assert_eq!(closed, format!("{cut}}}"));
    assert_eq!(
        calls(&closed).unwrap().1,
        one(
            "edit",
            r#"{"path":"/etc/nginx/nginx.conf","old_string":"server { listen 80; }","new_string":"server { listen 9090; }"}"#
        )
    );
    let tagged =
        "<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"path\": \"docs\", \"all\": true\n";
    assert!(calls(&close_cut_call(tagged).unwrap()).is_some());
    // Cut inside a string, more than two brackets short, a closed value, a value half
    // written, a mismatched bracket, or prose: nothing is made up.
    for text in [
        r#"{"name": "edit", "arguments": {"path": "a", "new_string": "half"#,
        r#"{"name": "edit", "arguments": {"path": {"a": ["b""#,
        r#"{"name": "ls", "arguments": {}}"#,
        r#"{"name": "ls", "arguments": {"path": "#,
        r#"{"name": "ls", "arguments": {"path": "a"]"#,
        "I would call ls here.",
    ] {
        assert_eq!(close_cut_call(text), None, "{text}");
    }
}

#[path = "recovery_quoted_tests.rs"]
mod quoted;

#[test]
fn keys_written_without_quotes_still_make_the_call() {
    let edit = one(
        "edit",
        r#"{"path":"greet.py","old_string":"Hello, ","new_string":"Hello, world"}"#,
    );
    let written = r#"{"name":"edit","arguments":{"path":"greet.py","old_string":"Hello, ",new_string:"Hello, world"}}"#;
    for text in [written.to_owned(), format!("```json\n{written}\n```")] {
        let (kept, found) = calls(&text).unwrap();
        assert_eq!(kept, "", "{text}");
        assert_eq!(found, edit, "{text}");
    }
    // Streamed with the key cut before its colon: held back, never shown, then run.
    let (early, out, f) = filter(text_events(&[
        r#"{"name":"edit","arguments":{"path":"greet.py","old_string":"Hello, ",new_"#,
        r#"string:"Hello, world"}}"#,
    ]));
    assert_eq!(early, "");
    assert_eq!(all_text(&out), "");
    assert_eq!(tool_starts(&out), ["edit"]);
    assert_eq!(f.recovered().len(), 1);
}
