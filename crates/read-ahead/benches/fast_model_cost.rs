//! Prints what a session's reading ahead costs with a separate fast model against
//! reusing the main model, per provider and accept rate (`saki_read_ahead::cost`: a
//! token-level model of the session priced with published prices). It computes, it does
//! not time anything.

use saki_read_ahead::cost::{break_even_share, session_cost, Session, PROVIDERS, TYPICAL};

fn main() {
    println!(
        "30-turn session, base prompt {} tokens, {} requests a turn, speculations of {} requests",
        TYPICAL.base, TYPICAL.requests_per_turn, TYPICAL.speculation_requests
    );
    println!(
        "{:<10} {:>7} {:>22} {:>22} {:>9}",
        "provider", "accept", "main model (bg / all)", "fast model (bg / all)", "cheaper"
    );
    for provider in &PROVIDERS {
        for accept_rate in [0.0, 0.4, 0.8] {
            let session = Session {
                accept_rate,
                ..TYPICAL
            };
            let main = session_cost(provider, &session, false);
            let fast = session_cost(provider, &session, true);
            let cheaper = if main.total() <= fast.total() {
                "main"
            } else {
                "fast"
            };
            println!(
                "{:<10} {:>6.0}% {:>10.3} / {:>9.3} {:>10.3} / {:>9.3} {:>9}",
                provider.name,
                accept_rate * 100.0,
                main.background,
                main.total(),
                fast.background,
                fast.total(),
                cheaper
            );
        }
    }
    for provider in &PROVIDERS {
        println!(
            "{}: a fast model is cheaper while its prices are under {:.0}% of the main model's \
             ({} is at {:.0}%)",
            provider.name,
            break_even_share(provider, &TYPICAL) * 100.0,
            provider.fast.0,
            provider.fast.1.input / provider.main.1.input * 100.0
        );
    }
    println!(
        "(USD; main: {}; fast: {})",
        PROVIDERS
            .iter()
            .map(|p| p.main.0)
            .collect::<Vec<_>>()
            .join(", "),
        PROVIDERS
            .iter()
            .map(|p| p.fast.0)
            .collect::<Vec<_>>()
            .join(", ")
    );
}
