//! Built-in handlers that collect a response: text, thinking, tool calls and usage.
//! Each is `Clone` (shared state behind an `Arc<Mutex<_>>`) so the caller keeps a
//! handle while the Timeline owns the registered copy. Each item keeps its block
//! index, which is the order the blocks arrived in.

use super::event::UsageEvent;
use crate::handler::*;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
pub struct TextCollectorState {
    buffer: String,
}

/// Collects finished text blocks (and tool-result blocks routed as text).
#[derive(Debug, Clone, Default)]
pub struct TextBlockCollector {
    collected: Arc<Mutex<Vec<(usize, String)>>>,
}

impl TextBlockCollector {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn take_collected(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.collected))
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    pub fn take_indexed(&self) -> Vec<(usize, String)> {
        std::mem::take(&mut *lock(&self.collected))
    }

    pub fn collected(&self) -> Vec<String> {
        lock(&self.collected)
            .iter()
            .map(|(_, t)| t.clone())
            .collect()
    }

    pub fn has_content(&self) -> bool {
        lock(&self.collected).iter().any(|(_, t)| !t.is_empty())
    }

    pub fn clear(&self) {
        lock(&self.collected).clear();
    }
}

impl Handler<TextBlockKind> for TextBlockCollector {
    type Scope = TextCollectorState;

    fn on_event(&mut self, scope: &mut TextCollectorState, event: &TextBlockEvent) {
        match event {
            TextBlockEvent::Start(_) => scope.buffer.clear(),
            TextBlockEvent::Delta(s) => scope.buffer.push_str(s),
            TextBlockEvent::Stop(stop) => {
                lock(&self.collected).push((stop.index, std::mem::take(&mut scope.buffer)));
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct ThinkingCollectorState {
    buffer: String,
    signature: Option<String>,
}

/// A finished thinking block: its text and the provider's signature, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thinking {
    pub index: usize,
    pub text: String,
    pub signature: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ThinkingBlockCollector {
    collected: Arc<Mutex<Vec<Thinking>>>,
}

impl ThinkingBlockCollector {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn take_collected(&self) -> Vec<Thinking> {
        std::mem::take(&mut *lock(&self.collected))
    }

    pub fn collected(&self) -> Vec<Thinking> {
        lock(&self.collected).clone()
    }

    pub fn clear(&self) {
        lock(&self.collected).clear();
    }
}

impl Handler<ThinkingBlockKind> for ThinkingBlockCollector {
    type Scope = ThinkingCollectorState;

    fn on_event(&mut self, scope: &mut ThinkingCollectorState, event: &ThinkingBlockEvent) {
        match event {
            ThinkingBlockEvent::Start(_) => *scope = ThinkingCollectorState::default(),
            ThinkingBlockEvent::Delta(s) => scope.buffer.push_str(s),
            ThinkingBlockEvent::Signature(s) => {
                scope.signature.get_or_insert_with(String::new).push_str(s);
            }
            ThinkingBlockEvent::Stop(stop) => lock(&self.collected).push(Thinking {
                index: stop.index,
                text: std::mem::take(&mut scope.buffer),
                signature: scope.signature.take(),
            }),
        }
    }
}

/// A completed tool call as the model produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub index: usize,
    pub id: String,
    pub name: String,
    /// The raw arguments JSON (`{}` when the model sent none). May be invalid.
    pub arguments: String,
    pub signature: Option<String>,
}

impl ToolCall {
    /// Parses the arguments; an error here becomes an error result the model sees.
    pub fn input(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.arguments)
    }
}

#[derive(Debug, Default)]
pub struct ToolCollectorState {
    current_id: String,
    current_name: String,
    input_json_buffer: String,
    signature: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ToolCallCollector {
    collected: Arc<Mutex<Vec<ToolCall>>>,
}

impl ToolCallCollector {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn take_collected(&self) -> Vec<ToolCall> {
        std::mem::take(&mut *lock(&self.collected))
    }

    pub fn collected(&self) -> Vec<ToolCall> {
        lock(&self.collected).clone()
    }

    pub fn has_pending_calls(&self) -> bool {
        !lock(&self.collected).is_empty()
    }

    pub fn clear(&self) {
        lock(&self.collected).clear();
    }
}

impl Handler<ToolUseBlockKind> for ToolCallCollector {
    type Scope = ToolCollectorState;

    fn on_event(&mut self, scope: &mut ToolCollectorState, event: &ToolUseBlockEvent) {
        match event {
            ToolUseBlockEvent::Start(start) => {
                *scope = ToolCollectorState {
                    current_id: start.id.clone(),
                    current_name: start.name.clone(),
                    ..Default::default()
                };
            }
            ToolUseBlockEvent::InputJsonDelta(j) => scope.input_json_buffer.push_str(j),
            ToolUseBlockEvent::Signature(s) => {
                scope.signature.get_or_insert_with(String::new).push_str(s);
            }
            ToolUseBlockEvent::Stop(stop) => {
                let raw = std::mem::take(&mut scope.input_json_buffer);
                let arguments = if raw.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    raw
                };
                // Stop repeats id/name, which matters when the block started implicitly.
                let id = if stop.id.is_empty() {
                    std::mem::take(&mut scope.current_id)
                } else {
                    stop.id.clone()
                };
                let id = if id.is_empty() {
                    saki_llm_client::generate_call_id()
                } else {
                    id
                };
                let name = if stop.name.is_empty() {
                    std::mem::take(&mut scope.current_name)
                } else {
                    stop.name.clone()
                };
                lock(&self.collected).push(ToolCall {
                    index: stop.index,
                    id,
                    name,
                    arguments,
                    signature: scope.signature.take(),
                });
            }
        }
    }
}

/// Merges every usage report of a request (later fields win).
#[derive(Debug, Clone, Default)]
pub struct UsageCollector {
    merged: Arc<Mutex<UsageEvent>>,
}

impl UsageCollector {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn usage(&self) -> UsageEvent {
        *lock(&self.merged)
    }

    pub fn take(&self) -> UsageEvent {
        std::mem::take(&mut *lock(&self.merged))
    }
}

impl Handler<UsageKind> for UsageCollector {
    type Scope = ();

    fn on_event(&mut self, _scope: &mut (), event: &UsageEvent) {
        lock(&self.merged).merge(event);
    }
}
