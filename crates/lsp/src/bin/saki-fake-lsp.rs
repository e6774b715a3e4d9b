//! A fake language server for saki-lsp's tests, over stdio. Diagnostics come from
//! marker words: a line holding `ERROR` gets an error there, `WARN` a warning. A
//! document holding `CRASH` makes it exit at once. Environment:
//! `FAKE_LSP_LOG` (a file: each method received, one a line, and `pid N` first),
//! `FAKE_LSP_SILENT=1` (publishes nothing), `FAKE_LSP_DELAY_MS` (waits before each
//! publication: a slow server), `FAKE_LSP_PULL=1` (offers pull diagnostics and
//! publishes nothing).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};

fn main() {
    let log_path = std::env::var("FAKE_LSP_LOG").ok();
    let log = |line: &str| {
        if let Some(path) = &log_path {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{line}");
            }
        }
    };
    log(&format!("pid {}", std::process::id()));
    if std::env::var_os("SAKI_TEST_SECRET_TOKEN").is_some() {
        log("saw the secret");
    }
    let silent = std::env::var("FAKE_LSP_SILENT").is_ok_and(|v| v == "1");
    let pull = std::env::var("FAKE_LSP_PULL").is_ok_and(|v| v == "1");
    let delay = std::env::var("FAKE_LSP_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let mut docs: BTreeMap<String, String> = BTreeMap::new();
    let mut input = BufReader::new(std::io::stdin());
    let mut out = std::io::stdout();
    while let Some(message) = read(&mut input) {
        let method = message["method"].as_str().unwrap_or("").to_owned();
        log(&method);
        let id = message.get("id").cloned();
        let params = &message["params"];
        let reply = |out: &mut std::io::Stdout, result: Value| {
            if let Some(id) = &id {
                send(out, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
            }
        };
        match method.as_str() {
            "initialize" => {
                let mut caps = json!({
                    "textDocumentSync": 1, "definitionProvider": true, "referencesProvider": true,
                    "hoverProvider": true, "documentSymbolProvider": true,
                    "workspaceSymbolProvider": true});
                if pull {
                    caps["diagnosticProvider"] =
                        json!({"interFileDependencies": false, "workspaceDiagnostics": false});
                }
                reply(&mut out, json!({"capabilities": caps}));
            }
            "textDocument/didOpen" | "textDocument/didChange" => {
                let doc = &params["textDocument"];
                let uri = doc["uri"].as_str().unwrap_or("").to_owned();
                let text = if method.ends_with("didOpen") {
                    doc["text"].as_str().unwrap_or("").to_owned()
                } else {
                    params["contentChanges"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned()
                };
                log(&format!("text {}", text.replace('\n', "\\n")));
                if text.contains("CRASH") {
                    std::process::exit(3);
                }
                docs.insert(uri.clone(), text.clone());
                if !silent && !pull {
                    if delay > 0 {
                        std::thread::sleep(std::time::Duration::from_millis(delay));
                    }
                    send(
                        &mut out,
                        &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                            "params": {"uri": uri, "version": doc["version"], "diagnostics": diagnostics(&text)}}),
                    );
                }
            }
            "textDocument/diagnostic" => {
                let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
                let text = docs.get(uri).cloned().unwrap_or_default();
                reply(
                    &mut out,
                    json!({"kind": "full", "items": diagnostics(&text)}),
                );
            }
            "textDocument/definition" | "textDocument/references" => {
                let word = word_at(&docs, params);
                let mut found = Vec::new();
                for (uri, text) in &docs {
                    for (n, line) in text.lines().enumerate() {
                        let wanted = if method.ends_with("definition") {
                            format!("def {word}")
                        } else {
                            word.clone()
                        };
                        if let Some(col) = line.find(&wanted).filter(|_| !word.is_empty()) {
                            let col = if method.ends_with("definition") {
                                col + 4
                            } else {
                                col
                            };
                            found.push(json!({"uri": uri, "range": range(n, col, word.len())}));
                        }
                    }
                }
                reply(&mut out, Value::Array(found));
            }
            "textDocument/hover" => {
                let word = word_at(&docs, params);
                reply(
                    &mut out,
                    json!({"contents": {"kind": "plaintext", "value": format!("fake hover: {word}")}}),
                );
            }
            "textDocument/documentSymbol" => {
                let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
                let text = docs.get(uri).cloned().unwrap_or_default();
                let symbols: Vec<Value> = text
                    .lines()
                    .enumerate()
                    .filter_map(|(n, l)| {
                        let name = l.strip_prefix("def ")?.split('(').next()?.to_owned();
                        Some(
                            json!({"name": name, "kind": 12, "range": range(n, 0, l.len()),
                            "selectionRange": range(n, 4, name.len())}),
                        )
                    })
                    .collect();
                reply(&mut out, Value::Array(symbols));
            }
            "workspace/symbol" => {
                let query = params["query"].as_str().unwrap_or("");
                let mut found = Vec::new();
                for (uri, text) in &docs {
                    for (n, l) in text.lines().enumerate() {
                        if let Some(name) = l.strip_prefix("def ").and_then(|r| r.split('(').next())
                        {
                            if name.contains(query) {
                                found.push(json!({"name": name, "kind": 12,
                                    "location": {"uri": uri, "range": range(n, 4, name.len())}}));
                            }
                        }
                    }
                }
                reply(&mut out, Value::Array(found));
            }
            "shutdown" => reply(&mut out, Value::Null),
            "exit" => std::process::exit(0),
            _ => {
                if id.is_some() {
                    reply(&mut out, Value::Null);
                }
            }
        }
    }
}

fn range(line: usize, col: usize, len: usize) -> Value {
    json!({"start": {"line": line, "character": col}, "end": {"line": line, "character": col + len}})
}

fn diagnostics(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (word, severity) in [("ERROR", 1), ("WARN", 2)] {
            if let Some(col) = line.find(word) {
                out.push(json!({"range": range(n, col, word.len()), "severity": severity,
                    "message": format!("{} here: {}", word.to_lowercase(), line.trim()), "source": "fake"}));
            }
        }
    }
    out
}

fn word_at(docs: &BTreeMap<String, String>, params: &Value) -> String {
    let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
    let line = params["position"]["line"].as_u64().unwrap_or(0) as usize;
    let col = params["position"]["character"].as_u64().unwrap_or(0) as usize;
    let text = docs.get(uri).map(String::as_str).unwrap_or("");
    let line = text.lines().nth(line).unwrap_or("");
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let chars: Vec<char> = line.chars().collect();
    let (mut start, mut end) = (col.min(chars.len()), col.min(chars.len()));
    while start > 0 && is_word(chars[start - 1]) {
        start -= 1;
    }
    while end < chars.len() && is_word(chars[end]) {
        end += 1;
    }
    chars[start..end].iter().collect()
}

fn read(input: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn send(out: &mut std::io::Stdout, message: &Value) {
    let body = message.to_string();
    let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
    let _ = out.flush();
}
