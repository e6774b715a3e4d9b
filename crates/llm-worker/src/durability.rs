//! Where committed items become durable. A front end that persists history off the
//! runtime's threads (a session log written by its own thread) tells the Worker how to
//! wait for it; the Worker waits before every model request and at the end of a turn, so
//! an item is durable before anything it may affect is sent ("history first").

/// Waits for the persistence of the items announced so far.
#[async_trait::async_trait]
pub trait Durability: Send + Sync {
    /// Resolves once every item announced to the Worker's observer so far is durable
    /// (or could not be made so; failures are reported by the persistence itself).
    async fn flushed(&self);
}
