//! `saki export [ID | --last] [--format md|html|json] [-o FILE]`: a saved session as a
//! readable transcript (Markdown or one self-contained HTML file) or as its items in
//! JSON. The API keys saki knows (the providers' `env_key` values, their configured
//! header values) and tokens of well-known shapes are redacted wherever they appear.

mod blocks;
mod html;
mod markdown;

use crate::exit::ExitCode;
use crate::session;
use saki_llm_client::{UsageEvent, WireApi};
use saki_llm_worker::pricing::{usd_label, PriceTable};
use saki_llm_worker::Item;
use saki_pod::transcript::{Entry, Transcript};
use saki_pod::LoadedSession;
use saki_tools::sanitize::sanitize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The version of the JSON export's shape.
pub const JSON_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Html,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The session (`saki sessions` lists them; default: the newest of this workspace).
    #[arg(value_name = "ID", conflicts_with = "last")]
    pub id: Option<String>,
    /// The newest session of this workspace (the default).
    #[arg(long)]
    pub last: bool,
    /// md (default), html or json; without it, FILE's extension chooses.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write to FILE (made readable by you only) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The workspace whose newest session is meant (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<PathBuf>,
}

/// What every format shows about the session as a whole.
pub struct Summary {
    pub id: String,
    pub title: String,
    pub workspace: String,
    pub provider: String,
    pub model: String,
    pub started: String,
    pub wire: WireApi,
    pub prices: PriceTable,
    pub total: UsageEvent,
    pub requests: u64,
}

impl Summary {
    pub fn turn_cost(&self, usage: &UsageEvent) -> Option<f64> {
        self.prices.main_cost(usage, self.wire)
    }

    pub fn cost(&self) -> Option<f64> {
        self.turn_cost(&self.total).map(crate::pricing::round)
    }

    /// `12 requests · 40.1k in (30.0k cached) · 2.1k out · $0.042`.
    pub fn totals_line(&self) -> String {
        if self.requests == 0 {
            return "not recorded (sessions record usage since this version)".to_owned();
        }
        let cost = match self.cost() {
            Some(c) => usd_label(c),
            None => format!("no price known for {}", self.model),
        };
        format!(
            "{} requests · {} · {cost} (main turns; reading ahead is not recorded)",
            self.requests,
            blocks::usage_label(&self.total, self.wire)
        )
    }
}

fn fail(message: &str, code: ExitCode) -> ExitCode {
    eprintln!("error: {}", sanitize(message));
    code
}

pub fn run(args: ExportArgs) -> ExitCode {
    let store = match session::store() {
        Ok(s) => s,
        Err(e) => return fail(&e, ExitCode::Config),
    };
    let dir = args
        .cd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    let workspace = dir.canonicalize().unwrap_or(dir);
    let resume = match &args.id {
        Some(id) => session::Resume::Id(id.clone()),
        None => session::Resume::Last,
    };
    let loaded = match session::load(&store, &resume, &workspace) {
        Ok(Some(l)) => l,
        Ok(None) => return fail("no session", ExitCode::Usage),
        Err(e) => return fail(&e, ExitCode::Usage),
    };
    let transcript = match Transcript::read(&loaded) {
        Ok(t) => t,
        Err(e) => return fail(&e.to_string(), ExitCode::Internal),
    };
    if transcript.skipped > 0 {
        eprintln!(
            "warning: {} unreadable line(s) of the session log left out",
            transcript.skipped
        );
    }
    let format = args
        .format
        .unwrap_or_else(|| format_of(args.output.as_deref()));
    let text = render(&loaded, &transcript, &workspace, format);
    match &args.output {
        None => {
            print!("{text}");
            ExitCode::Success
        }
        Some(path) => match write(path, &text) {
            Ok(()) => {
                eprintln!("exported session {} to {}", loaded.meta.id, path.display());
                ExitCode::Success
            }
            Err(e) => fail(&e, ExitCode::Internal),
        },
    }
}

/// The session in `format`, with the secrets `workspace`'s config and the environment
/// name redacted.
fn render(
    loaded: &LoadedSession,
    transcript: &Transcript,
    workspace: &Path,
    format: Format,
) -> String {
    let files = crate::setup::config_files(workspace).map(|c| c.files).ok();
    let files = files.unwrap_or_default();
    let known = known_secrets(&files, &|k| std::env::var(k).ok());
    export(loaded, &transcript.entries, format, &files, &known)
}

/// Writes an export readable by its owner only, atomically.
fn write(path: &Path, text: &str) -> Result<(), String> {
    saki_tools::atomic::write_atomic_mode(path, text.as_bytes(), 0o600)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `/export [md|html|json] [FILE]` in the UI: session `id` to FILE (default
/// `saki-ID.EXT` in the workspace); says where it went.
pub fn export_command(workspace: &Path, id: &str, args: &str) -> Result<String, String> {
    let mut format = None;
    let mut path = None;
    for word in args.split_whitespace() {
        match word {
            "md" | "markdown" => format = Some(Format::Md),
            "html" => format = Some(Format::Html),
            "json" => format = Some(Format::Json),
            file if path.is_none() => path = Some(PathBuf::from(file)),
            other => {
                return Err(format!(
                    "/export [md|html|json] [FILE]: `{other}` is one word too many"
                ))
            }
        }
    }
    let format = format.unwrap_or_else(|| format_of(path.as_deref()));
    let ext = match format {
        Format::Md => "md",
        Format::Html => "html",
        Format::Json => "json",
    };
    let path = path.unwrap_or_else(|| PathBuf::from(format!("saki-{id}.{ext}")));
    let path = if path.is_absolute() {
        path
    } else {
        workspace.join(path)
    };
    let store = session::store()?;
    let loaded = store.load(id).map_err(|e| e.to_string())?;
    let transcript = Transcript::read(&loaded).map_err(|e| e.to_string())?;
    write(&path, &render(&loaded, &transcript, workspace, format))?;
    Ok(format!("exported this session to {}", path.display()))
}

fn format_of(path: Option<&Path>) -> Format {
    match path.and_then(Path::extension).and_then(|e| e.to_str()) {
        Some("html" | "htm") => Format::Html,
        Some("json") => Format::Json,
        _ => Format::Md,
    }
}

/// The values of every provider's key variable, and its configured header values.
pub fn known_secrets(
    files: &crate::config::FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut known: Vec<String> = crate::config::key_names(files)
        .iter()
        .filter_map(|name| env(name))
        .collect();
    for provider in files.providers.values() {
        known.extend(provider.headers.values().cloned());
    }
    known.retain(|k| !k.trim().is_empty());
    // Longer first: a key that holds another is replaced whole.
    known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    known
}

/// The session in `format`, secrets redacted.
pub fn export(
    loaded: &LoadedSession,
    entries: &[Entry],
    format: Format,
    files: &crate::config::FileConfig,
    known: &[String],
) -> String {
    let entries: Vec<Entry> = entries.iter().map(|e| redact_entry(e, known)).collect();
    let meta = &loaded.meta;
    let wire = files
        .providers
        .get(&meta.provider)
        .and_then(|p| p.wire_api)
        .unwrap_or(if meta.provider == "anthropic" {
            WireApi::Anthropic
        } else {
            WireApi::Chat
        });
    let mut total = UsageEvent::default();
    let mut requests = 0;
    for e in &entries {
        if let Entry::Usage { usage } = e {
            requests += 1;
            blocks::add(&mut total, usage);
        }
    }
    let summary = Summary {
        id: meta.id.clone(),
        title: if meta.title.is_empty() {
            "saki session".to_owned()
        } else {
            meta.title.clone()
        },
        workspace: meta.workspace.clone(),
        provider: meta.provider.clone(),
        model: meta.model.clone(),
        started: session::ago(meta.created),
        wire,
        prices: crate::pricing::table(files, &meta.model, &meta.model, &meta.model),
        total,
        requests,
    };
    let text = match format {
        Format::Md => markdown::render(&summary, &blocks::blocks(&entries)),
        Format::Html => html::render(&summary, &blocks::blocks(&entries)),
        Format::Json => {
            let mut meta = serde_json::to_value(meta).unwrap_or_default();
            if let Some(m) = meta.as_object_mut() {
                // The system prompt is saki's own text, large, and the same each session.
                m.remove("system_prompt");
            }
            let value = json!({
                "version": JSON_VERSION,
                "session": meta,
                "usage": {"requests": summary.requests, "tokens": summary.total,
                          "cost_usd": summary.cost()},
                "items": entries,
            });
            serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
        }
    };
    // Also what the renderers added (the title, the workspace path).
    saki_sandbox::shell_env::redact(&text, known)
}

/// Redacts every string of an entry's item (text, arguments, results, paths).
fn redact_entry(entry: &Entry, known: &[String]) -> Entry {
    match entry {
        Entry::Item { item, speculated } => {
            let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
            redact_value(&mut value, known);
            match serde_json::from_value::<Item>(value) {
                Ok(item) => Entry::Item {
                    item,
                    speculated: *speculated,
                },
                Err(_) => Entry::Item {
                    item: Item::system("[an item left out: it did not survive redaction]"),
                    speculated: *speculated,
                },
            }
        }
        other => other.clone(),
    }
}

fn redact_value(value: &mut Value, known: &[String]) {
    match value {
        Value::String(s) => *s = saki_sandbox::shell_env::redact(s, known),
        Value::Array(a) => a.iter_mut().for_each(|v| redact_value(v, known)),
        Value::Object(o) => o.values_mut().for_each(|v| redact_value(v, known)),
        _ => {}
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
