//! Flags shared by every command that runs a session (`exec` and the interactive UI) or
//! talks to a model.

use crate::session::Resume;
use saki_sandbox::SandboxMode;
use saki_tools::{ApprovalMode, Workspace};
use std::path::PathBuf;
use std::sync::Arc;

/// Workspace, approval, session and turn limits: shared by `exec` and the interactive UI.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Run in this directory (the workspace) instead of the current one.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// When tool calls need approval: plan, default, auto-edit or yolo. `exec` cannot ask,
    /// so there a call that needs approval is denied and the model is told why.
    #[arg(long, value_name = "MODE", default_value = "default")]
    pub approval: ApprovalMode,
    /// Continue an earlier session (`saki sessions` lists them): `--resume ID`, or
    /// `--resume --last` (also just `--last`) for this workspace's newest one.
    #[arg(long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
    /// How shell commands are confined: workspace-write (default: writes only in the
    /// workspace and a private temp dir, no network, no credential files), read-only, or
    /// off. Also `sandbox = "..."` in config.toml.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// Another directory the tools and `@path` references may use (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// With --resume: the newest session of this workspace.
    #[arg(long)]
    pub last: bool,
    /// Most model requests in one turn.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
}

impl RunArgs {
    /// The workspace directory: `--cd`, else the current directory.
    pub fn dir(&self) -> PathBuf {
        match &self.cd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    /// The workspace: `dir()` as its root, each `--add-dir` as another root. `Err` names
    /// the directory that does not exist.
    pub fn workspace(&self) -> Result<Arc<Workspace>, String> {
        let dir = self.dir();
        let mut workspace = match Workspace::new(&dir) {
            Ok(w) if w.root().is_dir() => w,
            _ => return Err(format!("not a directory: {}", dir.display())),
        };
        for extra in &self.add_dir {
            if !extra.is_dir() || workspace.add_root(extra).is_err() {
                return Err(format!("--add-dir: not a directory: {}", extra.display()));
            }
        }
        Ok(Arc::new(workspace))
    }

    /// Which session to continue; `Err` for `--resume` without an id or `--last`.
    pub fn resume(&self) -> Result<Resume, String> {
        match (&self.resume, self.last) {
            (_, true) => Ok(Resume::Last),
            (Some(Some(id)), false) => Ok(Resume::Id(id.clone())),
            (Some(None), false) => {
                Err("--resume needs a session id, or --last (see `saki sessions`)".to_owned())
            }
            (None, false) => Ok(Resume::New),
        }
    }
}

/// Provider and model selection, shared by every command that talks to a model.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProviderArgs {
    /// Provider name: openai, anthropic, gemini, openai-compatible, ollama, llamacpp, or one from config.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name as the provider spells it.
    #[arg(long, short = 'm', value_name = "MODEL")]
    pub model: Option<String>,
    /// Base URL of the provider's API (OpenAI style includes /v1; Anthropic and Gemini are the host root).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Ask the model to think before answering (where the provider supports it).
    #[arg(long)]
    pub thinking: bool,
    /// Upper bound on output tokens per response.
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u32>,
    /// The model for background work: compaction summaries, suggestions, speculation.
    #[arg(long, value_name = "MODEL")]
    pub fast_model: Option<String>,
    /// Serve this GGUF model with llama.cpp for the session (llama-server from PATH, else
    /// the prebuilt xllamacpp from PyPI, installed once) and use it. Config: `local_model`.
    #[arg(long, value_name = "PATH.gguf")]
    pub local: Option<PathBuf>,
}
