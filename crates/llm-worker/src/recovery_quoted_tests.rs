//! Calls quoted in an answer stay text.

use super::*;

#[test]
fn a_call_quoted_in_prose_is_not_run() {
    let call = "{\"name\": \"edit\", \"arguments\": {\"path\": \"a\"}}";
    for text in [
        format!("Here is how you would call it: ```json\n{call}\n``` but I won't."),
        format!("Here is how you would call it:\n```json\n{call}\n```\nbut I won't."),
        format!("Example:\n<tool_call>{call}</tool_call>\nThat edits a."),
        format!("Example:\n{call}\nThat edits a."),
        // Words right after the call: it is talked about, not made.
        format!("{call}\nThat is how you would edit a."),
        format!("```json\n{call}\n```\nThis would edit a, but I won't."),
        // A second call does not make the words after it go away.
        format!("Example:\n{call}\n{call}\nBoth would edit a."),
    ] {
        assert_eq!(calls(&text), None, "{text}");
    }
    // The answer is the call: announced before, or followed by more calls.
    for text in [
        format!("I will edit a.\n```json\n{call}\n```\n"),
        format!("\n  {call}  \n"),
        format!("```json\n{call}\n```"),
        format!("Editing:\n{call}\n{call}\n"),
        format!("{call}\n{{\"name\": \"ls\", \"arguments\": {{}}}}\nnow done"),
    ] {
        assert!(calls(&text).is_some(), "{text}");
    }
}

#[test]
fn a_streamed_call_quoted_in_prose_is_shown_and_not_run() {
    let (_, out) = steps(&[
        "Here is how you would call it:\n",
        "```json\n{\"name\": \"edit\", \"arguments\": {\"path\": \"a\"}}\n```\n",
        "but I won't.",
    ]);
    assert!(tool_starts(&out).is_empty());
    assert_eq!(
        all_text(&out),
        "Here is how you would call it:\n```json\n{\"name\": \"edit\", \"arguments\": {\"path\": \"a\"}}\n```\nbut I won't."
    );
}

#[test]
fn the_closing_fence_of_a_quote_is_not_taken_for_a_second_call() {
    // The opening fence stands inside a line, so the closing one looks like an opening
    // fence: reading must not stop there, or the words after it are never seen.
    let text = "Here is how you would call it: ```json\n{\"name\": \"edit\", \"arguments\": {\"path\": \"a\"}}\n``` but I won't.";
    let chars: Vec<char> = text.chars().collect();
    let pieces: Vec<String> = chars.chunks(4).map(|c| c.iter().collect()).collect();
    let mut f = CallFilter::new(offered());
    let mut out = Vec::new();
    for event in text_events(&pieces.iter().map(String::as_str).collect::<Vec<_>>()) {
        f.push(event, &mut out);
        assert!(!f.saturated(), "{}", all_text(&out));
    }
    assert!(tool_starts(&out).is_empty());
    assert_eq!(all_text(&out), text);
}
