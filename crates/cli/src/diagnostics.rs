//! Diagnostics (`tracing` events) on stderr or in `SAKI_LOG_FILE`.
//!
//! Their fields quote what came from outside: a provider's malformed event or error
//! message, a tool name the model chose, a file name. Raw, an escape sequence in them
//! would reach the terminal (OSC 52 writes the clipboard, `ESC [2J` clears the screen), so
//! every field goes through [`sanitize`], as every front end's text does; only the level's
//! colour, added by the formatter around the fields, stays an escape sequence, and only
//! when stderr is a terminal and `NO_COLOR` is unset.

use saki_tools::sanitize::sanitize;
use std::io::IsTerminal;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format;

/// Whether stderr is a terminal that may be coloured.
pub fn stderr_colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Diagnostics go to stderr; `SAKI_LOG` takes a tracing filter (default: warnings).
/// The interactive UI owns the screen, so there they go to the file `SAKI_LOG_FILE`
/// names, or nowhere.
pub fn init(interactive: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SAKI_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let fields = format::debug_fn(|writer, field, value| {
        let text = if field.name() == "message" {
            format!("{value:?}")
        } else {
            format!("{field}={value:?}")
        };
        writer.write_str(&sanitize(&text))
    })
    .delimited(" ");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .fmt_fields(fields)
        .without_time()
        .with_target(false);
    if !interactive {
        let _ = builder
            .with_ansi(stderr_colour())
            .with_writer(std::io::stderr)
            .try_init();
        return;
    }
    let Some(path) = std::env::var_os("SAKI_LOG_FILE") else {
        return;
    };
    // Diagnostics quote prompts and tool output: the file is this user's only.
    match saki_tools::common::open_private_append(std::path::Path::new(&path)) {
        Ok(file) => {
            let _ = builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(file))
                .try_init();
        }
        Err(e) => eprintln!("warning: cannot open SAKI_LOG_FILE: {e}"),
    }
}
