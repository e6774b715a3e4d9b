//! What the UI does beside the conversation, with what the front end hands it: `/export`
//! and `/shells` (answered by functions the front end sets, which know the session store
//! and the shell runtime), the session's cost on the status line and in `/stats`, the
//! desktop notification when a turn ends or an approval waits while the terminal is not
//! in focus, and Ctrl+G (the prompt in `$VISUAL` / `$EDITOR`; the terminal loop runs it).

use crate::protocol::EngineEvent;
use saki_engine::pricing::{usd_label, PriceTable};
use saki_engine::WireApi;
use saki_engine::{BackgroundUsage, TokenCount, WorkerEvent};
use std::sync::Arc;

pub use crate::notify::{Notifier, Notify, NotifyMode};

/// `/export [md|html|json] [FILE]`: `(session id, arguments)` to a line for the person.
pub type Exporter = Arc<dyn Fn(&str, &str) -> Result<String, String> + Send + Sync>;
/// `/shells`: the background commands, as lines for the person.
pub type ShellLister = Arc<dyn Fn() -> String + Send + Sync>;

/// Prices the session as it runs: the main requests' tokens as they are reported, and
/// reading ahead's from the session's [`BackgroundUsage`].
pub struct CostMeter {
    table: PriceTable,
    wire: WireApi,
    background: BackgroundUsage,
    main: TokenCount,
}

impl CostMeter {
    pub fn new(table: PriceTable, wire: WireApi, background: BackgroundUsage) -> Self {
        Self {
            table,
            wire,
            background,
            main: TokenCount::default(),
        }
    }

    fn observe(&mut self, event: &EngineEvent) {
        if let EngineEvent::Worker(WorkerEvent::Usage(usage)) = event {
            self.main.add_report(usage, self.wire);
        }
    }

    /// The session's cost so far, when every model it used has a price.
    pub fn cost(&self) -> Option<f64> {
        self.table
            .session_cost(&self.main, &self.background.session())
    }

    pub fn label(&self) -> Option<String> {
        self.cost().map(usd_label)
    }
}

/// The extras of one UI; each is off until the front end sets it.
#[derive(Default)]
pub struct Extras {
    pub exporter: Option<Exporter>,
    pub shells: Option<ShellLister>,
    pub cost: Option<CostMeter>,
    pub notify: Notify,
    /// Ctrl+G was pressed: the terminal loop opens the editor.
    pub edit_requested: bool,
}

impl Extras {
    /// Sees every engine event (costs, notifications).
    pub fn observe(&mut self, event: &EngineEvent) {
        if let Some(meter) = self.cost.as_mut() {
            meter.observe(event);
        }
        self.notify.observe(event);
    }

    /// Answers `/export` and `/shells`; `None` for any other line.
    pub fn slash(&self, line: &str, session_id: Option<&str>) -> Option<Result<String, String>> {
        let line = line.trim();
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match name {
            "/export" => Some(match (&self.exporter, session_id) {
                (None, _) => Err("export is not available here".to_owned()),
                (Some(_), None) => {
                    Err("nothing to export yet: the session starts with its first prompt".into())
                }
                (Some(export), Some(id)) => export(id, args.trim()),
            }),
            "/shells" => Some(match &self.shells {
                None => Err("background commands are not available here".to_owned()),
                Some(list) => Ok(list()),
            }),
            _ => None,
        }
    }

    /// `/stats`' cost line, when prices are known.
    pub fn cost_line(&self) -> Option<String> {
        Some(format!("session cost: {}", self.cost.as_ref()?.label()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saki_engine::pricing::Pricing;
    use saki_engine::UsageEvent;

    #[test]
    fn slash_commands_reach_the_front_ends_functions() {
        let mut extras = Extras::default();
        assert!(extras.slash("/help", Some("s")).is_none());
        assert!(extras.slash("/export", Some("s")).unwrap().is_err());
        extras.exporter = Some(Arc::new(|id: &str, args: &str| Ok(format!("{id}:{args}"))));
        assert_eq!(
            extras.slash("/export html out.html", Some("s1")),
            Some(Ok("s1:html out.html".to_owned()))
        );
        assert!(extras.slash("/export", None).unwrap().is_err());
        extras.shells = Some(Arc::new(|| "bg1 running".to_owned()));
        assert_eq!(
            extras.slash("/shells", None),
            Some(Ok("bg1 running".to_owned()))
        );
    }

    #[test]
    fn the_meter_adds_the_main_requests_as_they_are_reported() {
        let mut table = PriceTable {
            main_model: "m".into(),
            fast_model: "m".into(),
            compaction_model: "m".into(),
            ..PriceTable::default()
        };
        table.prices.insert(
            "m".into(),
            Pricing {
                input: 1.0,
                output: 2.0,
                cache_read: None,
                cache_write: None,
            },
        );
        let mut extras = Extras {
            cost: Some(CostMeter::new(table, WireApi::Chat, BackgroundUsage::new())),
            ..Extras::default()
        };
        assert_eq!(extras.cost_line().as_deref(), Some("session cost: $0.00"));
        let usage = UsageEvent {
            input_tokens: Some(1_000_000),
            output_tokens: Some(500_000),
            ..UsageEvent::default()
        };
        extras.observe(&EngineEvent::Worker(WorkerEvent::Usage(usage)));
        assert_eq!(extras.cost_line().as_deref(), Some("session cost: $2.00"));
    }
}
