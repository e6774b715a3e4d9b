//! `saki-mock-provider SCRIPT.json [--until-stdin-eof]`: the mock provider as a process,
//! for end-to-end scripts that run the real `saki` binary (e.g. in tmux). Prints its base
//! URL (`http://127.0.0.1:PORT`; OpenAI clients add `/v1`) as the first stdout line,
//! then serves the scripted replies in order until killed (or until stdin ends).
//! The script format is in the crate README.

use saki_testkit::{MockServer, Reply, Turn};
use serde_json::Value;
use std::io::{Read, Write};
use std::time::Duration;

fn turn(n: usize, spec: &Value) -> Result<Reply, String> {
    let obj = spec
        .as_object()
        .ok_or_else(|| format!("turn {n}: expected an object"))?;
    let text = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("turn {n}: `{key}` must be a string")),
        }
    };
    if let Some(status) = obj.get("status") {
        let status = status
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| format!("turn {n}: `status` must be an HTTP status code"))?;
        return Ok(Reply::status(status, text("body")?.unwrap_or_default()));
    }
    let mut turn = Turn::new();
    if let Some(thinking) = text("thinking")? {
        turn = turn.with_thinking(thinking);
    }
    if let Some(t) = text("text")? {
        turn = turn.with_text(t);
    }
    if let Some(calls) = obj.get("tool_calls") {
        let calls = calls
            .as_array()
            .ok_or_else(|| format!("turn {n}: `tool_calls` must be an array"))?;
        for (i, call) in calls.iter().enumerate() {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("turn {n}: tool call {i} needs a `name`"))?;
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{n}_{i}"), str::to_owned);
            let arguments = match call.get("arguments") {
                Some(Value::String(raw)) => raw.clone(),
                Some(v) => v.to_string(),
                None => "{}".to_owned(),
            };
            turn = turn.with_tool_call(id, name, arguments);
        }
    }
    if let Some(usage) = obj.get("usage") {
        let get = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        turn = turn.with_usage(get("input_tokens"), get("output_tokens"));
    }
    if let Some(ms) = obj.get("chunk_delay_ms") {
        let ms = ms
            .as_u64()
            .ok_or_else(|| format!("turn {n}: `chunk_delay_ms` must be a number"))?;
        turn = turn.chunk_delay(Duration::from_millis(ms));
    }
    Ok(Reply::Turn(turn))
}

fn load(path: &str) -> Result<Vec<Reply>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read the script {path}: {e}"))?;
    let script: Value =
        serde_json::from_str(&text).map_err(|e| format!("{path} is not valid JSON: {e}"))?;
    let turns = script
        .get("turns")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{path}: expected {{\"turns\": [...]}}"))?;
    turns.iter().enumerate().map(|(n, t)| turn(n, t)).collect()
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let until_eof = args.iter().any(|a| a == "--until-stdin-eof");
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: saki-mock-provider SCRIPT.json [--until-stdin-eof]");
        return std::process::ExitCode::from(2);
    };
    let replies = match load(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("saki-mock-provider: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match MockServer::start() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("saki-mock-provider: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    for reply in replies {
        server.push(reply);
    }
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "{}", server.url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return std::process::ExitCode::from(1);
    }
    if until_eof {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    } else {
        loop {
            std::thread::park();
        }
    }
    std::process::ExitCode::SUCCESS
}
