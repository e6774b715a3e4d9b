//! `--local PATH.gguf`: a llama.cpp server for this session, on a free loopback port,
//! stopped when saki exits.
//!
//! The server is `llama-server` from PATH when there is one; otherwise llama.cpp's own
//! server as the prebuilt PyPI wheel `xllamacpp` (no compiler), which saki installs once
//! into its cache (`$XDG_CACHE_HOME/saki/llamacpp`, a venv). Both get the model's own chat
//! template (`--jinja`), so tool calls work as the model was trained to make them, and
//! greedy sampling by default (a request's `temperature` still wins): on saki's own task
//! suite with Qwen2.5-Coder-0.5B it passed more tasks in less time than llama.cpp's default
//! of 0.8, whose detours small models do not recover from.

use saki_llm_client::server_info;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The xllamacpp release saki installs (llama.cpp's server with Jinja templates).
const XLLAMACPP: &str = "xllamacpp==2026.10.11549";
/// The model name the server answers to.
pub const MODEL_ALIAS: &str = "local";
/// Context per request unless config says otherwise: room for a working session on a
/// small model without a large KV cache.
pub const DEFAULT_CONTEXT: u32 = 16384;
/// The server's logical and physical batch. llama.cpp sees a cancelled request only
/// between batches, so while it reads a speculation's prompt, the person's own prompt
/// waits for the batch in progress: with llama.cpp's default (2048 / 512) that cost
/// +45 to 50 s on a ~2,000-token suffix, with 256 it costs +2.2 s, and a cancel
/// mid-answer +67 ms (`scripts/bench-first-token.sh`, 2 cores). Reading a 2,306-token
/// prompt took the same time at 256 as at the default (140 and 136 tokens/s); 128 was
/// slower (132).
pub const BATCH: u32 = 256;
/// Loading a model from a cold disk can take a while on 2 cores.
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs llama.cpp's server in-process through xllamacpp (the same file the scripts under
/// `scripts/` start): model, port, context and alias, then options; serves until killed.
const XLLAMACPP_SERVER: &str = include_str!("xllamacpp_server.py");

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("{0}: {1}")]
    Model(PathBuf, String),
    #[error("--local needs llama-server on PATH, or python3 to install llama.cpp's server from PyPI (xllamacpp); neither was found")]
    NoPython,
    #[error("installing llama.cpp's server (pip install {XLLAMACPP}) failed: {0}")]
    Install(String),
    #[error("cannot start the local server: {0}")]
    Start(String),
    #[error("the local server did not become ready in {}s; its log: {}\n{}", READY_TIMEOUT.as_secs(), .log.display(), .tail)]
    NotReady { log: PathBuf, tail: String },
}

/// A running server; dropping it stops the server.
pub struct LocalServer {
    child: tokio::process::Child,
    /// The model it serves.
    pub model: PathBuf,
    pub base_url: String,
    pub how: &'static str,
}

/// One server shared by the sessions of one process (an editor opens several: one
/// server, one model in memory): started with the first session that asks for it and
/// kept until the process exits, so a session opened later does not wait for the model
/// to load again. A session that asks for another model gets a server of its own, which
/// the next ones share; the one it replaces stops once no session holds it.
#[derive(Default)]
pub struct SharedServer {
    server: tokio::sync::Mutex<Option<std::sync::Arc<LocalServer>>>,
}

impl SharedServer {
    /// The server for `model`, started if none runs for it.
    pub async fn get(
        &self,
        model: &Path,
        context: u32,
        note: &(dyn Fn(&str) + Sync),
    ) -> Result<std::sync::Arc<LocalServer>, LocalError> {
        let mut slot = self.server.lock().await;
        if let Some(server) = slot.as_ref().filter(|s| s.model == model) {
            return Ok(server.clone());
        }
        let server = std::sync::Arc::new(start(model, context, note).await?);
        *slot = Some(server.clone());
        Ok(server)
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// Checks that `path` is a GGUF model file (by its magic bytes).
pub fn check_model(path: &Path) -> Result<(), LocalError> {
    let bad = |why: &str| LocalError::Model(path.to_path_buf(), why.to_owned());
    let mut magic = [0u8; 4];
    let mut file = std::fs::File::open(path).map_err(|e| bad(&e.to_string()))?;
    std::io::Read::read_exact(&mut file, &mut magic)
        .map_err(|_| bad("not a GGUF model file (too short)"))?;
    if &magic != b"GGUF" {
        return Err(bad("not a GGUF model file (it does not start with `GGUF`)"));
    }
    Ok(())
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// `$XDG_CACHE_HOME/saki/llamacpp` (default `~/.cache/saki/llamacpp`).
fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("saki").join("llamacpp"))
}

/// The venv's python with xllamacpp importable, installing it on first use. `note`
/// tells the person what is happening (it takes seconds, once).
async fn xllamacpp_python(note: &(dyn Fn(&str) + Sync)) -> Result<PathBuf, LocalError> {
    let dir = cache_dir().ok_or(LocalError::NoPython)?;
    let venv = dir.join("venv");
    let python = venv.join("bin").join("python");
    let marker = dir.join(".installed");
    if python.is_file() && std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == XLLAMACPP) {
        return Ok(python);
    }
    let system_python = on_path("python3").ok_or(LocalError::NoPython)?;
    note(&format!(
        "installing llama.cpp's server ({XLLAMACPP}, ~35 MB) into {}; once",
        dir.display()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| LocalError::Install(e.to_string()))?;
    let run = |program: PathBuf, args: Vec<String>| async move {
        let out = tokio::process::Command::new(&program)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| LocalError::Install(format!("{}: {e}", program.display())))?;
        if out.status.success() {
            Ok(())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(5).collect();
            Err(LocalError::Install(
                tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            ))
        }
    };
    if !python.is_file() {
        run(
            system_python,
            vec!["-m".into(), "venv".into(), venv.display().to_string()],
        )
        .await?;
    }
    run(
        venv.join("bin").join("pip"),
        vec![
            "install".into(),
            "--quiet".into(),
            "--disable-pip-version-check".into(),
            XLLAMACPP.into(),
        ],
    )
    .await?;
    std::fs::write(&marker, XLLAMACPP).map_err(|e| LocalError::Install(e.to_string()))?;
    Ok(python)
}

fn free_port() -> Result<u16, LocalError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| LocalError::Start(format!("no free port: {e}")))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| LocalError::Start(e.to_string()))
}

/// Starts a server for `model` with `context` tokens and waits until it answers.
pub async fn start(
    model: &Path,
    context: u32,
    note: &(dyn Fn(&str) + Sync),
) -> Result<LocalServer, LocalError> {
    check_model(model)?;
    let port = free_port()?;
    let log_dir = cache_dir().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&log_dir).map_err(|e| LocalError::Start(e.to_string()))?;
    let log_path = log_dir.join("server.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| LocalError::Start(format!("{}: {e}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|e| LocalError::Start(e.to_string()))?;
    let (mut command, how) = match on_path("llama-server") {
        Some(server) => {
            let mut c = tokio::process::Command::new(server);
            c.arg("-m")
                .arg(model)
                .args(llama_server_args(port, context));
            (c, "llama-server")
        }
        None => {
            let python = xllamacpp_python(note).await?;
            let mut c = tokio::process::Command::new(python);
            c.args(["-c", XLLAMACPP_SERVER]).arg(model).args([
                port.to_string(),
                context.to_string(),
                MODEL_ALIAS.to_owned(),
                "--batch".into(),
                BATCH.to_string(),
                "--temp".into(),
                "0".into(),
            ]);
            (c, "xllamacpp")
        }
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| LocalError::Start(e.to_string()))?;
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let ready = tokio::select! {
        ready = server_info::wait_until_ready(&base_url, READY_TIMEOUT) => ready,
        status = child.wait() => {
            tracing::debug!(?status, "local server exited while starting");
            false
        }
    };
    if !ready {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(8).collect();
        return Err(LocalError::NotReady {
            log: log_path,
            tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    Ok(LocalServer {
        child,
        model: model.to_path_buf(),
        base_url,
        how,
    })
}

/// `llama-server`'s arguments after the model: one slot, the model's own template, and
/// the batch that keeps a cancel quick (see [`BATCH`]).
fn llama_server_args(port: u16, context: u32) -> Vec<String> {
    let batch = BATCH.to_string();
    [
        "--host",
        "127.0.0.1",
        "--jinja",
        "--alias",
        MODEL_ALIAS,
        "-np",
        "1",
        "-b",
        &batch,
        "-ub",
        &batch,
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        "--port".into(),
        port.to_string(),
        "-c".into(),
        context.to_string(),
    ])
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both servers read prompts in batches of [`BATCH`], one slot each.
    #[test]
    fn both_servers_get_one_slot_and_the_small_batch() {
        let args = llama_server_args(8080, 4096).join(" ");
        assert!(args.contains("-np 1 -b 256 -ub 256"), "{args}");
        assert!(args.ends_with("--port 8080 -c 4096"), "{args}");
        assert!(XLLAMACPP_SERVER.contains("p.n_batch = p.n_ubatch = a.batch"));
        assert!(XLLAMACPP_SERVER.contains("\"--slots\", type=int, default=1"));
        assert!(XLLAMACPP_SERVER.contains("p.n_parallel = a.slots"));
    }

    #[test]
    fn only_gguf_files_are_models() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("m.gguf");
        std::fs::write(&good, b"GGUF\x03\x00\x00\x00rest").unwrap();
        assert!(check_model(&good).is_ok());
        let bad = dir.path().join("notes.txt");
        std::fs::write(&bad, b"hello world").unwrap();
        assert!(check_model(&bad)
            .unwrap_err()
            .to_string()
            .contains("not a GGUF model file"));
        assert!(check_model(&dir.path().join("missing.gguf")).is_err());
    }
}
