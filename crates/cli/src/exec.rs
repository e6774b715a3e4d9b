//! `saki exec`: one non-interactive turn, streamed as plain text or JSON Lines.

use crate::config::{self, ConfigError, Overrides, Resolved};
use crate::exit::ExitCode;
use crate::output::{emit, JsonItems, PlainPrinter};
use saki_llm_client::{
    CancellationToken, Client, ClientConfig, ClientError, Message, Request, ResponseStatus,
    ThinkingConfig,
};
use saki_llm_worker::{AssistantResponse, Responder};
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The prompt. Read from stdin when absent or `-`.
    pub prompt: Option<String>,
    /// Print one JSON object per line (schema: docs/events.md) instead of plain text.
    #[arg(long)]
    pub json: bool,
    /// Run in this directory (the workspace) instead of the current one.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
    #[command(flatten)]
    pub provider: ProviderArgs,
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
}

const SYSTEM_PROMPT: &str = "You are saki, a coding agent working in the user's terminal. \
Answer concisely and accurately; use Markdown only where it helps.";

fn failed(json_mode: bool, kind: &str, message: &str) {
    if json_mode {
        emit(&json!({"type": "turn.failed", "error": {"kind": kind, "message": message}}));
    }
    eprintln!("error: {message}");
}

pub async fn run(args: ExecArgs) -> ExitCode {
    let workspace = match &args.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    if !workspace.is_dir() {
        failed(
            args.json,
            "usage",
            &format!("not a directory: {}", workspace.display()),
        );
        return ExitCode::Usage;
    }
    let resolved = match resolve(&workspace, &args.provider) {
        Ok(r) => r,
        Err(e) => {
            failed(args.json, "config", &e.to_string());
            return ExitCode::Config;
        }
    };
    let prompt = match read_prompt(args.prompt.as_deref()) {
        Ok(p) => p,
        Err(message) => {
            failed(args.json, "usage", &message);
            return ExitCode::Usage;
        }
    };
    let request = Request {
        model: resolved.model.clone(),
        system: Some(SYSTEM_PROMPT.to_owned()),
        messages: vec![Message::user_text(prompt)],
        tools: Vec::new(),
        max_output_tokens: args
            .provider
            .max_output_tokens
            .or(resolved.requested_max_output),
        temperature: None,
        thinking: args.provider.thinking.then(ThinkingConfig::default),
    };
    let mut config = ClientConfig::new(resolved.wire_api, resolved.base_url.clone());
    config.api_key = resolved.api_key.clone();
    config.extra_headers = resolved.headers.clone();
    let client = match Client::new(config) {
        Ok(c) => c,
        Err(e) => {
            failed(args.json, e.kind(), &e.to_string());
            return ExitCode::Internal;
        }
    };

    let mut responder = Responder::new();
    let printer = PlainPrinter::default();
    if args.json {
        let items = JsonItems::default();
        responder
            .timeline_mut()
            .on_text_block(items.clone())
            .on_thinking_block(items.clone())
            .on_tool_use_block(items);
        emit(
            &json!({"type": "turn.started", "provider": resolved.provider, "model": resolved.model,
            "wire_api": resolved.wire_api, "context_window": resolved.limits.context_window}),
        );
    } else {
        responder
            .timeline_mut()
            .on_text_block(printer.clone())
            .on_thinking_block(printer.clone());
    }

    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let result = responder.respond(&client, &request, cancel).await;
    printer.finish_line();
    match result {
        Ok(response) => report(&response, args.json),
        Err(e) => {
            failed(args.json, e.kind(), &e.to_string());
            exit_code_for(&e)
        }
    }
}

fn resolve(workspace: &std::path::Path, args: &ProviderArgs) -> Result<Resolved, ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    let files = config::load_files(&config::config_paths(workspace, &env))?;
    let overrides = Overrides {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    };
    config::resolve(&files, &overrides, &env)
}

fn read_prompt(arg: Option<&str>) -> Result<String, String> {
    let prompt = match arg {
        Some(p) if p != "-" => p.to_owned(),
        _ => {
            let mut buf = String::new();
            std::io::stdin()
                .read_to_string(&mut buf)
                .map_err(|e| format!("could not read the prompt from stdin: {e}"))?;
            buf
        }
    };
    if prompt.trim().is_empty() {
        return Err("the prompt is empty: pass it as an argument or on stdin".to_owned());
    }
    Ok(prompt)
}

fn report(response: &AssistantResponse, json_mode: bool) -> ExitCode {
    let usage = serde_json::to_value(response.usage).unwrap_or_default();
    if json_mode && !response.usage.is_empty() {
        let mut event = json!({"type": "usage"});
        if let (Some(e), Some(u)) = (event.as_object_mut(), usage.as_object()) {
            e.extend(u.clone());
        }
        emit(&event);
    }
    match response.status {
        ResponseStatus::Completed | ResponseStatus::Incomplete => {
            if json_mode {
                emit(&json!({"type": "turn.completed", "status": response.status,
                    "stop_reason": response.stop_reason, "usage": usage}));
            }
            if response.status == ResponseStatus::Incomplete {
                eprintln!("warning: the provider ended the stream without a finish reason; the answer may be incomplete");
            }
            ExitCode::Success
        }
        ResponseStatus::Cancelled => {
            failed(json_mode, "cancelled", "cancelled");
            ExitCode::Interrupted
        }
        ResponseStatus::Failed | ResponseStatus::Started => {
            let message = response
                .error
                .as_ref()
                .map(|e| match &e.code {
                    Some(code) => format!("the provider reported an error ({code}): {}", e.message),
                    None => format!("the provider reported an error: {}", e.message),
                })
                .unwrap_or_else(|| "the response failed".to_owned());
            failed(json_mode, "stream_failed", &message);
            ExitCode::Provider
        }
    }
}

fn exit_code_for(e: &ClientError) -> ExitCode {
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
