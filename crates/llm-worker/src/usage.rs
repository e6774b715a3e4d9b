//! Usage summed over the requests of one turn.

use super::{TurnOutcome, TurnStatus};
use saki_llm_client::UsageEvent;

#[derive(Default)]
pub(super) struct Usage(UsageEvent);

impl Usage {
    pub(super) fn add(&mut self, u: &UsageEvent) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        }
        sum(&mut self.0.input_tokens, u.input_tokens);
        sum(&mut self.0.output_tokens, u.output_tokens);
        sum(&mut self.0.total_tokens, u.total_tokens);
        sum(
            &mut self.0.cache_read_input_tokens,
            u.cache_read_input_tokens,
        );
        sum(
            &mut self.0.cache_creation_input_tokens,
            u.cache_creation_input_tokens,
        );
    }

    pub(super) fn outcome(&self, status: TurnStatus, requests: usize) -> TurnOutcome {
        TurnOutcome {
            status,
            usage: self.0,
            requests,
        }
    }
}
