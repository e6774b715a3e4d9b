//! The diagnostics a server published (or answered a pull with), by document, and a
//! way to wait for the next set of a document.

use lsp_types::Diagnostic;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Debug, Clone)]
pub struct Published {
    /// The document version it is for, when the server said.
    pub version: Option<i32>,
    pub diagnostics: Vec<Diagnostic>,
    /// Order of arrival over all documents (1, 2, ...).
    pub seq: u64,
}

pub struct DiagStore {
    map: Mutex<HashMap<String, Published>>,
    tick: watch::Sender<u64>,
    /// The server's output ended: nothing more will be published.
    closed: std::sync::atomic::AtomicBool,
}

impl Default for DiagStore {
    fn default() -> Self {
        Self {
            map: Mutex::default(),
            tick: watch::channel(0).0,
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl DiagStore {
    /// The sequence number the next publication will be above.
    pub fn seq(&self) -> u64 {
        *self.tick.borrow()
    }

    pub fn publish(&self, uri: &str, version: Option<i32>, diagnostics: Vec<Diagnostic>) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = *self.tick.borrow() + 1;
        map.insert(
            uri.to_owned(),
            Published {
                version,
                diagnostics,
                seq,
            },
        );
        self.tick.send_replace(seq);
    }

    /// Nothing more will be published; waits end now.
    pub fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.tick.send_modify(|_| {});
    }

    pub fn get(&self, uri: &str) -> Option<Published> {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(uri)
            .cloned()
    }

    pub fn forget(&self, uri: &str) {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uri);
    }

    /// Every document's diagnostics.
    pub fn all(&self) -> Vec<(String, Published)> {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Waits until `deadline` for a publication for `uri` that arrived after `after`
    /// and is for `version` (or names no version).
    pub async fn wait(
        &self,
        uri: &str,
        version: i32,
        after: u64,
        deadline: Instant,
    ) -> Option<Published> {
        let mut ticks = self.tick.subscribe();
        loop {
            if let Some(p) = self.get(uri) {
                if p.seq > after && p.version.is_none_or(|v| v == version) {
                    return Some(p);
                }
            }
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                return None;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match tokio::time::timeout(left, ticks.changed()).await {
                Ok(Ok(())) => {}
                // The store is gone or the time is up.
                Ok(Err(_)) | Err(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_wait_takes_the_set_for_its_version_and_skips_stale_ones() {
        let store = Arc::new(DiagStore::default());
        store.publish("file:///a", Some(1), vec![]);
        let after = store.seq();
        let waiting = {
            let store = store.clone();
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(600);
                store.wait("file:///a", 2, after, deadline).await
            })
        };
        store.publish("file:///b", Some(2), vec![]);
        store.publish("file:///a", Some(1), vec![]);
        store.publish("file:///a", Some(2), vec![Diagnostic::default()]);
        let got = waiting.await.unwrap().unwrap();
        assert_eq!(got.version, Some(2));
        assert_eq!(got.diagnostics.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_at_its_deadline() {
        let store = DiagStore::default();
        let deadline = Instant::now() + Duration::from_millis(50);
        assert!(store.wait("file:///a", 1, 0, deadline).await.is_none());
    }
}
