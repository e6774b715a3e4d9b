//! A panic inside a turn (a bug, or a case nobody foresaw) ends the turn as a failure
//! that says so, with the usual exit status and `turn.failed` line, instead of killing
//! the process with no trace in `--json` output.

use futures::FutureExt;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

/// Runs `future`; a panic becomes `Err` with its message.
pub async fn guarded<F: Future>(future: F) -> Result<F::Output, String> {
    // The state a panic may leave half-changed (the worker's history) is not used again:
    // the caller ends the turn and the process.
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(message)
}

/// The text of a panic's payload.
pub fn message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(s) => (*s).to_owned(),
            Err(_) => "a panic without a message".to_owned(),
        },
    }
}

/// What the person reads.
pub fn failure(message: &str) -> String {
    format!("saki failed internally ({message}); the session log keeps the conversation so far")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_its_message() {
        assert_eq!(guarded(async { 7 }).await, Ok(7));
        let got = guarded(async {
            if true {
                panic!("boom {}", 1);
            }
        })
        .await;
        assert_eq!(got, Err("boom 1".to_owned()));
        let got = guarded(async {
            if true {
                panic!("static");
            }
        })
        .await;
        assert_eq!(got, Err("static".to_owned()));
    }
}
