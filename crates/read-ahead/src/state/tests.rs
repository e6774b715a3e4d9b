use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn visible(state: &mut SuggestionState, text: &str, t0: Instant) {
    state.offer(text, t0).unwrap();
    assert!(state.tick(t0 + ms(SUGGESTION_DELAY_MS)));
}

#[test]
fn offer_waits_for_the_delay() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    assert_eq!(s.phase(), &Phase::Hidden);
    s.offer("  run the tests ", t0).unwrap();
    assert_eq!(
        s.phase(),
        &Phase::Pending {
            text: "run the tests".into(),
            show_at: t0 + ms(300)
        }
    );
    assert_eq!(s.deadline(), Some(t0 + ms(300)));
    assert_eq!(s.visible_text(), None);
    assert!(!s.tick(t0 + ms(299)));
    assert!(s.tick(t0 + ms(300)));
    assert_eq!(s.visible_text(), Some("run the tests"));
    assert_eq!(s.deadline(), None);
    assert!(!s.tick(t0 + ms(400)), "already visible");
}

#[test]
fn suppressed_suggestions_are_reported_and_not_shown() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    assert_eq!(s.offer("thanks", t0), Err(SuppressReason::TooFewWords));
    assert_eq!(s.offer("", t0), Err(SuppressReason::Empty));
    assert_eq!(s.phase(), &Phase::Hidden);
    assert!(!s.tick(t0 + ms(1000)));
    assert_eq!(
        s.take_outcomes(),
        [
            Outcome::Suppressed {
                reason: SuppressReason::TooFewWords
            },
            Outcome::Suppressed {
                reason: SuppressReason::Empty
            }
        ]
    );
    assert!(s.take_outcomes().is_empty());
}

#[test]
fn accept_a_visible_suggestion() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    visible(&mut s, "commit this", t0);
    let at = t0 + ms(SUGGESTION_DELAY_MS + 1200);
    assert_eq!(
        s.accept(AcceptMethod::Tab, at),
        Accept::Accepted("commit this".into())
    );
    assert_eq!(s.phase(), &Phase::Hidden);
    assert_eq!(
        s.take_outcomes(),
        [Outcome::Accepted {
            method: AcceptMethod::Tab,
            time_ms: 1200,
            suggestion_length: 11
        }]
    );
}

#[test]
fn accept_while_pending_cancels() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    s.offer("run the tests", t0).unwrap();
    assert_eq!(
        s.accept(AcceptMethod::Tab, t0 + ms(100)),
        Accept::CancelledPending
    );
    assert_eq!(s.phase(), &Phase::Hidden);
    assert!(!s.tick(t0 + ms(1000)), "the cancelled one never shows");
    assert!(s.take_outcomes().is_empty(), "never shown, no outcome");
    // Cancelling is not an accept: the next one is not debounced.
    visible(&mut s, "push it", t0 + ms(110));
    assert_eq!(
        s.accept(AcceptMethod::Enter, t0 + ms(500)),
        Accept::Accepted("push it".into())
    );
}

#[test]
fn accept_with_nothing_to_accept() {
    let mut s = SuggestionState::new();
    assert_eq!(s.accept(AcceptMethod::Tab, Instant::now()), Accept::Nothing);
    assert!(s.take_outcomes().is_empty());
}

#[test]
fn accepts_are_debounced() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    visible(&mut s, "commit this", t0);
    let t1 = t0 + ms(1000);
    assert!(matches!(
        s.accept(AcceptMethod::Tab, t1),
        Accept::Accepted(_)
    ));
    // The pipelined suggestion appears at once; a double Tab must not take it.
    s.offer_now("push it", t1).unwrap();
    assert_eq!(s.visible_text(), Some("push it"));
    assert_eq!(s.accept(AcceptMethod::Tab, t1 + ms(99)), Accept::Debounced);
    assert_eq!(
        s.visible_text(),
        Some("push it"),
        "a debounced accept changes nothing"
    );
    assert_eq!(
        s.accept(AcceptMethod::Tab, t1 + ms(ACCEPT_DEBOUNCE_MS)),
        Accept::Accepted("push it".into())
    );
}

#[test]
fn clear_releases_the_debounce_lock() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    s.offer_now("commit this", t0).unwrap();
    assert!(matches!(
        s.accept(AcceptMethod::Tab, t0),
        Accept::Accepted(_)
    ));
    s.clear();
    s.offer_now("push it", t0).unwrap();
    assert!(matches!(
        s.accept(AcceptMethod::Tab, t0 + ms(1)),
        Accept::Accepted(_)
    ));
}

#[test]
fn dismiss_visible_is_ignored_pending_is_silent() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    visible(&mut s, "run the tests", t0);
    s.dismiss(t0 + ms(SUGGESTION_DELAY_MS + 50));
    assert_eq!(s.phase(), &Phase::Hidden);
    assert_eq!(
        s.take_outcomes(),
        [Outcome::Ignored {
            time_ms: 50,
            suggestion_length: 13
        }]
    );
    s.offer("run the tests", t0).unwrap();
    s.dismiss(t0 + ms(10));
    assert_eq!(s.phase(), &Phase::Hidden);
    assert!(s.take_outcomes().is_empty());
    s.dismiss(t0 + ms(20));
    assert!(
        s.take_outcomes().is_empty(),
        "dismissing nothing is a no-op"
    );
}

#[test]
fn clear_reports_nothing() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    visible(&mut s, "run the tests", t0);
    s.clear();
    assert_eq!(s.phase(), &Phase::Hidden);
    assert!(s.take_outcomes().is_empty());
}

#[test]
fn a_new_offer_replaces_the_old_one() {
    let t0 = Instant::now();
    let mut s = SuggestionState::new();
    visible(&mut s, "run the tests", t0);
    s.offer("commit this", t0 + ms(400)).unwrap();
    assert_eq!(s.deadline(), Some(t0 + ms(700)));
    assert_eq!(
        s.take_outcomes(),
        [Outcome::Ignored {
            time_ms: 100,
            suggestion_length: 13
        }]
    );
    // Pending replaced by pending: the delay restarts, no outcome.
    s.offer("push it", t0 + ms(500)).unwrap();
    assert!(!s.tick(t0 + ms(700)));
    assert!(s.tick(t0 + ms(800)));
    assert_eq!(s.visible_text(), Some("push it"));
    assert!(s.take_outcomes().is_empty());
    // A rejected offer still hides what was showing.
    assert!(s.offer("thanks", t0 + ms(900)).is_err());
    assert_eq!(s.phase(), &Phase::Hidden);
    assert_eq!(s.take_outcomes().len(), 2);
}

#[test]
fn outcomes_serialize_for_telemetry() {
    let accepted = Outcome::Accepted {
        method: AcceptMethod::Right,
        time_ms: 5,
        suggestion_length: 7,
    };
    assert_eq!(
        serde_json::to_value(&accepted).unwrap(),
        serde_json::json!({"outcome": "accepted", "method": "right", "time_ms": 5, "suggestion_length": 7})
    );
    let suppressed = Outcome::Suppressed {
        reason: SuppressReason::AiVoice,
    };
    assert_eq!(
        serde_json::to_value(&suppressed).unwrap(),
        serde_json::json!({"outcome": "suppressed", "reason": "ai_voice"})
    );
}
