//! Process exit codes, the same for every front end; documented in the README ("Exit
//! codes"). A [`super::StartError`] carries one.

use saki_llm_client::ClientError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Success = 0,
    Internal = 1,
    /// Bad command line or empty prompt (clap also uses 2).
    Usage = 2,
    /// No provider configured, missing key, unreadable or invalid config file.
    Config = 3,
    /// `saki undo` changed nothing or not everything: files changed since the turn
    /// (conflicts), nothing to undo or redo, or the session is open in another saki.
    UndoRefused = 9,
    /// The provider refused the request: bad key, unknown model, context too long, ...
    Rejected = 4,
    /// The provider or the network failed: server errors, timeouts, broken stream,
    /// rate limits that outlasted the retries.
    Provider = 5,
    /// The turn stopped at `--max-turns` model requests.
    MaxTurns = 6,
    /// A hook cancelled the prompt before it was sent.
    PromptCancelled = 7,
    /// The final answer is not JSON that validates against `--output-schema`.
    OutputSchema = 8,
    /// The terminal went away (SIGHUP): running commands were killed, the session kept.
    Hangup = 129,
    /// Cancelled with Ctrl+C.
    Interrupted = 130,
    /// Told to stop (SIGTERM): running commands were killed, the session kept.
    Terminated = 143,
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}

impl ExitCode {
    /// The code for a request the provider refused or that failed on the way.
    pub fn for_client_error(e: &ClientError) -> Self {
        match e {
            ClientError::Auth { .. }
            | ClientError::QuotaExceeded { .. }
            | ClientError::ContextTooLong { .. }
            | ClientError::ModelNotFound { .. }
            | ClientError::EndpointNotFound { .. }
            | ClientError::BadRequest { .. } => ExitCode::Rejected,
            ClientError::Cancelled => ExitCode::Interrupted,
            ClientError::Config(_) => ExitCode::Config,
            _ => ExitCode::Provider,
        }
    }
}
