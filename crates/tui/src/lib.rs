//! saki-tui: the interactive terminal UI. It renders what the engine reports and turns
//! keys into actions; it holds no agent logic (see README.md).

pub mod app;
/// Slash commands are the engine's: one parser and one list for every front end.
pub use saki_engine::slash as commands;
pub mod diff;
mod editor;
pub mod extras;
pub mod finder;
pub mod input;
pub mod markdown;
pub mod notify;
mod paste;
mod plan_view;
pub mod protocol;
pub mod terminal;
pub mod theme;
pub mod tool_row;
pub mod transcript;
pub mod untrusted;
mod view;
pub mod wrap;

pub use app::App;
pub use protocol::{Action, ApprovalRequest, EngineEvent, Level, SessionEntry, SpecState, Status};
pub use theme::Theme;
