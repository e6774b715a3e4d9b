//! saki-read-ahead: reading ahead. Prompt suggestions (prompt, reply parsing, filter),
//! the suggestion state controller, the copy-on-write overlay a speculation writes
//! into, the tool gate that keeps a speculation from touching anything else, forked
//! queries over the cache-safe snapshot, and the speculation loop with accept / abort.

pub mod cost;
pub mod fork;
pub mod gate;
pub mod gated;
mod network;
pub mod overlay;
pub mod pairing;
pub mod speculation;
pub mod state;
pub mod stats;
pub mod suggestion;
pub mod turn_usage;
pub mod view;

pub use fork::{
    generate_suggestion, generate_suggestion_with, suggestion_allowed, CacheSafeParams,
    CacheSafeStore, ForkError, SuggestionPrompt,
};
pub use gate::{
    speculation_tool_server, BoundaryKind, GateDecision, GatedCall, SpeculationTools, ToolGate,
};
pub use overlay::{
    cleanup_stale, default_base, recover_applies, ApplyError, ApplyReport, FileApply, OverlayError,
    OverlayFs, RolledBack, JOURNAL_DIR,
};
pub use pairing::{ensure_tool_result_pairing, PairingError};
pub use speculation::{
    accept, AcceptError, Accepted, NotApplied, Speculation, SpeculationStatus, Speculator,
    MAX_SPECULATION_MESSAGES, MAX_SPECULATION_TURNS,
};
pub use state::{
    Accept, AcceptMethod, Outcome, Phase, SuggestionState, ACCEPT_DEBOUNCE_MS, SUGGESTION_DELAY_MS,
};
pub use stats::{tokens_label, ReadAheadStats};
pub use suggestion::{
    filter_suggestion, parse_suggestion_reply, suggestion_json_schema, suggestion_prompt,
    SuppressReason, SUGGESTION_PROMPT,
};
pub use turn_usage::{TurnUsage, UsageSink};
