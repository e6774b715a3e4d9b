//! What reading ahead costs with a separate `fast_model` against reusing the main model:
//! a token-level model of a session, priced with the providers' published per-token
//! prices, used to choose the default (`cargo bench -p saki-read-ahead --bench
//! fast_model_cost` prints the table; the read-ahead README has the figures and the why).
//!
//! A request's prompt is a list of segments (base prompt, each turn's items, a fork's own
//! items). What a provider bills as cached depends on how it caches:
//! - **explicit** (Anthropic, with saki's breakpoints after the system prompt and on the
//!   two newest messages): cache entries exist exactly at those breakpoints, so a request
//!   reads the longest *entry* that is a prefix of it, and writes the rest;
//! - **automatic** (OpenAI, Gemini): every prefix of an earlier request is cached, so a
//!   request reads the longest prefix it shares with any earlier request on that model.
//!
//! Caches are per model: a fork on another model reads nothing the main model wrote.

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    pub input: f64,
    /// Writing a cache entry (Anthropic charges extra; automatic caches charge `input`).
    pub cache_write: f64,
    pub cache_read: f64,
    pub output: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    Explicit,
    Automatic,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Provider {
    pub name: &'static str,
    pub caching: Caching,
    pub main: (&'static str, Prices),
    pub fast: (&'static str, Prices),
}

const fn prices(input: f64, cache_write: f64, cache_read: f64, output: f64) -> Prices {
    Prices {
        input,
        cache_write,
        cache_read,
        output,
    }
}

/// Published list prices (standard tier, prompts under 200k tokens, 5-minute cache).
pub const PROVIDERS: [Provider; 3] = [
    Provider {
        name: "anthropic",
        caching: Caching::Explicit,
        main: ("claude-sonnet-4-5", prices(3.0, 3.75, 0.30, 15.0)),
        fast: ("claude-haiku-4-5", prices(1.0, 1.25, 0.10, 5.0)),
    },
    Provider {
        name: "openai",
        caching: Caching::Automatic,
        main: ("gpt-5", prices(1.25, 1.25, 0.125, 10.0)),
        fast: ("gpt-5-mini", prices(0.25, 0.25, 0.025, 2.0)),
    },
    Provider {
        name: "gemini",
        caching: Caching::Automatic,
        main: ("gemini-2.5-pro", prices(1.25, 1.25, 0.31, 10.0)),
        fast: ("gemini-2.5-flash", prices(0.30, 0.30, 0.075, 2.50)),
    },
];

/// The shape of a session, in tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Session {
    pub turns: usize,
    /// System prompt and tool schemas (`saki debug prompt-size`: 1,062 today).
    pub base: u64,
    /// Model requests in a typed turn (tool rounds + the answer).
    pub requests_per_turn: usize,
    /// The person's words.
    pub prompt: u64,
    /// What one request adds to history: its output (calls, text) and the tool results.
    pub step_output: u64,
    pub step_results: u64,
    /// Model requests of one speculation.
    pub speculation_requests: usize,
    /// `SUGGESTION_PROMPT` (~150) and a suggestion's reply.
    pub suggestion_prompt: u64,
    pub suggestion_output: u64,
    /// Share of speculations accepted (the accepted one is that turn).
    pub accept_rate: f64,
}

/// A 30-turn coding session: three requests a turn, each adding ~200 tokens of output and
/// ~800 of tool results, speculations of three requests, 40% accepted.
pub const TYPICAL: Session = Session {
    turns: 30,
    base: 1062,
    requests_per_turn: 3,
    prompt: 50,
    step_output: 200,
    step_results: 800,
    speculation_requests: 3,
    suggestion_prompt: 150,
    suggestion_output: 15,
    accept_rate: 0.4,
};

/// The cost of a session in USD: `(main turns, background work)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    pub main: f64,
    pub background: f64,
}

impl Cost {
    pub fn total(&self) -> f64 {
        self.main + self.background
    }
}

/// A prompt: segment ids with their sizes.
type Prompt = Vec<(u32, u64)>;

#[derive(Default)]
struct Cache {
    entries: Vec<Prompt>,
}

impl Cache {
    /// Tokens of `prompt` read from the cache.
    fn hit(&self, prompt: &Prompt, caching: Caching) -> u64 {
        let shared = |e: &Prompt| -> u64 {
            e.iter()
                .zip(prompt)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a.1)
                .sum()
        };
        self.entries
            .iter()
            .map(|e| match caching {
                Caching::Automatic => shared(e),
                // Only a whole entry, at its breakpoint, is read.
                Caching::Explicit if e.len() <= prompt.len() && prompt.starts_with(e) => shared(e),
                Caching::Explicit => 0,
            })
            .max()
            .unwrap_or(0)
    }
}

struct Sim {
    caching: Caching,
    caches: [Cache; 2],
    next_id: u32,
}

impl Sim {
    fn segment(&mut self, tokens: u64) -> (u32, u64) {
        self.next_id += 1;
        (self.next_id, tokens)
    }

    /// Sends `prompt` to model `m` (0 main, 1 fast) at `p`; returns its cost.
    fn send(&mut self, m: usize, p: Prices, prompt: &Prompt, output: u64) -> f64 {
        let len: u64 = prompt.iter().map(|s| s.1).sum();
        let read = self.caches[m].hit(prompt, self.caching);
        let fresh = len - read;
        let write = match self.caching {
            Caching::Explicit => p.cache_write,
            Caching::Automatic => p.input,
        };
        // saki's trailing breakpoints: the newest message and the one before it.
        if self.caching == Caching::Explicit && prompt.len() > 1 {
            self.caches[m]
                .entries
                .push(prompt[..prompt.len() - 1].to_vec());
        }
        self.caches[m].entries.push(prompt.clone());
        (read as f64 * p.cache_read + fresh as f64 * write + output as f64 * p.output) / 1e6
    }
}

/// Prices `session` on `provider`, with background work on the main model or the fast
/// one.
pub fn session_cost(provider: &Provider, session: &Session, fast: bool) -> Cost {
    let mut sim = Sim {
        caching: provider.caching,
        caches: [Cache::default(), Cache::default()],
        next_id: 0,
    };
    let (main_p, fast_p) = (provider.main.1, provider.fast.1);
    let (bg, bg_p) = if fast { (1, fast_p) } else { (0, main_p) };
    let base = sim.segment(session.base);
    // The base prompt's breakpoint (after the system prompt), on both models.
    sim.caches[0].entries.push(vec![base]);
    sim.caches[1].entries.push(vec![base]);
    let mut history: Prompt = vec![base];
    let mut cost = Cost {
        main: 0.0,
        background: 0.0,
    };
    let step = session.step_output + session.step_results;
    let mut accepted_so_far = 0.0;
    let mut speculated: Option<Prompt> = None;
    for turn in 0..session.turns {
        match speculated.take() {
            // The accepted speculation is this turn: no request.
            Some(items) => history.extend(items),
            None => {
                let prompt = sim.segment(session.prompt);
                history.push(prompt);
                for _ in 0..session.requests_per_turn {
                    cost.main += sim.send(0, main_p, &history, session.step_output);
                    let added = sim.segment(step);
                    history.push(added);
                }
            }
        }
        // Suggestion, speculation, pipelined suggestion.
        let instruction = sim.segment(session.suggestion_prompt);
        let mut fork = history.clone();
        fork.push(instruction);
        cost.background += sim.send(bg, bg_p, &fork, session.suggestion_output);
        let mut spec = history.clone();
        let suggestion = sim.segment(10);
        spec.push(suggestion);
        let mut items = vec![suggestion];
        for _ in 0..session.speculation_requests {
            cost.background += sim.send(bg, bg_p, &spec, session.step_output);
            let added = sim.segment(step);
            spec.push(added);
            items.push(added);
        }
        let mut next = spec.clone();
        next.push(sim.segment(session.suggestion_prompt));
        cost.background += sim.send(bg, bg_p, &next, session.suggestion_output);
        // Accept `accept_rate` of the speculations, spread evenly.
        let due = ((turn + 1) as f64 * session.accept_rate).floor();
        if due > accepted_so_far {
            accepted_so_far = due;
            speculated = Some(items);
        }
    }
    cost
}

/// How cheap the fast model must be, as a share of the main model's prices (all four
/// scaled alike), to cost less over `session`: below this share the fast model is
/// cheaper, above it reusing the main model (and its cache) is.
pub fn break_even_share(provider: &Provider, session: &Session) -> f64 {
    let main = session_cost(provider, session, false).total();
    let scaled = |share: f64| {
        let p = provider.main.1;
        let mut q = *provider;
        q.fast.1 = prices(
            p.input * share,
            p.cache_write * share,
            p.cache_read * share,
            p.output * share,
        );
        session_cost(&q, session, true).total()
    };
    let (mut low, mut high) = (0.0, 1.0);
    for _ in 0..40 {
        let mid = (low + high) / 2.0;
        if scaled(mid) < main {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_a_typical_session_the_small_model_is_cheaper_on_every_cloud_provider() {
        for p in &PROVIDERS {
            for accept_rate in [0.0, 0.4, 0.8] {
                let s = Session {
                    accept_rate,
                    ..TYPICAL
                };
                let (main, fast) = (session_cost(p, &s, false), session_cost(p, &s, true));
                assert!(
                    fast.total() < main.total(),
                    "{}: {main:?} vs {fast:?}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn a_fast_model_priced_like_the_main_one_costs_more_for_it_shares_no_cache() {
        for p in &PROVIDERS {
            let share = break_even_share(p, &TYPICAL);
            assert!(share < 1.0 && share > 0.3, "{}: {share}", p.name);
            let fast_share = p.fast.1.input / p.main.1.input;
            assert!(fast_share < share, "{}", p.name);
        }
    }

    #[test]
    fn an_explicit_cache_reads_only_whole_entries() {
        let mut cache = Cache::default();
        cache.entries.push(vec![(1, 100), (2, 50), (3, 10)]);
        let branch = vec![(1, 100), (2, 50), (4, 10)];
        assert_eq!(cache.hit(&branch, Caching::Automatic), 150);
        assert_eq!(cache.hit(&branch, Caching::Explicit), 0);
        let longer = vec![(1, 100), (2, 50), (3, 10), (5, 7)];
        assert_eq!(cache.hit(&longer, Caching::Explicit), 160);
    }
}
