#![allow(clippy::unwrap_used)]
use super::*;

fn diag(line: u32, severity: Severity, message: &str) -> Diag {
    Diag {
        path: "src/a.py".into(),
        line,
        column: 5,
        severity,
        message: message.into(),
        source: Some("Pyright".into()),
        code: None,
    }
}

#[test]
fn the_block_lists_errors_first_then_warnings_and_hides_infos() {
    let outcome = Outcome::Problems {
        diags: vec![
            diag(9, Severity::Warning, "unused import"),
            diag(3, Severity::Info, "fyi"),
            diag(7, Severity::Error, "\"foo\" is not defined"),
            diag(2, Severity::Error, "bad\n  type"),
        ],
        all: false,
    };
    let text = block("pyright", "src/a.py", &outcome);
    assert_eq!(
        text,
        "[lsp pyright: 2 errors and 1 warning in src/a.py, new since the edit]\n\
         src/a.py:2:5 error: bad type (Pyright)\n\
         src/a.py:7:5 error: \"foo\" is not defined (Pyright)\n\
         src/a.py:9:5 warning: unused import (Pyright)"
    );
    let parsed = parse_block(&format!("1 replacement in src/a.py\n--- diff\n{text}")).unwrap();
    assert_eq!(parsed.len(), 3);
    assert_eq!(parsed[1].message, "\"foo\" is not defined");
    assert_eq!(parsed[1].source.as_deref(), Some("Pyright"));
    assert_eq!((parsed[1].line, parsed[1].column), (7, 5));
    assert_eq!(error_count(&text), Some(2));
}

#[test]
fn the_block_is_capped_and_says_how_many_more() {
    let diags = (1..=30).map(|i| diag(i, Severity::Error, "e")).collect();
    let text = block("x", "a.py", &Outcome::Problems { diags, all: true });
    assert_eq!(text.lines().count(), 1 + MAX_SHOWN + 1);
    assert!(text.starts_with("[lsp x: 30 errors and 0 warnings in a.py]"));
    assert!(text.ends_with("… 10 more (the lsp tool's diagnostics lists them all)"));
    assert_eq!(error_count(&text), Some(30));
    assert_eq!(parse_block(&text).unwrap().len(), MAX_SHOWN);
}

#[test]
fn clean_and_silent_outcomes_have_a_header_only() {
    let clean = block(
        "x",
        "a.py",
        &Outcome::Problems {
            diags: vec![],
            all: false,
        },
    );
    assert_eq!(clean, "[lsp x: no new errors or warnings in a.py]");
    assert_eq!(error_count(&clean), Some(0));
    assert_eq!(parse_block(&clean), Some(vec![]));
    let silent = block("x", "a.py", &Outcome::NotReady { secs: 3 });
    assert!(silent.contains("within 3 s"));
    // A server that said nothing reported no list, not an empty one.
    assert_eq!(
        parse_block(&format!("created a.py (3 bytes)\n{silent}")),
        None
    );
    assert_eq!(error_count(&silent), None);
    let down = block("x", "a.py", &Outcome::Unavailable("it crashed".into()));
    assert_eq!(parse_block(&down), None);
    assert_eq!(error_count(&down), None);
    assert_eq!(parse_block("created a.py (3 bytes)"), None);
    assert_eq!(error_count("created a.py (3 bytes)"), None);
}

#[test]
fn only_problems_not_there_before_are_new() {
    let before = vec![
        diag(3, Severity::Error, "old"),
        diag(4, Severity::Warning, "w"),
    ];
    // The old error moved down two lines and a second copy of it appeared.
    let after = vec![
        diag(5, Severity::Error, "old"),
        diag(6, Severity::Error, "old"),
        diag(7, Severity::Error, "brand new"),
    ];
    let fresh = new_since(&before, after);
    let messages: Vec<_> = fresh.iter().map(|d| (d.line, d.message.as_str())).collect();
    assert_eq!(messages, vec![(6, "old"), (7, "brand new")]);
}

#[test]
fn long_messages_are_one_cut_line_and_odd_lines_still_parse() {
    let long = "x ".repeat(400);
    let lsp = lsp_types::Diagnostic {
        range: lsp_types::Range::new(
            lsp_types::Position::new(0, 1),
            lsp_types::Position::new(0, 3),
        ),
        severity: None,
        message: long,
        source: None,
        ..Default::default()
    };
    let d = Diag::from_lsp("a:b.py", "é😀x\n", &lsp);
    assert_eq!(d.severity, Severity::Error, "no severity means an error");
    assert_eq!(d.column, 2, "one UTF-16 unit in is the second character");
    assert_eq!(d.message.chars().count(), MAX_MESSAGE_CHARS);
    let parsed = parse_line(&d.line()).unwrap();
    assert_eq!(parsed.path, "a:b.py");
    assert_eq!(parsed.source, None);
    let with_parens = parse_line("a.py:1:1 error: call f(x) (mypy)").unwrap();
    assert_eq!(with_parens.message, "call f(x)");
    assert_eq!(with_parens.source.as_deref(), Some("mypy"));
}
