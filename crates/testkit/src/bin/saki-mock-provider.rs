//! `saki-mock-provider SCRIPT.json [--until-stdin-eof] [--log FILE]`: the mock provider
//! as a process, for end-to-end scripts that run the real `saki` binary (e.g. in tmux).
//! Prints its base URL (`http://127.0.0.1:PORT`; OpenAI clients add `/v1`) as the first
//! stdout line, then serves the scripted replies in order until killed (or until stdin
//! ends). The script format is in the crate README.

use saki_testkit::{MockServer, Reply, Turn};
use serde::Deserialize;
use serde_json::Value;
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: saki-mock-provider SCRIPT.json [--until-stdin-eof] [--log FILE]";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<TurnSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnSpec {
    text: Option<String>,
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallSpec>,
    usage: Option<UsageSpec>,
    chunk_delay_ms: Option<u64>,
    status: Option<u16>,
    /// With `status`: the response body, a string or any JSON value.
    body: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallSpec {
    id: Option<String>,
    name: String,
    /// An object, or the raw JSON string the model would stream (possibly invalid).
    arguments: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageSpec {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

fn reply(n: usize, spec: TurnSpec) -> Result<Reply, String> {
    if let Some(status) = spec.status {
        if !(100..=599).contains(&status) {
            return Err(format!(
                "turns[{n}]: `status` {status} is not an HTTP status code (100-599)"
            ));
        }
        let extra = [
            ("text", spec.text.is_some()),
            ("thinking", spec.thinking.is_some()),
            ("tool_calls", !spec.tool_calls.is_empty()),
            ("usage", spec.usage.is_some()),
            ("chunk_delay_ms", spec.chunk_delay_ms.is_some()),
        ];
        if let Some((key, _)) = extra.iter().find(|(_, set)| *set) {
            return Err(format!(
                "turns[{n}]: a `status` turn is a plain HTTP reply; `{key}` cannot go with it (only `body`)"
            ));
        }
        let body = match spec.body {
            None => String::new(),
            Some(Value::String(s)) => s,
            Some(v) => v.to_string(),
        };
        return Ok(Reply::status(status, body));
    }
    if spec.body.is_some() {
        return Err(format!(
            "turns[{n}]: `body` is the body of a plain HTTP reply and needs a `status`"
        ));
    }
    let mut turn = Turn::new();
    if let Some(thinking) = spec.thinking {
        turn = turn.with_thinking(thinking);
    }
    if let Some(text) = spec.text {
        turn = turn.with_text(text);
    }
    for (i, call) in spec.tool_calls.into_iter().enumerate() {
        let id = call.id.unwrap_or_else(|| format!("call_{n}_{i}"));
        let arguments = match call.arguments {
            None => "{}".to_owned(),
            Some(Value::String(raw)) => raw,
            Some(v) => v.to_string(),
        };
        turn = turn.with_tool_call(id, call.name, arguments);
    }
    if let Some(usage) = spec.usage {
        turn = turn.with_usage(usage.input_tokens, usage.output_tokens);
    }
    if let Some(ms) = spec.chunk_delay_ms {
        turn = turn.chunk_delay(Duration::from_millis(ms));
    }
    Ok(Reply::Turn(turn))
}

fn load(path: &str) -> Result<Vec<Reply>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read the script {path}: {e}"))?;
    let script: Script = serde_json::from_str(&text).map_err(|e| {
        format!("{path}: {e} (expected {{\"turns\": [...]}}, see the saki-testkit README)")
    })?;
    script
        .turns
        .into_iter()
        .enumerate()
        .map(|(n, t)| reply(n, t).map_err(|e| format!("{path}: {e}")))
        .collect()
}

struct Args {
    script: String,
    until_stdin_eof: bool,
    log: Option<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut script, mut until_stdin_eof, mut log) = (None, false, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--until-stdin-eof" => until_stdin_eof = true,
            "--log" => log = Some(args.next().ok_or("--log needs a file")?),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ if script.is_some() => return Err(format!("unexpected argument {arg}")),
            _ => script = Some(arg),
        }
    }
    Ok(Args {
        script: script.ok_or("no script given")?,
        until_stdin_eof,
        log,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("saki-mock-provider: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let replies = match load(&args.script) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("saki-mock-provider: {e}");
            return ExitCode::from(2);
        }
    };
    let log = match &args.log {
        None => None,
        Some(path) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(file) => Some(file),
            Err(e) => {
                eprintln!("saki-mock-provider: cannot open the log {path}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let server = match MockServer::start() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("saki-mock-provider: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(file) = log {
        server.log_requests_to(file);
    }
    for reply in replies {
        server.push(reply);
    }
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "{}", server.url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    if args.until_stdin_eof {
        let mut sink = [0u8; 4096];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Err(e) if e.kind() != std::io::ErrorKind::Interrupted => break,
                _ => {}
            }
        }
    } else {
        // SIGTERM and SIGINT keep their default action: the process ends.
        loop {
            std::thread::park();
        }
    }
    ExitCode::SUCCESS
}
