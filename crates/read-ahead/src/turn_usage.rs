//! Which turn's report counts a background request's tokens.
//!
//! A front end reports background tokens with each turn's end (`--json`: `background_usage`
//! on `turn.completed`): what accrued in the session's [`BackgroundUsage`] since its last
//! report. The requests of reading ahead end when they end: a pipelined suggestion runs
//! beside a ready speculation and may end before or after its accept. Counted as they end,
//! which report carried them would depend on which task finished first.
//!
//! So the tokens of reading ahead count toward the turn the work prepares: a suggestion
//! and its speculation prepare the next turn, the pipelined suggestion the one after it.
//! They are held here, and go into the session's usage when that turn starts (the person's
//! prompt, or the accept), before it can end: that turn's report carries them, whenever
//! they ended. A report that comes after its turn started (a request cancelled by that
//! very prompt) counts toward the next turn to start. At the session's end
//! ([`TurnUsage::close`]) whatever is held goes into the session's usage.

use saki_llm_client::{UsageEvent, WireApi};
use saki_llm_worker::{BackgroundBreakdown, BackgroundKind, BackgroundUsage};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The session's background usage, and the reports held for turns not started yet.
#[derive(Debug, Clone, Default)]
pub struct TurnUsage {
    session: BackgroundUsage,
    held: Arc<Mutex<Held>>,
}

#[derive(Debug, Default)]
struct Held {
    /// Turns started so far.
    started: u64,
    /// The session ended: reports go to its usage at once.
    closed: bool,
    reports: Vec<Report>,
}

#[derive(Debug, Clone, Copy)]
struct Report {
    /// The turn (counted from 1) whose start releases it.
    turn: u64,
    kind: BackgroundKind,
    usage: UsageEvent,
    wire: WireApi,
}

impl TurnUsage {
    /// Holds reading ahead's reports for `session`, the usage front ends report from.
    pub fn new(session: BackgroundUsage) -> Self {
        Self {
            session,
            held: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where work that prepares the turn `ahead` turns from now records its tokens: 1 for
    /// the next turn to start, 2 for the one after it.
    pub fn toward(&self, ahead: u64) -> UsageSink {
        let turn = self.lock().started + ahead.max(1);
        UsageSink(Sink::Toward {
            ledger: self.clone(),
            turn,
        })
    }

    /// A turn starts: what was held for it (or for an earlier one) goes into the session's
    /// usage now, before the turn can end and be reported.
    pub fn turn_started(&self) {
        let mut held = self.lock();
        held.started += 1;
        let started = held.started;
        let (due, later) = held.reports.drain(..).partition(|r| r.turn <= started);
        held.reports = later;
        for report in due {
            self.put(report);
        }
    }

    /// The session ends: everything held goes into its usage, and so does any report that
    /// still comes.
    pub fn close(&self) {
        let mut held = self.lock();
        held.closed = true;
        for report in std::mem::take(&mut held.reports) {
            self.put(report);
        }
    }

    /// Everything spent in the background this session, held reports included (`/stats`,
    /// the exit line).
    pub fn session_total(&self) -> BackgroundBreakdown {
        let pending = BackgroundUsage::new();
        for r in &self.lock().reports {
            pending.record(r.kind, &r.usage, r.wire);
        }
        let mut total = self.session.session();
        let pending = pending.session();
        for (sum, part) in [
            (&mut total.suggestion, &pending.suggestion),
            (&mut total.speculation, &pending.speculation),
            (
                &mut total.pipelined_suggestion,
                &pending.pipelined_suggestion,
            ),
            (&mut total.compaction, &pending.compaction),
            (&mut total.rewrite, &pending.rewrite),
        ] {
            sum.add(part);
        }
        total
    }

    fn put(&self, r: Report) {
        self.session.record(r.kind, &r.usage, r.wire);
    }

    fn record(&self, turn: u64, kind: BackgroundKind, usage: &UsageEvent, wire: WireApi) {
        let mut held = self.lock();
        let report = Report {
            // Too late for its own turn's report: the next one carries it.
            turn: turn.max(held.started + 1),
            kind,
            usage: *usage,
            wire,
        };
        if held.closed {
            self.put(report);
        } else {
            held.reports.push(report);
        }
    }
}

/// Where a background request records its tokens: a [`BackgroundUsage`] at once, or held
/// for a turn ([`TurnUsage::toward`]).
#[derive(Debug, Clone)]
pub struct UsageSink(Sink);

#[derive(Debug, Clone)]
enum Sink {
    Now(BackgroundUsage),
    Toward { ledger: TurnUsage, turn: u64 },
}

impl UsageSink {
    /// Records one request's usage report (an empty report still counts the request).
    pub fn record(&self, kind: BackgroundKind, usage: &UsageEvent, wire: WireApi) {
        match &self.0 {
            Sink::Now(session) => session.record(kind, usage, wire),
            Sink::Toward { ledger, turn } => ledger.record(*turn, kind, usage, wire),
        }
    }
}

impl Default for UsageSink {
    /// A usage of its own, counted at once.
    fn default() -> Self {
        Self(Sink::Now(BackgroundUsage::new()))
    }
}

impl From<BackgroundUsage> for UsageSink {
    fn from(usage: BackgroundUsage) -> Self {
        Self(Sink::Now(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64) -> UsageEvent {
        UsageEvent {
            input_tokens: Some(input),
            output_tokens: Some(1),
            ..UsageEvent::default()
        }
    }

    const WIRE: WireApi = WireApi::Chat;

    #[test]
    fn a_report_waits_for_the_turn_it_prepares_whenever_it_arrives() {
        for pipelined_first in [true, false] {
            let session = BackgroundUsage::new();
            let usage = TurnUsage::new(session.clone());
            usage.turn_started();
            // After turn 1: the suggestion and speculation of turn 2, then (the speculation
            // ready) the pipelined suggestion of turn 3.
            let next = usage.toward(1);
            next.record(BackgroundKind::Suggestion, &tokens(10), WIRE);
            next.record(BackgroundKind::Speculation, &tokens(20), WIRE);
            let after = usage.toward(2);
            if pipelined_first {
                after.record(BackgroundKind::PipelinedSuggestion, &tokens(40), WIRE);
            }
            assert!(
                session.take().is_empty(),
                "turn 1's report carries none of it"
            );
            usage.turn_started();
            if !pipelined_first {
                after.record(BackgroundKind::PipelinedSuggestion, &tokens(40), WIRE);
            }
            let second = session.take();
            assert_eq!(second.total().input_tokens, 30, "{pipelined_first}");
            assert_eq!(second.pipelined_suggestion.requests, 0, "{pipelined_first}");
            usage.turn_started();
            let third = session.take();
            assert_eq!(
                third.pipelined_suggestion.input_tokens, 40,
                "{pipelined_first}"
            );
            assert_eq!(third.total().requests, 1, "{pipelined_first}");
        }
    }

    #[test]
    fn a_late_report_counts_toward_the_next_turn_and_nothing_is_lost() {
        let session = BackgroundUsage::new();
        let usage = TurnUsage::new(session.clone());
        let next = usage.toward(1);
        usage.turn_started();
        // Cancelled by the prompt that started turn 1, it ends after that.
        next.record(BackgroundKind::Speculation, &tokens(5), WIRE);
        assert!(session.take().is_empty());
        assert_eq!(
            usage.session_total().speculation.input_tokens,
            5,
            "held counts"
        );
        usage.turn_started();
        assert_eq!(session.take().speculation.input_tokens, 5);
        usage
            .toward(1)
            .record(BackgroundKind::Suggestion, &tokens(7), WIRE);
        usage.close();
        assert_eq!(
            session.take().suggestion.input_tokens,
            7,
            "released at the end"
        );
        usage
            .toward(1)
            .record(BackgroundKind::Suggestion, &tokens(9), WIRE);
        assert_eq!(
            session.take().suggestion.input_tokens,
            9,
            "at once once closed"
        );
        assert_eq!(usage.session_total().total().input_tokens, 21);
    }
}
