//! Timeline body, type-erased handler wrappers, and the block dispatch rules:
//! - meta events go straight to their handlers, in registration order;
//! - `BlockStart` opens a scope in every handler of that block type, `BlockStop` /
//!   `BlockAbort` dispatch and then drop it;
//! - a delta with no open block starts the block (and the scopes) implicitly;
//! - `ToolResult` blocks are routed to the text handlers.

use super::event::{
    BlockAbort, BlockDelta, BlockMetadata, BlockStart, BlockStop, BlockType, DeltaContent, Event,
};
use crate::handler::*;
use std::marker::PhantomData;

pub trait ErasedHandler<K: Kind>: Send + Sync {
    fn dispatch(&mut self, event: &K::Event);
    fn start_scope(&mut self);
    fn end_scope(&mut self);
}

pub struct HandlerWrapper<H, K>
where
    H: Handler<K>,
    K: Kind,
{
    handler: H,
    scope: Option<H::Scope>,
    _kind: PhantomData<fn() -> K>,
}

impl<H: Handler<K>, K: Kind> HandlerWrapper<H, K> {
    pub fn new(handler: H) -> Self {
        Self {
            handler,
            scope: None,
            _kind: PhantomData,
        }
    }
}

impl<H, K> ErasedHandler<K> for HandlerWrapper<H, K>
where
    H: Handler<K> + Send + Sync,
    H::Scope: Send + Sync,
    K: Kind,
{
    fn dispatch(&mut self, event: &K::Event) {
        let scope = self.scope.get_or_insert_with(Default::default);
        self.handler.on_event(scope, event);
    }

    fn start_scope(&mut self) {
        self.scope = Some(H::Scope::default());
    }

    fn end_scope(&mut self) {
        self.scope = None;
    }
}

pub trait ErasedBlockHandler: Send + Sync {
    fn dispatch_start(&mut self, start: &BlockStart);
    fn dispatch_delta(&mut self, delta: &BlockDelta);
    fn dispatch_stop(&mut self, stop: &BlockStop);
    fn dispatch_abort(&mut self, abort: &BlockAbort);
    fn start_scope(&mut self);
    fn end_scope(&mut self);
    fn has_scope(&self) -> bool;
}

/// Generates a block wrapper: scope bookkeeping is shared, the event mapping differs.
macro_rules! block_wrapper {
    ($name:ident, $kind:ty, $($extra:ident : $ty:ty),*) => {
        pub(crate) struct $name<H: Handler<$kind>> {
            handler: H,
            scope: Option<H::Scope>,
            $($extra: $ty,)*
        }

        impl<H: Handler<$kind>> $name<H> {
            pub(crate) fn new(handler: H) -> Self {
                Self { handler, scope: None, $($extra: Default::default(),)* }
            }

            fn emit(&mut self, event: <$kind as Kind>::Event) {
                let scope = self.scope.get_or_insert_with(Default::default);
                self.handler.on_event(scope, &event);
            }
        }
    };
}

block_wrapper!(TextBlockHandlerWrapper, TextBlockKind,);
block_wrapper!(ThinkingBlockHandlerWrapper, ThinkingBlockKind,);
block_wrapper!(ToolUseBlockHandlerWrapper, ToolUseBlockKind, id: String, name: String);

macro_rules! scope_methods {
    () => {
        fn start_scope(&mut self) {
            self.scope = Some(Default::default());
        }
        fn end_scope(&mut self) {
            self.scope = None;
        }
        fn has_scope(&self) -> bool {
            self.scope.is_some()
        }
    };
}

impl<H> ErasedBlockHandler for TextBlockHandlerWrapper<H>
where
    H: Handler<TextBlockKind> + Send + Sync,
    H::Scope: Send + Sync,
{
    fn dispatch_start(&mut self, start: &BlockStart) {
        self.emit(TextBlockEvent::Start(TextBlockStart { index: start.index }));
    }
    fn dispatch_delta(&mut self, delta: &BlockDelta) {
        if let DeltaContent::Text(text) = &delta.delta {
            self.emit(TextBlockEvent::Delta(text.clone()));
        }
    }
    fn dispatch_stop(&mut self, stop: &BlockStop) {
        self.emit(TextBlockEvent::Stop(TextBlockStop {
            index: stop.index,
            stop_reason: stop.stop_reason,
        }));
    }
    fn dispatch_abort(&mut self, _abort: &BlockAbort) {}
    scope_methods!();
}

impl<H> ErasedBlockHandler for ThinkingBlockHandlerWrapper<H>
where
    H: Handler<ThinkingBlockKind> + Send + Sync,
    H::Scope: Send + Sync,
{
    fn dispatch_start(&mut self, start: &BlockStart) {
        self.emit(ThinkingBlockEvent::Start(ThinkingBlockStart {
            index: start.index,
        }));
    }
    fn dispatch_delta(&mut self, delta: &BlockDelta) {
        match &delta.delta {
            DeltaContent::Thinking(t) => self.emit(ThinkingBlockEvent::Delta(t.clone())),
            DeltaContent::Signature(s) => self.emit(ThinkingBlockEvent::Signature(s.clone())),
            _ => {}
        }
    }
    fn dispatch_stop(&mut self, stop: &BlockStop) {
        self.emit(ThinkingBlockEvent::Stop(ThinkingBlockStop {
            index: stop.index,
        }));
    }
    fn dispatch_abort(&mut self, _abort: &BlockAbort) {}
    scope_methods!();
}

impl<H> ErasedBlockHandler for ToolUseBlockHandlerWrapper<H>
where
    H: Handler<ToolUseBlockKind> + Send + Sync,
    H::Scope: Send + Sync,
{
    fn dispatch_start(&mut self, start: &BlockStart) {
        let (id, name) = match &start.metadata {
            BlockMetadata::ToolUse { id, name } => (id.clone(), name.clone()),
            _ => (String::new(), String::new()),
        };
        self.id.clone_from(&id);
        self.name.clone_from(&name);
        self.emit(ToolUseBlockEvent::Start(ToolUseBlockStart {
            index: start.index,
            id,
            name,
        }));
    }
    fn dispatch_delta(&mut self, delta: &BlockDelta) {
        match &delta.delta {
            DeltaContent::InputJson(j) => self.emit(ToolUseBlockEvent::InputJsonDelta(j.clone())),
            DeltaContent::Signature(s) => self.emit(ToolUseBlockEvent::Signature(s.clone())),
            _ => {}
        }
    }
    fn dispatch_stop(&mut self, stop: &BlockStop) {
        let id = std::mem::take(&mut self.id);
        let name = std::mem::take(&mut self.name);
        self.emit(ToolUseBlockEvent::Stop(ToolUseBlockStop {
            index: stop.index,
            id,
            name,
        }));
    }
    fn dispatch_abort(&mut self, _abort: &BlockAbort) {
        self.id.clear();
        self.name.clear();
    }
    scope_methods!();
}

#[derive(Default)]
pub struct Timeline {
    usage_handlers: Vec<Box<dyn ErasedHandler<UsageKind>>>,
    ping_handlers: Vec<Box<dyn ErasedHandler<PingKind>>>,
    status_handlers: Vec<Box<dyn ErasedHandler<StatusKind>>>,
    error_handlers: Vec<Box<dyn ErasedHandler<ErrorKind>>>,
    text_block_handlers: Vec<Box<dyn ErasedBlockHandler>>,
    thinking_block_handlers: Vec<Box<dyn ErasedBlockHandler>>,
    tool_use_block_handlers: Vec<Box<dyn ErasedBlockHandler>>,
    current_block: Option<(usize, BlockType)>,
}

fn meta<H, K>(handler: H) -> Box<dyn ErasedHandler<K>>
where
    H: Handler<K> + Send + Sync + 'static,
    H::Scope: Send + Sync + 'static,
    K: Kind + 'static,
{
    let mut wrapper = HandlerWrapper::new(handler);
    // Meta handlers keep one scope for as long as they are registered.
    ErasedHandler::start_scope(&mut wrapper);
    Box::new(wrapper)
}

impl Timeline {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn on_usage<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<UsageKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.usage_handlers.push(meta(handler));
        self
    }

    pub fn on_ping<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<PingKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.ping_handlers.push(meta(handler));
        self
    }

    pub fn on_status<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<StatusKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.status_handlers.push(meta(handler));
        self
    }

    pub fn on_error<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<ErrorKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.error_handlers.push(meta(handler));
        self
    }

    pub fn on_text_block<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<TextBlockKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.text_block_handlers
            .push(Box::new(TextBlockHandlerWrapper::new(handler)));
        self
    }

    pub fn on_thinking_block<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<ThinkingBlockKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.thinking_block_handlers
            .push(Box::new(ThinkingBlockHandlerWrapper::new(handler)));
        self
    }

    pub fn on_tool_use_block<H>(&mut self, handler: H) -> &mut Self
    where
        H: Handler<ToolUseBlockKind> + Send + Sync + 'static,
        H::Scope: Send + Sync + 'static,
    {
        self.tool_use_block_handlers
            .push(Box::new(ToolUseBlockHandlerWrapper::new(handler)));
        self
    }

    /// The block currently open, if any.
    pub fn current_block(&self) -> Option<BlockType> {
        self.current_block.map(|(_, t)| t)
    }

    pub fn dispatch(&mut self, event: &Event) {
        match event {
            Event::Usage(u) => dispatch_meta(&mut self.usage_handlers, u),
            Event::Ping(p) => dispatch_meta(&mut self.ping_handlers, p),
            Event::Status(s) => dispatch_meta(&mut self.status_handlers, s),
            Event::Error(e) => dispatch_meta(&mut self.error_handlers, e),
            Event::BlockStart(s) => self.handle_block_start(s),
            Event::BlockDelta(d) => self.handle_block_delta(d),
            Event::BlockStop(s) => self.handle_block_stop(s),
            Event::BlockAbort(a) => self.handle_block_abort(a),
        }
    }

    /// Aborts the open block (on cancel or error): handlers drop their scope.
    pub fn abort_current_block(&mut self) {
        if let Some((index, block_type)) = self.current_block {
            self.handle_block_abort(&BlockAbort {
                index,
                block_type,
                reason: "aborted".to_owned(),
            });
        }
    }

    fn handlers_for(&mut self, block_type: BlockType) -> &mut Vec<Box<dyn ErasedBlockHandler>> {
        match block_type {
            BlockType::Text | BlockType::ToolResult => &mut self.text_block_handlers,
            BlockType::Thinking => &mut self.thinking_block_handlers,
            BlockType::ToolUse => &mut self.tool_use_block_handlers,
        }
    }

    fn handle_block_start(&mut self, start: &BlockStart) {
        if self.current_block.is_some() {
            // One block at a time: a start without a stop closes nothing silently.
            tracing::debug!("block started while another was open; aborting the old one");
            self.abort_current_block();
        }
        self.current_block = Some((start.index, start.block_type));
        for h in self.handlers_for(start.block_type) {
            h.start_scope();
            h.dispatch_start(start);
        }
    }

    fn handle_block_delta(&mut self, delta: &BlockDelta) {
        let block_type = match self.current_block {
            Some((_, t)) => t,
            None => {
                let Some(t) = implied_block_type(&delta.delta) else {
                    tracing::debug!("signature delta outside any block dropped");
                    return;
                };
                self.current_block = Some((delta.index, t));
                t
            }
        };
        for h in self.handlers_for(block_type) {
            if !h.has_scope() {
                h.start_scope();
            }
            h.dispatch_delta(delta);
        }
    }

    fn handle_block_stop(&mut self, stop: &BlockStop) {
        let block_type = self.current_block.map_or(stop.block_type, |(_, t)| t);
        for h in self.handlers_for(block_type) {
            h.dispatch_stop(stop);
            h.end_scope();
        }
        self.current_block = None;
    }

    fn handle_block_abort(&mut self, abort: &BlockAbort) {
        let block_type = self.current_block.map_or(abort.block_type, |(_, t)| t);
        for h in self.handlers_for(block_type) {
            h.dispatch_abort(abort);
            h.end_scope();
        }
        self.current_block = None;
    }
}

fn implied_block_type(delta: &DeltaContent) -> Option<BlockType> {
    match delta {
        DeltaContent::Text(_) => Some(BlockType::Text),
        DeltaContent::Thinking(_) => Some(BlockType::Thinking),
        DeltaContent::InputJson(_) => Some(BlockType::ToolUse),
        DeltaContent::Signature(_) => None,
    }
}

fn dispatch_meta<K: Kind>(handlers: &mut [Box<dyn ErasedHandler<K>>], event: &K::Event) {
    for h in handlers {
        h.dispatch(event);
    }
}
