//! The sandbox helper on its own (see `sandbox_exec.rs`): `saki-sandbox-exec sandbox-exec
//! --policy JSON -- PROGRAM ARGS...`, the same arguments as `saki sandbox-exec`.

#[path = "../sandbox_exec.rs"]
mod sandbox_exec;

fn main() -> std::process::ExitCode {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = match raw.get(1).and_then(|a| a.to_str()) {
        Some(saki_sandbox::HELPER_SUBCOMMAND) => &raw[2..],
        _ => raw.get(1..).unwrap_or_default(),
    };
    sandbox_exec::run(args)
}
