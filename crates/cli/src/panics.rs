//! A panic inside the engine (a bug, or a case nobody foresaw) ends the run as a failure
//! that says so, with the usual exit status and `turn.failed` line, instead of killing
//! the process with no trace in `--json` output: the engine runs as a task, and its
//! front end reports the task's panic.

use std::any::Any;

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
    async fn a_panicking_task_gives_its_message() {
        let boom = tokio::spawn(async {
            if true {
                panic!("boom {}", 1);
            }
        });
        let payload = boom.await.unwrap_err().into_panic();
        assert_eq!(message(payload), "boom 1");
        let payload = tokio::spawn(async { panic!("static") })
            .await
            .unwrap_err()
            .into_panic();
        assert_eq!(message(payload), "static");
    }
}
