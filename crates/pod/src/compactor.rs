//! The running half of context compaction: the [`Compactor`] the Worker consults before
//! every request and after every turn. Before a request it measures, plans (prune first,
//! then a summary), asks the PreCompress hook, runs the summary request (its own system
//! prompt, no tools, thinking off), checks the snapshot's sections, re-reads the files the
//! work is on, and hands the Worker a [`HistoryEdit`]. After a turn it prunes old tool
//! output as soon as that frees enough, however full the window is.

use crate::compaction::{
    checked_summary, current_tokens, find_split_point, plan_prune, prune_replacements,
    should_compact, PruneLimits, PrunePlan, COMPRESSION_PRESERVE_THRESHOLD, DEFAULT_THRESHOLD,
    SUMMARY_MARKER,
};
use crate::file_ref::FsView;
use crate::instructions::estimate_tokens;
use crate::reread;
use saki_llm_client::Client;
use saki_llm_worker::hook::{HookDecision, HookEvent, Hooks};
use saki_llm_worker::{
    BackgroundUsage, Compaction, CompactionReport, CompactionStatus, CompactionTrigger,
    ContextGuard, ContextView, HistoryEdit, Item,
};
use serde_json::json;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

#[path = "summarize.rs"]
mod summarize;

/// Automatic summaries that may fail in a row before automatic summarizing pauses.
pub const MAX_AUTO_FAILURES: u32 = 3;
/// Default token budget for files re-read after a summary.
pub const AUTO_READ_BUDGET: usize = 8_000;

#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSettings {
    /// `compaction.auto`: compact automatically (summaries when over the threshold, prunes
    /// after turns and when over the threshold).
    pub auto: bool,
    /// `compaction.prune`: clear old tool output at all (automatically or by hand).
    pub prune: bool,
    /// `compaction.threshold`: share of the usable window that triggers compaction.
    pub threshold: f64,
    pub context_window: u64,
    /// Output reserved out of the window (the model's max output).
    pub reserved_output: u64,
    /// The model that writes summaries (the fast model when one is configured).
    pub summary_model: String,
    /// `compaction.auto_read_tokens`: budget for re-read files (0 turns auto-read off).
    pub auto_read_budget: usize,
    /// The bound on a summary's length and its sampling temperature, as the session's own
    /// requests have them (a local server's answers are bounded and a small model samples
    /// greedily): unbounded, a 0.5B model wrote a 3,400-token summary for a 4,096-token
    /// window, two minutes on two cores, for nothing.
    pub summary_max_output_tokens: Option<u32>,
    pub summary_temperature: Option<f32>,
}

impl CompactionSettings {
    pub fn new(
        summary_model: impl Into<String>,
        context_window: u64,
        reserved_output: u64,
    ) -> Self {
        Self {
            auto: true,
            prune: true,
            threshold: DEFAULT_THRESHOLD,
            context_window,
            reserved_output,
            summary_model: summary_model.into(),
            auto_read_budget: AUTO_READ_BUDGET,
            summary_max_output_tokens: None,
            summary_temperature: None,
        }
    }

    /// How much tool output a prune keeps, for this window.
    pub fn prune_limits(&self) -> PruneLimits {
        PruneLimits::for_window(self.context_window)
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

/// What a prune does to the estimate of the history it was planned on, without applying
/// it: an item's estimate is its name's, its content's and a fixed framing, so only the
/// cleared contents (`plan.tokens_freed`) and their replacements count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PruneTokens {
    /// Estimated tokens of the cleared outputs.
    cleared: u64,
    /// Estimated tokens of what replaces them.
    replaced: u64,
}

impl PruneTokens {
    fn of(plan: &PrunePlan, replacements: &[(usize, String)]) -> Self {
        Self {
            cleared: plan.tokens_freed as u64,
            replaced: replacements
                .iter()
                .map(|(_, text)| estimate_tokens(text) as u64)
                .sum(),
        }
    }

    /// `estimate(history) - estimate(pruned)`, floored at 0.
    fn freed(self) -> u64 {
        self.cleared.saturating_sub(self.replaced)
    }

    /// `estimate(pruned)`, given `estimate(history)`.
    fn after(self, before: u64) -> u64 {
        (before + self.replaced).saturating_sub(self.cleared)
    }
}

/// `history` with the planned replacements in place of the tool outputs they clear.
fn pruned_history<'a>(history: &'a [Item], replacements: &[(usize, String)]) -> Cow<'a, [Item]> {
    if replacements.is_empty() {
        return Cow::Borrowed(history);
    }
    let mut working = history.to_vec();
    for (i, replacement) in replacements {
        if let Some(Item::ToolResult { content, .. }) = working.get_mut(*i) {
            content.clone_from(replacement);
        }
    }
    Cow::Owned(working)
}

/// Where the previous compaction ended: just after its summary and acknowledgement.
fn last_boundary(history: &[Item]) -> usize {
    history
        .iter()
        .rposition(|i| matches!(i, Item::System { text } if text.starts_with(SUMMARY_MARKER)))
        .map_or(0, |i| (i + 2).min(history.len()))
}

/// Why a summary was not accepted.
type SummaryFailure = (CompactionStatus, Option<String>);

/// A report before anything is known beyond the trigger and the size.
fn report(
    trigger: CompactionTrigger,
    status: CompactionStatus,
    tokens_before: u64,
    tokens_after: u64,
) -> CompactionReport {
    CompactionReport {
        trigger,
        status,
        tokens_before,
        tokens_after,
        pruned: 0,
        summarized: 0,
        auto_read: Vec::new(),
        message: None,
    }
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

    /// The session switched models: new limits, and paused automatic summaries resume.
    pub fn model_changed(&self, settings: CompactionSettings) {
        *self.lock() = settings;
        self.failures.store(0, Ordering::Relaxed);
    }

    /// Whether automatic summaries are paused after repeated failures (pruning goes on).
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
        let auto = trigger == CompactionTrigger::Auto;
        if auto && (!settings.auto || !over(tokens_before)) {
            return None;
        }
        let may_summarize = !auto || !self.auto_paused();
        let new_report =
            |status, tokens_after| report(trigger, status, tokens_before, tokens_after);

        // Plan: prune first; summarize when that is not enough (or the person asked).
        let history = view.history;
        let mut edit = HistoryEdit::default();
        let mut prune = PruneTokens::default();
        let plan = settings
            .prune
            .then(|| plan_prune(history, last_boundary(history), settings.prune_limits()))
            .flatten();
        if let Some(plan) = plan {
            edit.pruned = prune_replacements(history, &plan);
            prune = PruneTokens::of(&plan, &edit.pruned);
        }
        let tokens = tokens_before.saturating_sub(prune.freed());
        let pruned = edit.pruned.len();
        // The history a summary would see (pruned): built only when one may follow.
        let wants_summary = may_summarize && (!auto || over(tokens));
        let (working, split) = if wants_summary {
            let working = pruned_history(history, &edit.pruned);
            let split = find_split_point(&working, 1.0 - COMPRESSION_PRESERVE_THRESHOLD);
            (working, split)
        } else {
            (Cow::Borrowed(history), 0)
        };
        let summarize = wants_summary && split > 0;
        if pruned == 0 && !summarize {
            if !may_summarize {
                // Paused, with nothing to prune: said once, when the pause began.
                return None;
            }
            let mut noop = new_report(CompactionStatus::Noop, tokens_before);
            noop.message = Some(
                "nothing to compact: no old tool output to clear and no earlier turn to summarize"
                    .into(),
            );
            return Some(self.finish(trigger, noop, None));
        }
        if let Some(reason) = self.pre_compress_blocked(trigger, tokens_before).await {
            let mut blocked = new_report(CompactionStatus::Blocked, tokens_before);
            blocked.message = Some(reason);
            return Some(self.finish(trigger, blocked, None));
        }
        if !summarize {
            let mut done = new_report(CompactionStatus::Pruned, tokens);
            done.pruned = pruned;
            if !may_summarize && over(tokens) {
                done.message = Some("automatic summaries are paused".into());
            }
            return Some(self.finish(trigger, done, Some(edit)));
        }
        // A summary that fails keeps the prune planned with it: that part is sound.
        let failed = |(status, message): SummaryFailure, edit: HistoryEdit| {
            let mut failed = new_report(status, tokens_before);
            failed.message = message;
            if pruned == 0 {
                return self.finish(trigger, failed, None);
            }
            failed.tokens_after = tokens;
            failed.pruned = pruned;
            let note = "old tool output was cleared all the same";
            failed.message = Some(match failed.message.take() {
                Some(m) => format!("{m}; {note}"),
                None => note.into(),
            });
            self.finish(trigger, failed, Some(edit))
        };

        // A turn split in the middle keeps its request: the person's own words, which the
        // rounds after the split answer.
        let carried: Vec<Item> = match working.get(split) {
            Some(Item::User { .. }) | None => Vec::new(),
            Some(_) => working[..split]
                .iter()
                .rev()
                .find(|i| matches!(i, Item::User { .. }))
                .cloned()
                .into_iter()
                .collect(),
        };
        let snapshot = match self
            .summarize(&settings, &working[..split], view.cancel)
            .await
        {
            Ok(snapshot) => snapshot,
            Err(failure) => return Some(failed(failure, edit)),
        };
        let estimate_before = estimate(history);
        let working_tokens = prune.after(estimate_before);
        debug_assert_eq!(working_tokens, estimate(&working));
        let (head, after) =
            match checked_summary(&snapshot, &carried, &working[split..], working_tokens) {
                Ok(ok) => ok,
                Err(status) => return Some(failed((status, None), edit)),
            };
        let auto_read = match &self.fs {
            Some(fs) => {
                let room = working_tokens.saturating_sub(after);
                let budget = (settings.auto_read_budget as u64).min(room / 2) as usize;
                let candidates = reread::candidates(&working, split);
                reread::reread(fs, &candidates, &snapshot, budget).await
            }
            None => Vec::new(),
        };
        let names: Vec<String> = auto_read.iter().map(|(p, _)| p.clone()).collect();
        let reread: Vec<Item> = auto_read.into_iter().map(|(_, item)| item).collect();
        // The checklist the person sees (`update_plan`) survives the summary as it was,
        // not only as the snapshot's prose.
        let plan: Vec<Item> = saki_tools::plan::restatement(&working[..split], &working[split..])
            .into_iter()
            .collect();
        let after = after + estimate(&reread) + estimate(&plan);
        let mut prefix = Vec::from(head);
        prefix.extend(reread);
        prefix.extend(plan);
        prefix.extend(carried);
        edit.summarized = split;
        edit.prefix = prefix;
        // Scale the estimate by how the real count compared with the estimate before.
        let ratio = tokens_before as f64 / estimate_before.max(1) as f64;
        let mut done = new_report(
            CompactionStatus::Compressed,
            ((after as f64) * ratio).round() as u64,
        );
        done.pruned = pruned;
        done.summarized = split;
        done.auto_read = names;
        Some(self.finish(trigger, done, Some(edit)))
    }

    /// After a turn: prunes old tool output whenever that frees more than PRUNE_MINIMUM,
    /// not only once the window is nearly full (the cached prefix is rewritten once, and
    /// every later request is smaller).
    async fn prune_after_turn(&self, view: ContextView<'_>) -> Option<Compaction> {
        let settings = self.settings();
        if !settings.auto || !settings.prune {
            return None;
        }
        let plan = plan_prune(
            view.history,
            last_boundary(view.history),
            settings.prune_limits(),
        )?;
        let trigger = CompactionTrigger::Auto;
        let tokens_before = Self::prompt_tokens(&view);
        let edit = HistoryEdit {
            pruned: prune_replacements(view.history, &plan),
            ..HistoryEdit::default()
        };
        let freed = PruneTokens::of(&plan, &edit.pruned).freed();
        if let Some(reason) = self.pre_compress_blocked(trigger, tokens_before).await {
            let mut blocked = report(
                trigger,
                CompactionStatus::Blocked,
                tokens_before,
                tokens_before,
            );
            blocked.message = Some(reason);
            return Some(self.finish(trigger, blocked, None));
        }
        let mut done = report(
            trigger,
            CompactionStatus::Pruned,
            tokens_before,
            tokens_before.saturating_sub(freed),
        );
        done.pruned = edit.pruned.len();
        Some(self.finish(trigger, done, Some(edit)))
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

    /// Counts failed automatic summaries (a no-op over the line counts too: nothing could
    /// be made smaller); a summary that succeeds, any manual compaction, or a model change
    /// resumes them. A prune says nothing about summaries and leaves the count alone.
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
                        "automatic summaries paused after {n} failed attempts (old tool output is still cleared); compact by hand (`saki compact`, /compress) or change model to resume them"
                    );
                    report.message = Some(match report.message.take() {
                        Some(m) => format!("{m}; {note}"),
                        None => note,
                    });
                }
            }
            CompactionTrigger::Auto if report.status == CompactionStatus::Compressed => {
                self.failures.store(0, Ordering::Relaxed)
            }
            CompactionTrigger::Auto => {}
        }
        Compaction { report, edit }
    }
}

#[async_trait::async_trait]
impl ContextGuard for Compactor {
    async fn check(&self, view: ContextView<'_>, trigger: CompactionTrigger) -> Option<Compaction> {
        self.run(view, trigger).await
    }

    async fn after_turn(&self, view: ContextView<'_>) -> Option<Compaction> {
        self.prune_after_turn(view).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn call(i: usize, arguments: &str) -> Item {
        Item::ToolCall {
            name: "shell".into(),
            arguments: arguments.into(),
            signature: None,
            ctx: ctx(i),
        }
    }

    fn result(i: usize, content: String) -> Item {
        Item::ToolResult {
            name: "shell".into(),
            content,
            status: saki_llm_worker::ToolResultStatus::Success,
            ctx: ctx(i),
        }
    }

    fn ctx(i: usize) -> saki_llm_worker::ToolExecutionContext {
        saki_llm_worker::ToolExecutionContext {
            call_id: format!("c{i}"),
            batch_id: format!("b{i}"),
            call_index: 0,
        }
    }

    /// What [`PruneTokens`] says matches estimating the history with the prune applied.
    fn measured_as_applied(history: &[Item], plan: &PrunePlan) -> PruneTokens {
        let replacements = prune_replacements(history, plan);
        let tokens = PruneTokens::of(plan, &replacements);
        let mut applied = history.to_vec();
        HistoryEdit {
            pruned: replacements.clone(),
            ..HistoryEdit::default()
        }
        .apply(&mut applied)
        .unwrap();
        assert_eq!(&*pruned_history(history, &replacements), &applied[..]);
        let (before, after) = (estimate(history), estimate(&applied));
        assert_eq!(tokens.freed(), before.saturating_sub(after));
        assert_eq!(tokens.after(before), after);
        tokens
    }

    #[test]
    fn a_prune_is_measured_without_applying_it() {
        let mut h = Vec::new();
        for i in 0..8 {
            // Odd lengths and non-ASCII text, where estimates round.
            let content = format!("{}é{}", "out ".repeat(7_001 + i), "ü".repeat(i));
            h.extend([
                Item::user(format!("turn {i}")),
                call(i, &"{\"command\": \"cat x\"}".repeat(i * 5)),
                result(i, content),
                Item::AssistantText { text: "ok".into() },
            ]);
        }
        h.extend([Item::user("last"), Item::user("now")]);
        let plan = plan_prune(&h, 0, PruneLimits::default()).unwrap();
        assert!(plan.indices.len() > 1);
        let tokens = measured_as_applied(&h, &plan);
        assert!(tokens.freed() > 0);

        // Outputs shorter than their replacement: nothing is freed, the history grows.
        let short = vec![
            Item::user("u"),
            call(1, "{}"),
            result(1, "tiny".into()),
            call(2, "{}"),
            result(2, "small".into()),
        ];
        let plan = PrunePlan {
            indices: vec![4, 2],
            tokens_freed: estimate_tokens("tiny") + estimate_tokens("small"),
        };
        let tokens = measured_as_applied(&short, &plan);
        assert_eq!(tokens.freed(), 0);
        assert!(tokens.after(estimate(&short)) > estimate(&short));
        // Nothing to prune: the history itself, not a copy.
        assert!(matches!(pruned_history(&short, &[]), Cow::Borrowed(_)));
    }
}
