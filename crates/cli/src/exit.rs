//! Process exit codes: the engine's, the same for every front end; documented in the
//! README ("Exit codes").

pub use saki_engine::ExitCode;
