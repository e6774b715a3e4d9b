//! The suggestion state controller: when a suggestion is shown, accepted or dropped.
//!
//! A pure state machine with the clock passed in, so a TUI (driving it from its event
//! loop and a timer at [`SuggestionState::deadline`]) and the headless driver use the
//! same code, and tests need no sleeping.
//!
//! ```text
//! Hidden --offer(ok)--> Pending --tick(now >= show_at)--> Visible
//!    ^                     |                                 |
//!    +---- accept (cancels) / dismiss / clear -------------+ accept / dismiss / clear
//! ```
//!
//! Outcomes (accepted, ignored, suppressed) are queued for telemetry and drained with
//! [`SuggestionState::take_outcomes`]. A suggestion that was never shown has no
//! accepted/ignored outcome: nobody saw it.

use crate::suggestion::{filter_suggestion, SuppressReason};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How long a suggestion waits before it is shown, so it does not flash up while the
/// person is still reading the answer.
pub const SUGGESTION_DELAY_MS: u64 = 300;
/// After an accept, further accepts are ignored this long: a double Tab must not
/// also accept the (instantly shown) pipelined suggestion.
pub const ACCEPT_DEBOUNCE_MS: u64 = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Hidden,
    /// Filtered and waiting for its delay to pass.
    Pending {
        text: String,
        show_at: Instant,
    },
    Visible {
        text: String,
        shown_at: Instant,
    },
}

/// The key that accepted a suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcceptMethod {
    Tab,
    Enter,
    Right,
}

/// Telemetry for one suggestion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Accepted {
        method: AcceptMethod,
        /// From being shown to being accepted.
        time_ms: u64,
        suggestion_length: usize,
    },
    /// Shown, then dismissed, cleared by a new suggestion or typed over.
    Ignored {
        time_ms: u64,
        suggestion_length: usize,
    },
    /// The filter rejected it; never shown.
    Suppressed { reason: SuppressReason },
}

/// What an accept did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accept {
    /// Submit this text.
    Accepted(String),
    /// The suggestion was still pending: it is cancelled and nothing is accepted.
    CancelledPending,
    /// Within [`ACCEPT_DEBOUNCE_MS`] of the previous accept: nothing changed.
    Debounced,
    /// There was nothing to accept.
    Nothing,
}

#[derive(Debug, Clone)]
pub struct SuggestionState {
    phase: Phase,
    last_accept: Option<Instant>,
    outcomes: Vec<Outcome>,
}

impl Default for SuggestionState {
    fn default() -> Self {
        Self::new()
    }
}

impl SuggestionState {
    pub fn new() -> Self {
        Self {
            phase: Phase::Hidden,
            last_accept: None,
            outcomes: Vec::new(),
        }
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The text to render, if a suggestion is visible.
    pub fn visible_text(&self) -> Option<&str> {
        match &self.phase {
            Phase::Visible { text, .. } => Some(text),
            _ => None,
        }
    }

    /// When [`tick`](Self::tick) should next be called, if anything is scheduled.
    pub fn deadline(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Pending { show_at, .. } => Some(*show_at),
            _ => None,
        }
    }

    /// Offers a model's suggestion: it is filtered, and if it passes it becomes
    /// visible [`SUGGESTION_DELAY_MS`] from `now`. A suggestion already showing is
    /// replaced (and counts as ignored); one still pending is dropped silently.
    /// Returns the suppress reason when the filter rejects it.
    pub fn offer(&mut self, text: &str, now: Instant) -> Result<(), SuppressReason> {
        self.hide(now);
        match filter_suggestion(text) {
            Ok(text) => {
                let show_at = now + Duration::from_millis(SUGGESTION_DELAY_MS);
                self.phase = Phase::Pending { text, show_at };
                Ok(())
            }
            Err(reason) => {
                tracing::debug!(reason = reason.as_str(), "suggestion suppressed");
                self.outcomes.push(Outcome::Suppressed { reason });
                Err(reason)
            }
        }
    }

    /// Like [`offer`](Self::offer), but visible at once: for the pipelined suggestion
    /// that follows an accepted speculation, which should simply be there.
    pub fn offer_now(&mut self, text: &str, now: Instant) -> Result<(), SuppressReason> {
        self.offer(text, now)?;
        if let Phase::Pending { text, .. } = &mut self.phase {
            let text = std::mem::take(text);
            self.phase = Phase::Visible {
                text,
                shown_at: now,
            };
        }
        Ok(())
    }

    /// Shows a pending suggestion whose delay has passed. Returns true when it
    /// became visible (the front end redraws).
    pub fn tick(&mut self, now: Instant) -> bool {
        match &mut self.phase {
            Phase::Pending { text, show_at } if now >= *show_at => {
                let text = std::mem::take(text);
                self.phase = Phase::Visible {
                    text,
                    shown_at: now,
                };
                true
            }
            _ => false,
        }
    }

    /// The person pressed an accept key. Only a visible suggestion can be accepted:
    /// call [`tick`](Self::tick) first so one whose delay has passed is visible.
    pub fn accept(&mut self, method: AcceptMethod, now: Instant) -> Accept {
        if self
            .last_accept
            .is_some_and(|at| now.saturating_duration_since(at) < accept_debounce())
        {
            return Accept::Debounced;
        }
        match std::mem::replace(&mut self.phase, Phase::Hidden) {
            Phase::Hidden => Accept::Nothing,
            Phase::Pending { .. } => Accept::CancelledPending,
            Phase::Visible { text, shown_at } => {
                self.last_accept = Some(now);
                self.outcomes.push(Outcome::Accepted {
                    method,
                    time_ms: millis_between(shown_at, now),
                    suggestion_length: text.chars().count(),
                });
                Accept::Accepted(text)
            }
        }
    }

    /// The person typed or pressed Escape: a visible suggestion counts as ignored, a
    /// pending one is dropped.
    pub fn dismiss(&mut self, now: Instant) {
        self.hide(now);
    }

    /// Hard reset (new session, feature switched off): no outcome, no debounce.
    pub fn clear(&mut self) {
        self.phase = Phase::Hidden;
        self.last_accept = None;
    }

    /// Outcomes since the last call, oldest first.
    pub fn take_outcomes(&mut self) -> Vec<Outcome> {
        std::mem::take(&mut self.outcomes)
    }

    fn hide(&mut self, now: Instant) {
        if let Phase::Visible { text, shown_at } = std::mem::replace(&mut self.phase, Phase::Hidden)
        {
            self.outcomes.push(Outcome::Ignored {
                time_ms: millis_between(shown_at, now),
                suggestion_length: text.chars().count(),
            });
        }
    }
}

fn accept_debounce() -> Duration {
    Duration::from_millis(ACCEPT_DEBOUNCE_MS)
}

fn millis_between(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
