//! The messages between the UI and the engine live in saki-engine (every front end
//! speaks them); re-exported here so the UI's code names them where it always did.

pub use saki_engine::protocol::*;
