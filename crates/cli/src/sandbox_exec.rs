//! `saki sandbox-exec`, also built as the small `saki-sandbox-exec` binary: the sandbox
//! helper every shell command runs through (`saki_sandbox::helper_main`). The small
//! binary is what saki starts when it sits beside it: an exec of it costs a fraction of
//! one of saki itself, and each command runs through two (the reaper and the restricted
//! half).

/// Runs the helper with the arguments after `sandbox-exec`; prints a probe's status.
pub fn run(args: &[std::ffi::OsString]) -> std::process::ExitCode {
    use saki_sandbox::{helper_main, HelperExit, HELPER_FAILED};
    match helper_main(args) {
        Ok(HelperExit::Probe(status)) => {
            println!("{}", serde_json::to_string(&status).unwrap_or_default());
            std::process::ExitCode::SUCCESS
        }
        Ok(HelperExit::Exited(code)) => std::process::ExitCode::from(code),
        Err(e) => {
            eprintln!("saki sandbox-exec: {e}");
            std::process::ExitCode::from(HELPER_FAILED)
        }
    }
}
