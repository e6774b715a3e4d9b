use super::*;
use SuppressReason as R;

fn reason(text: &str) -> Option<SuppressReason> {
    filter_suggestion(text).err()
}

#[track_caller]
fn passes(text: &str) {
    assert_eq!(
        filter_suggestion(text),
        Ok(text.trim().to_owned()),
        "{text:?}"
    );
}

#[track_caller]
fn rejected(text: &str, expected: SuppressReason) {
    assert_eq!(reason(text), Some(expected), "{text:?}");
}

#[test]
fn required_passes() {
    for text in [
        "run nicely formatted tests",
        "fix the greatest issue",
        "/commit",
        "yes",
        "create a PR",
        "run the tests",
        "commit this",
        "push it",
        "  try it out  ",
    ] {
        passes(text);
    }
}

#[test]
fn empty() {
    rejected("", R::Empty);
    rejected("  \n\t ", R::Empty);
    passes(" go on ");
}

#[test]
fn done() {
    rejected("done", R::Done);
    rejected("DONE", R::Done);
    rejected("  Done ", R::Done);
    passes("done with tests");
}

#[test]
fn meta_text() {
    rejected("Nothing found", R::MetaText);
    rejected("nothing found.", R::MetaText);
    rejected("Nothing to suggest here", R::MetaText);
    rejected("No suggestion at this point", R::MetaText);
    rejected("silence is best here", R::MetaText);
    rejected("I should stay silent now", R::MetaText);
    rejected("silence", R::MetaText);
    rejected("(silence)", R::MetaText);
    passes("nothing else to fix");
    passes("no more suggestions box");
    passes("remove the silence flag");
}

#[test]
fn meta_wrapped() {
    rejected("(no obvious next step)", R::MetaWrapped);
    rejected("[waiting for the user]", R::MetaWrapped);
    passes("(optional) run the benches");
    passes("run the [slow] tests");
}

#[test]
fn error_message() {
    rejected("API Error: 500 internal", R::ErrorMessage);
    rejected("Prompt is too long for the model", R::ErrorMessage);
    rejected("Request timed out after 30s", R::ErrorMessage);
    rejected("Invalid API key provided", R::ErrorMessage);
    rejected("Image was too large to process", R::ErrorMessage);
    passes("fix the api error handling");
}

#[test]
fn prefixed_label() {
    rejected("Suggestion: run the tests", R::PrefixedLabel);
    rejected("user: commit this", R::PrefixedLabel);
    passes("run tests:unit now");
    passes("open http://localhost:8080 in tests");
    passes("fix test:unit failures");
}

#[test]
fn too_few_words() {
    rejected("tests", R::TooFewWords);
    rejected("refactor", R::TooFewWords);
    for word in ALLOWED_SINGLE_WORDS {
        passes(word);
    }
    passes("Yes");
    passes("/review");
    passes("はい");
    rejected("続", R::TooFewWords);
}

#[test]
fn too_many_words() {
    rejected(
        "run all the tests and then fix whatever fails and then commit it",
        R::TooManyWords,
    );
    passes("run the tests then fix whatever fails and then commit it");
    let long_cjk = "テストを実行して失敗したものを全部直してからコミットしてプッシュして";
    assert!(long_cjk.chars().count() > 30);
    rejected(long_cjk, R::TooManyWords);
    passes("テストを実行して失敗したものを直してコミットして");
}

#[test]
fn too_long() {
    let long = "refactorization_of_the_configuration_loader_module and reorganization_of_the_dependency_injection_system";
    assert!(long.chars().count() >= 100);
    rejected(long, R::TooLong);
    passes("refactor the configuration loader module");
    let exactly_99 = format!("fix {}", "a".repeat(95));
    assert_eq!(exactly_99.chars().count(), 99);
    passes(&exactly_99);
    rejected(&format!("fix {}", "a".repeat(96)), R::TooLong);
}

#[test]
fn multiple_sentences() {
    rejected("Run the tests. Then commit", R::MultipleSentences);
    rejected("run it! Then push", R::MultipleSentences);
    rejected("does it build? Try it", R::MultipleSentences);
    passes("bump version to 1.2.3 please");
    passes("run it. then push");
}

#[test]
fn has_formatting() {
    rejected("run the tests\nthen commit", R::HasFormatting);
    rejected("run the **unit** tests", R::HasFormatting);
    rejected("rename *.rs files", R::HasFormatting);
    passes("run the unit tests");
}

#[test]
fn evaluative() {
    for text in [
        "thanks, push it",
        "Thank you for that",
        "looks good to me",
        "ok sounds good",
        "that works for me",
        "that worked, commit",
        "that's all for now",
        "nice, commit it",
        "great, ship it",
        "perfect now push",
        "ok makes sense",
        "awesome work here",
        "excellent, merge it",
        "LGTM merge it",
        "cool run it",
        "wonderful now commit",
        "amazing, push it",
        "brilliant, deploy it",
    ] {
        rejected(text, R::Evaluative);
    }
    passes("run nicely formatted tests");
    passes("fix the greatest issue");
    passes("make it perfectly aligned");
}

#[test]
fn ai_voice() {
    for text in [
        "Let me run the tests",
        "I'll commit this now",
        "I\u{2019}ll commit this now",
        "I'm going to push",
        "I will fix it",
        "I can run the tests",
        "I would refactor it",
        "Here's the fix for you",
        "here is the plan",
        "That's done, push next",
        "This is the fix",
        "You can run the tests",
        "you should commit this",
        "You could try it",
        "Sure, I can do that",
        "Of course, running now",
        "Certainly, on it",
        "Absolutely, pushing it",
    ] {
        rejected(text, R::AiVoice);
    }
    passes("sure");
    passes("letter case fix in tests");
    passes("thisis fine to push");
    passes("you canonicalize the path");
}

#[test]
fn earlier_rule_wins() {
    // done vs too_few_words: "done" is one word.
    rejected("done", R::Done);
    // meta_text vs meta_wrapped.
    rejected("(stay silent)", R::MetaText);
    // meta_wrapped vs too_few_words.
    rejected("(tests)", R::MetaWrapped);
    // error_message vs prefixed_label: "API error: ..." has a label shape.
    rejected("api error: rate limited", R::ErrorMessage);
    // prefixed_label vs evaluative.
    rejected("Note: looks good", R::PrefixedLabel);
    // too_few_words vs ai_voice is impossible (prefixes are words); too_many vs too_long.
    rejected(
        "a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg hh ii jj kk ll mm nn oo pp",
        R::TooManyWords,
    );
    // too_long vs multiple_sentences.
    let long = format!("Run {}. Then commit", "x".repeat(100));
    rejected(&long, R::TooLong);
    // multiple_sentences vs has_formatting.
    rejected("Run it. Then **commit**", R::MultipleSentences);
    // has_formatting vs evaluative.
    rejected("looks good\ncommit", R::HasFormatting);
    // evaluative vs ai_voice.
    rejected("I'll say thanks", R::Evaluative);
    rejected("Great question about tests", R::Evaluative);
}

#[test]
fn reasons_have_stable_names() {
    let names: Vec<&str> = SuppressReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "empty",
            "done",
            "meta_text",
            "meta_wrapped",
            "error_message",
            "prefixed_label",
            "too_few_words",
            "too_many_words",
            "too_long",
            "multiple_sentences",
            "has_formatting",
            "evaluative",
            "ai_voice",
            "echoed_prompt",
            "nothing_asked"
        ]
    );
    for r in SuppressReason::ALL {
        assert_eq!(serde_json::to_value(r).unwrap(), json!(r.as_str()));
        assert_eq!(r.to_string(), r.as_str());
    }
}

#[test]
fn parse_plain_and_json_replies() {
    assert_eq!(
        parse_suggestion_reply("  run the tests \n"),
        "run the tests"
    );
    assert_eq!(parse_suggestion_reply("\"run the tests\""), "run the tests");
    assert_eq!(parse_suggestion_reply("'commit this'"), "commit this");
    assert_eq!(parse_suggestion_reply("\u{201C}push it\u{201D}"), "push it");
    assert_eq!(parse_suggestion_reply("`/review`"), "/review");
    assert_eq!(
        parse_suggestion_reply(r#"{"suggestion": " \"run the tests\" "}"#),
        "run the tests"
    );
    assert_eq!(parse_suggestion_reply(r#"{"suggestion": ""}"#), "");
    assert_eq!(parse_suggestion_reply(r#"{"other": 1}"#), "");
    assert_eq!(parse_suggestion_reply(r#"{"suggestion": 3}"#), "");
    assert_eq!(
        parse_suggestion_reply("```json\n{\"suggestion\": \"push it\"}\n```"),
        "push it"
    );
    assert_eq!(parse_suggestion_reply("{not json"), "{not json");
    assert_eq!(parse_suggestion_reply(""), "");
    assert_eq!(parse_suggestion_reply("don't"), "don't");
}

#[test]
fn schema_has_one_string_property() {
    let schema = suggestion_json_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["suggestion"]["type"], "string");
    assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
    assert_eq!(schema["required"], json!(["suggestion"]));
}

#[test]
fn prompt_covers_the_contract() {
    let p = SUGGESTION_PROMPT.to_lowercase();
    for needle in [
        "2 to 12 words",
        "type x to",
        "nothing",
        "question",
        "one sentence",
    ] {
        assert!(p.contains(needle), "{needle}");
    }
    assert!(SUGGESTION_PROMPT.len() < 1000);
}

#[test]
fn the_prompt_offers_only_the_persons_own_slash_commands() {
    assert!(!SUGGESTION_PROMPT.contains("/review"), "not a saki command");
    assert_eq!(super::suggestion_prompt(&[]), SUGGESTION_PROMPT);
    let with = super::suggestion_prompt(&["review".into(), "ship-it".into()]);
    assert!(with.starts_with(SUGGESTION_PROMPT));
    assert!(with.ends_with("no other): /review, /ship-it."), "{with}");
}

#[test]
fn the_requests_own_words_are_not_a_suggestion() {
    rejected("no quotes, no explanation", R::EchoedPrompt);
    rejected("Predict the next message", R::EchoedPrompt);
    rejected("reply with only the message", R::EchoedPrompt);
    // Its examples may well be the next step.
    assert_eq!(
        filter_suggestion("run the tests"),
        Ok("run the tests".into())
    );
    assert_eq!(
        filter_suggestion("explain the next message"),
        Ok("explain the next message".into())
    );
}

#[test]
fn a_bare_yes_needs_a_question() {
    assert_eq!(
        reply_to_nothing("yes", "add() returns the sum of its two arguments."),
        Some(R::NothingAsked)
    );
    assert_eq!(reply_to_nothing("Yes.", "Shall I add a test?"), None);
    assert_eq!(reply_to_nothing("run the tests", "It adds."), None);
}
