#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What `saki exec` writes to stderr beside the answer: warnings and diagnostics quote a
//! provider's words and file names, which must not reach the terminal as escape
//! sequences; and stderr is coloured only when it is a terminal.

mod common;

use common::env_with;
use saki_testkit::{MockServer, Reply};

/// A provider's malformed event is quoted in the diagnostic that skips it: OSC 52 (write
/// the clipboard) and `ESC [2J` (clear the screen) in it are shown, not obeyed. Piped,
/// stderr has no colour either.
#[test]
fn a_providers_words_in_a_warning_reach_stderr_without_escapes_or_colour() {
    let server = MockServer::start().unwrap();
    server.push(Reply::raw_sse(
        "data: {oops \u{1b}]52;c;cm0gLXJmIH4=\u{7} \u{1b}[2J\u{9b}31m}\n\n\
         data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n\
         data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
         data: [DONE]\n\n",
    ));
    let e = env_with(&[]);
    let out = e.exec_llamacpp(&server.openai_url(), &[], "hello");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("malformed stream event"), "{stderr}");
    assert!(
        stderr.contains("]52;c;cm0gLXJmIH4="),
        "the words are shown: {stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}') && !stderr.contains('\u{9b}'),
        "{stderr:?}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
}
