//! The running half of context compaction: the [`Compactor`] the Worker consults before
//! every request. It measures, plans (prune first, then a summary), asks the PreCompress
//! hook, runs the summary request on the (fast) summary model with thinking off, verifies
//! the result, re-reads the files the work is on, and hands the Worker a [`HistoryEdit`].

use crate::compaction::{
    compacted_history, current_tokens, find_split_point, item_tokens, plan_prune,
    previous_snapshot, prune_replacements, should_compact, summary_instruction,
    COMPRESSION_PRESERVE_THRESHOLD, DEFAULT_THRESHOLD, SUMMARY_MARKER,
};
use crate::file_ref::FsView;
use crate::instructions::estimate_tokens;
use saki_llm_client::{Client, Request, ResponseStatus};
use saki_llm_worker::hook::{HookDecision, HookEvent, Hooks};
use saki_llm_worker::{
    to_messages, BackgroundKind, BackgroundUsage, Compaction, CompactionReport, CompactionStatus,
    CompactionTrigger, ContextGuard, ContextView, HistoryEdit, Item, Responder,
};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Automatic attempts that may fail in a row before automatic compaction pauses.
pub const MAX_AUTO_FAILURES: u32 = 3;
/// Default token budget for files re-read after a summary.
pub const AUTO_READ_BUDGET: usize = 8_000;

#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    /// `compaction.auto`: compact automatically when over the threshold.
    pub auto: bool,
    /// `compaction.threshold`: share of the usable window that triggers compaction.
    pub threshold: f64,
    pub context_window: u64,
    /// Output reserved out of the window (the model's max output).
    pub reserved_output: u64,
    /// The model that writes summaries (the fast model when one is configured).
    pub summary_model: String,
    /// `compaction.auto_read_tokens`: budget for re-read files (0 turns auto-read off).
    pub auto_read_budget: usize,
}

impl CompactionSettings {
    pub fn new(
        summary_model: impl Into<String>,
        context_window: u64,
        reserved_output: u64,
    ) -> Self {
        Self {
            auto: true,
            threshold: DEFAULT_THRESHOLD,
            context_window,
            reserved_output,
            summary_model: summary_model.into(),
            auto_read_budget: AUTO_READ_BUDGET,
        }
    }
}

pub struct Compactor {
    client: Client,
    settings: Mutex<CompactionSettings>,
    hooks: Option<Hooks>,
    fs: Option<FsView>,
    failures: AtomicU32,
    /// Where the summary requests' tokens are counted, apart from the main turns.
    usage: Option<BackgroundUsage>,
}

/// Estimated tokens of `items`, with no provider report to calibrate by.
fn estimate(items: &[Item]) -> u64 {
    current_tokens(items, None)
}

/// Where the previous compaction ended: just after its summary and acknowledgement.
fn last_boundary(history: &[Item]) -> usize {
    history
        .iter()
        .rposition(|i| matches!(i, Item::System { text } if text.starts_with(SUMMARY_MARKER)))
        .map_or(0, |i| (i + 2).min(history.len()))
}

/// The snapshot block of a summary reply (the whole reply when the model left the tags off).
fn snapshot_of(reply: &str) -> &str {
    const OPEN: &str = "<state_snapshot>";
    const CLOSE: &str = "</state_snapshot>";
    match (reply.find(OPEN), reply.rfind(CLOSE)) {
        (Some(a), Some(b)) if b > a => &reply[a..b + CLOSE.len()],
        _ => reply.trim(),
    }
}

/// Paths the session read or wrote, newest first, each once.
fn touched_paths(history: &[Item]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for item in history.iter().rev() {
        let Item::ToolCall {
            name, arguments, ..
        } = item
        else {
            continue;
        };
        if !matches!(name.as_str(), "read_file" | "write_file" | "edit") {
            continue;
        }
        let path = serde_json::from_str::<serde_json::Value>(arguments)
            .ok()
            .and_then(|v| v.get("path")?.as_str().map(str::to_owned));
        if let Some(path) = path {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

impl Compactor {
    pub fn new(client: Client, settings: CompactionSettings) -> Self {
        Self {
            client,
            settings: Mutex::new(settings),
            hooks: None,
            fs: None,
            failures: AtomicU32::new(0),
            usage: None,
        }
    }

    /// Counts the summary requests' tokens as background work (`compaction`).
    pub fn with_background_usage(mut self, usage: BackgroundUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// PreCompress hooks, run before a compaction that will actually run.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Where auto-read files come from.
    pub fn with_fs(mut self, fs: FsView) -> Self {
        self.fs = Some(fs);
        self
    }

    pub fn settings(&self) -> CompactionSettings {
        self.lock().clone()
    }

    /// The session switched models: new limits, and paused automatic compaction resumes.
    pub fn model_changed(&self, settings: CompactionSettings) {
        *self.lock() = settings;
        self.failures.store(0, Ordering::Relaxed);
    }

    /// Whether automatic compaction is paused after repeated failures.
    pub fn auto_paused(&self) -> bool {
        self.failures.load(Ordering::Relaxed) >= MAX_AUTO_FAILURES
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CompactionSettings> {
        self.settings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The prompt size of `view`: reported usage plus calibrated estimates; without a
    /// report, the system prompt and tool definitions are estimated too.
    pub fn prompt_tokens(view: &ContextView<'_>) -> u64 {
        let history = current_tokens(view.history, view.last_report);
        if view.last_report.is_some() {
            return history;
        }
        let system = view.system_prompt.map_or(0, estimate_tokens);
        let tools = serde_json::to_string(view.tools).map_or(0, |t| estimate_tokens(&t));
        history + (system + tools) as u64
    }

    async fn run(&self, view: ContextView<'_>, trigger: CompactionTrigger) -> Option<Compaction> {
        let settings = self.settings();
        let tokens_before = Self::prompt_tokens(&view);
        let over = |tokens: u64| {
            should_compact(
                tokens,
                settings.context_window,
                settings.reserved_output,
                settings.threshold,
            )
        };
        if trigger == CompactionTrigger::Auto
            && (!settings.auto || self.auto_paused() || !over(tokens_before))
        {
            return None;
        }
        let report = |status, tokens_after, message: Option<String>| CompactionReport {
            trigger,
            status,
            tokens_before,
            tokens_after,
            pruned: 0,
            summarized: 0,
            auto_read: Vec::new(),
            message,
        };

        // Plan: prune first; summarize when that is not enough (or the person asked).
        let mut working = view.history.to_vec();
        let mut edit = HistoryEdit::default();
        let mut tokens = tokens_before;
        if let Some(plan) = plan_prune(&working, last_boundary(&working)) {
            edit.pruned = prune_replacements(&working, &plan);
            let before = estimate(&working);
            // The edit was built from `working` itself, so it always fits.
            let _ = HistoryEdit {
                pruned: edit.pruned.clone(),
                ..HistoryEdit::default()
            }
            .apply(&mut working);
            tokens = tokens.saturating_sub(before.saturating_sub(estimate(&working)));
        }
        let split = find_split_point(&working, 1.0 - COMPRESSION_PRESERVE_THRESHOLD);
        let summarize = (trigger == CompactionTrigger::Manual || over(tokens)) && split > 0;
        if edit.pruned.is_empty() && !summarize {
            let message =
                "nothing to compact: no old tool output to clear and no earlier turn to summarize";
            return Some(self.finish(
                trigger,
                report(CompactionStatus::Noop, tokens_before, Some(message.into())),
                None,
            ));
        }
        if let Some(reason) = self.pre_compress_blocked(trigger, tokens_before).await {
            return Some(self.finish(
                trigger,
                report(CompactionStatus::Blocked, tokens_before, Some(reason)),
                None,
            ));
        }
        let pruned = edit.pruned.len();
        if !summarize {
            let mut done = report(CompactionStatus::Pruned, tokens, None);
            done.pruned = pruned;
            return Some(self.finish(trigger, done, Some(edit)));
        }

        let request = Request {
            model: settings.summary_model.clone(),
            system: view.system_prompt.map(str::to_owned),
            messages: to_messages(&{
                let mut head = working[..split].to_vec();
                head.push(Item::user(summary_instruction(previous_snapshot(
                    &working[..split],
                ))));
                head
            }),
            tools: view.tools.to_vec(),
            max_output_tokens: None,
            temperature: None,
            thinking: None,
            response_schema: None,
            tool_choice: Default::default(),
        };
        let response = Responder::new()
            .respond(&self.client, &request, view.cancel.clone())
            .await;
        if let (Some(usage), Ok(r)) = (&self.usage, &response) {
            let wire = self.client.config().wire_api;
            usage.record(BackgroundKind::Compaction, &r.usage, wire);
        }
        let reply = match response {
            Ok(r)
                if matches!(
                    r.status,
                    ResponseStatus::Completed | ResponseStatus::Incomplete
                ) =>
            {
                r.text()
            }
            Ok(r) => {
                let message = r.error.map_or_else(
                    || format!("the summary request ended {:?}", r.status).to_lowercase(),
                    |e| e.message,
                );
                return Some(self.finish(
                    trigger,
                    report(
                        CompactionStatus::FailedRequest,
                        tokens_before,
                        Some(message),
                    ),
                    None,
                ));
            }
            Err(e) => {
                return Some(self.finish(
                    trigger,
                    report(
                        CompactionStatus::FailedRequest,
                        tokens_before,
                        Some(e.to_string()),
                    ),
                    None,
                ));
            }
        };
        let estimate_before = estimate(view.history);
        let (mut compacted, after) =
            match compacted_history(snapshot_of(&reply), &working[split..], estimate(&working)) {
                Ok(ok) => ok,
                Err(status) => {
                    return Some(self.finish(trigger, report(status, tokens_before, None), None))
                }
            };
        let auto_read = self.auto_read(
            view.history,
            snapshot_of(&reply),
            &settings,
            estimate(&working).saturating_sub(after),
        );
        let names: Vec<String> = auto_read.iter().map(|(p, _)| p.clone()).collect();
        let mut prefix: Vec<Item> = compacted.drain(..2).collect();
        prefix.extend(auto_read.into_iter().map(|(_, item)| item));
        let after = after + estimate(&prefix[2..]);
        edit.summarized = split;
        edit.prefix = prefix;
        // Scale the estimate by how the real count compared with the estimate before.
        let ratio = tokens_before as f64 / estimate_before.max(1) as f64;
        let mut done = report(
            CompactionStatus::Compressed,
            ((after as f64) * ratio).round() as u64,
            None,
        );
        done.pruned = pruned;
        done.summarized = split;
        done.auto_read = names;
        Some(self.finish(trigger, done, Some(edit)))
    }

    /// Re-reads recently touched files the snapshot names, newest first, as long as they
    /// fit in the budget and in `room` (what the summary saved).
    fn auto_read(
        &self,
        history: &[Item],
        snapshot: &str,
        settings: &CompactionSettings,
        room: u64,
    ) -> Vec<(String, Item)> {
        let Some(fs) = &self.fs else {
            return Vec::new();
        };
        let budget = (settings.auto_read_budget as u64).min(room / 2) as usize;
        let mut used = 0;
        let mut read = Vec::new();
        for path in touched_paths(history) {
            if !snapshot.contains(path.as_str()) {
                continue;
            }
            let Ok(body) = fs.read_text(&path, budget.saturating_sub(used) * 4) else {
                continue;
            };
            let item = Item::system(format!("[Auto-read file: {path}]\n{body}"));
            let cost = item_tokens(&item);
            if used + cost > budget {
                continue;
            }
            used += cost;
            read.push((path, item));
        }
        read
    }

    async fn pre_compress_blocked(
        &self,
        trigger: CompactionTrigger,
        tokens: u64,
    ) -> Option<String> {
        let hooks = self.hooks.as_ref()?;
        let payload = json!({"trigger": trigger.as_str(), "tokens": tokens});
        match hooks.run(HookEvent::PreCompress, None, payload).await {
            HookDecision::Block(reason) => Some(reason),
            HookDecision::Continue => None,
        }
    }

    /// Counts failures of automatic attempts; any manual compaction resumes them.
    fn finish(
        &self,
        trigger: CompactionTrigger,
        mut report: CompactionReport,
        edit: Option<HistoryEdit>,
    ) -> Compaction {
        let failed = report.status.is_failure() || report.status == CompactionStatus::Noop;
        match trigger {
            CompactionTrigger::Manual => self.failures.store(0, Ordering::Relaxed),
            CompactionTrigger::Auto if failed => {
                let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                if n >= MAX_AUTO_FAILURES {
                    let note = format!(
                        "automatic compaction paused after {n} failed attempts; compact by hand (`saki compact`, /compress) or change model to resume it"
                    );
                    report.message = Some(match report.message.take() {
                        Some(m) => format!("{m}; {note}"),
                        None => note,
                    });
                }
            }
            CompactionTrigger::Auto => self.failures.store(0, Ordering::Relaxed),
        }
        Compaction { report, edit }
    }
}

#[async_trait::async_trait]
impl ContextGuard for Compactor {
    async fn check(&self, view: ContextView<'_>, trigger: CompactionTrigger) -> Option<Compaction> {
        self.run(view, trigger).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_is_cut_out_of_chatter() {
        assert_eq!(
            snapshot_of("Sure!\n<state_snapshot>x</state_snapshot>\nDone."),
            "<state_snapshot>x</state_snapshot>"
        );
        assert_eq!(snapshot_of("  plain summary "), "plain summary");
    }

    #[test]
    fn touched_paths_are_newest_first_and_unique() {
        let call = |name: &str, path: &str| Item::ToolCall {
            name: name.into(),
            arguments: json!({ "path": path }).to_string(),
            signature: None,
            ctx: saki_llm_worker::ToolExecutionContext {
                call_id: path.into(),
                batch_id: "b".into(),
                call_index: 0,
            },
        };
        let h = vec![
            call("read_file", "a.rs"),
            call("edit", "b.rs"),
            call("grep", "c.rs"),
            call("write_file", "a.rs"),
        ];
        assert_eq!(touched_paths(&h), vec!["a.rs", "b.rs"]);
    }

    #[test]
    fn the_boundary_is_after_the_last_summary_and_its_acknowledgement() {
        let h = vec![
            Item::system(format!("{SUMMARY_MARKER}\nold")),
            Item::AssistantText { text: "ok".into() },
            Item::user("next"),
        ];
        assert_eq!(last_boundary(&h), 2);
        assert_eq!(last_boundary(&h[2..]), 0);
    }
}
