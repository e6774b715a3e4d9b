//! The session log's writer. Committed items are handed to a thread of its own, which
//! appends and fsyncs them, so no runtime thread waits on the disk. Durability is kept
//! where it matters: the Worker waits for [`Recorder::flushed`] (through
//! `saki_llm_worker::Durability`) before every model request and at the end of a turn,
//! so an item is on disk before anything it may affect is sent.
//!
//! Items queued together are written with one write and one fsync (a crash still tears at
//! most the last line). When the last handle goes, the thread writes what is queued and
//! ends (the session's lock with it).

use saki_llm_worker::{Compaction, Item, WorkerEvent};
use saki_pod::{SessionWriter, StoreError, UndoNote};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// Where the first write failure is reported (the tracing log unless set).
pub type FailureReporter = Arc<dyn Fn(String) + Send + Sync>;

enum Job {
    Items(Vec<Item>),
    /// A compaction; with a reply, its result goes there instead of the reporter.
    Compaction(
        Box<Compaction>,
        Option<oneshot::Sender<Result<(), StoreError>>>,
    ),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
    /// An undo or redo (after the system item that tells the model).
    Undo(UndoNote),
    /// The conversation was cut back to its first `keep` items (turn `turn` on).
    Rewind {
        keep: usize,
        turn: u64,
    },
    /// A subagent's items, under the `agent` call that runs it.
    Subagent {
        parent: String,
        agent: String,
        items: Vec<Item>,
    },
    /// The next items are an accepted speculation's (for `saki export`).
    Speculated(usize),
    /// A main request's usage (for `saki export`).
    Usage(saki_llm_client::UsageEvent),
}

/// Reports the first write failure once.
#[derive(Default)]
struct Failures {
    failed: AtomicBool,
    reporter: Mutex<Option<FailureReporter>>,
}

impl Failures {
    fn report(&self, result: Result<(), StoreError>) {
        let Err(e) = result else {
            return;
        };
        if self.failed.swap(true, Ordering::Relaxed) {
            return;
        }
        let message =
            format!("the session log could not be written; this session may not resume fully: {e}");
        let reporter = self
            .reporter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match reporter {
            Some(report) => report(message),
            // A library prints nothing: without a reporter, the log carries it.
            None => tracing::warn!(%message, "the session log could not be written"),
        }
    }
}

struct Inner {
    id: String,
    jobs: Option<Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    failures: Arc<Failures>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has written what is queued.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the session log's writer panicked");
            }
        }
    }
}

/// Writes committed items to the session log on its own thread; the first failure is
/// reported once.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
}

impl Recorder {
    pub fn new(writer: SessionWriter) -> Self {
        let id = writer.meta().id.clone();
        let failures = Arc::new(Failures::default());
        let (jobs, queue) = std::sync::mpsc::channel();
        let for_thread = Arc::clone(&failures);
        let thread = std::thread::Builder::new()
            .name("saki-log-writer".into())
            .spawn(move || write_jobs(writer, &queue, &for_thread));
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(e) => {
                failures.report(Err(StoreError::Io {
                    path: "the session log's writer thread".into(),
                    source: e,
                }));
                None
            }
        };
        Self {
            inner: Arc::new(Inner {
                id,
                jobs: Some(jobs),
                thread,
                failures,
            }),
        }
    }

    /// Reports a write failure through `reporter` instead of stderr (the UI owns the
    /// terminal).
    pub fn with_reporter(self, reporter: FailureReporter) -> Self {
        *self
            .inner
            .failures
            .reporter
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(reporter);
        self
    }

    pub fn id(&self) -> String {
        self.inner.id.clone()
    }

    fn send(&self, job: Job) -> bool {
        self.inner
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok())
    }

    pub fn record(&self, item: &Item) {
        self.send(Job::Items(vec![item.clone()]));
    }

    pub fn observe(&self, event: &WorkerEvent) {
        match event {
            WorkerEvent::Committed(item) => self.record(item),
            WorkerEvent::CommittedMany(items) => {
                // Only an accepted speculation commits several items at once.
                self.send(Job::Speculated(items.len()));
                self.send(Job::Items(items.clone()));
            }
            WorkerEvent::Compacted(compaction) => {
                self.send(Job::Compaction(Box::new(compaction.clone()), None));
            }
            WorkerEvent::Usage(usage) => {
                self.send(Job::Usage(*usage));
            }
            _ => {}
        }
    }

    /// Records a subagent's committed items under its parent call (never history).
    pub fn observe_subagent(&self, parent: &str, agent: &str, event: &WorkerEvent) {
        let items = match event {
            WorkerEvent::Committed(item) => vec![item.clone()],
            WorkerEvent::CommittedMany(items) => items.clone(),
            _ => return,
        };
        self.send(Job::Subagent {
            parent: parent.to_owned(),
            agent: agent.to_owned(),
            items,
        });
    }

    /// Records a compaction that changed history, and says whether it was written.
    pub async fn record_compaction(&self, compaction: &Compaction) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        if !self.send(Job::Compaction(Box::new(compaction.clone()), Some(reply))) {
            return Err(stopped());
        }
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// Records an undo or redo of files.
    pub fn record_undo(&self, note: UndoNote) {
        self.send(Job::Undo(note));
    }

    /// Records that the conversation now holds only its first `keep` items.
    pub fn record_rewind(&self, keep: usize, turn: u64) {
        self.send(Job::Rewind { keep, turn });
    }

    /// Resolves once everything recorded before the call is written and fsync'd (or
    /// failed, which is reported).
    pub async fn flushed(&self) {
        let (reply, done) = oneshot::channel();
        if self.send(Job::Flush(reply)) {
            let _ = done.await;
        }
    }
}

#[async_trait::async_trait]
impl saki_llm_worker::Durability for Recorder {
    async fn flushed(&self) {
        Recorder::flushed(self).await;
    }
}

fn stopped() -> StoreError {
    StoreError::Io {
        path: "the session log".into(),
        source: std::io::Error::other("its writer has stopped"),
    }
}

/// The writer thread: items queued together go out in one write and one fsync.
fn write_jobs(mut writer: SessionWriter, queue: &Receiver<Job>, failures: &Failures) {
    let mut next = queue.recv().ok();
    while let Some(job) = next.take() {
        match job {
            Job::Items(mut items) => {
                loop {
                    match queue.try_recv() {
                        Ok(Job::Items(more)) => items.extend(more),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                failures.report(writer.append_all(&items));
            }
            Job::Compaction(compaction, reply) => {
                let result = writer.append_compaction(&compaction);
                match reply {
                    Some(reply) => {
                        let _ = reply.send(result);
                    }
                    None => failures.report(result),
                }
            }
            Job::Flush(reply) => {
                let _ = reply.send(());
            }
            Job::Undo(note) => failures.report(writer.append_undo(&note)),
            Job::Rewind { keep, turn } => failures.report(writer.append_rewind(keep, turn)),
            Job::Subagent {
                parent,
                agent,
                items,
            } => failures.report(writer.append_subagent(&parent, &agent, &items)),
            Job::Speculated(count) => failures.report(writer.append_speculated(count)),
            Job::Usage(usage) => failures.report(writer.append_usage(&usage)),
        }
        if next.is_none() {
            next = queue.recv().ok();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use saki_pod::SessionStore;

    #[tokio::test(flavor = "current_thread")]
    async fn items_are_on_disk_once_flushed_and_written_off_the_runtime_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let writer = store.create("/ws", "p", "m", "title", None).unwrap();
        let recorder = Recorder::new(writer);
        let id = recorder.id();
        for n in 0..50 {
            recorder.observe(&WorkerEvent::Committed(Item::user(format!("item {n}"))));
        }
        recorder.flushed().await;
        let loaded = store.load(&id).unwrap();
        assert_eq!(loaded.items.len(), 50, "all durable once flushed");
        assert_eq!(loaded.items[49], Item::user("item 49"));
        // The log is written by its own thread, which holds the session's lock until the
        // last handle goes.
        assert!(std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(Result::ok)
            .any(|t| std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim() == "saki-log-writer")));
        assert!(matches!(
            store.append_to(&loaded),
            Err(saki_pod::StoreError::Busy(_))
        ));
        drop(recorder);
        assert!(store.append_to(&loaded).is_ok(), "lock released on drop");
    }
}
