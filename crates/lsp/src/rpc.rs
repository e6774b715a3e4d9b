//! A JSON-RPC 2.0 connection to one server: requests with ids and bounded waits,
//! notifications both ways, and the few requests servers send to clients answered.

use crate::framing::{read_message, write_message};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    #[error("the server did not answer {method} within {secs} s")]
    Timeout { method: String, secs: u64 },
    #[error("the server's connection is closed")]
    Closed,
    #[error("the server answered {method} with an error: {message}")]
    Server { method: String, message: String },
}

/// The method [`Connection::start`]'s notification handler is called with, once, when
/// the server's output ends.
pub const CLOSED: &str = "$/saki/closed";

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, String>>>>>;

/// What the client answers to a request from the server (workspace configuration,
/// capability registration, progress tokens); `None`: "method not found".
pub type ServerRequestHandler = Arc<dyn Fn(&str, &Value) -> Option<Value> + Send + Sync>;

/// One open connection. Dropping it stops its writer; the reader ends with the stream.
pub struct Connection {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicI64,
    closed: Arc<AtomicBool>,
}

impl Connection {
    /// Starts the reader and writer tasks over `read` / `write` (the server's stdout and
    /// stdin). Notifications go to `on_notification` (method, params) on the reader task.
    pub fn start<R, W>(
        read: R,
        mut write: W,
        on_notification: impl Fn(&str, Value) + Send + 'static,
        on_request: ServerRequestHandler,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let writer_closed = closed.clone();
        tokio::spawn(async move {
            while let Some(body) = queue.recv().await {
                if let Err(e) = write_message(&mut write, &body).await {
                    tracing::debug!(error = %e, "language server stdin closed");
                    break;
                }
            }
            writer_closed.store(true, Ordering::Release);
        });
        let reader_pending = pending.clone();
        let reader_closed = closed.clone();
        let replies = outgoing.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(read);
            loop {
                let body = match read_message(&mut reader).await {
                    Ok(Some(body)) => body,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "language server stream broken");
                        break;
                    }
                };
                let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                    tracing::debug!("language server sent a message that is not JSON");
                    continue;
                };
                dispatch(
                    message,
                    &reader_pending,
                    &replies,
                    &on_notification,
                    &on_request,
                );
            }
            reader_closed.store(true, Ordering::Release);
            // Whoever waits for a notification learns that none will come.
            on_notification(CLOSED, Value::Null);
            // Every waiting request learns at once that no answer will come.
            reader_pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        });
        Self {
            outgoing,
            pending,
            next_id: AtomicI64::new(1),
            closed,
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends a request and waits at most `timeout` for its answer.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tx);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.is_closed() || self.outgoing.send(body.to_string().into_bytes()).is_err() {
            self.forget(id);
            return Err(RpcError::Closed);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(message))) => Err(RpcError::Server {
                method: method.to_owned(),
                message,
            }),
            Ok(Err(_)) => Err(RpcError::Closed),
            Err(_) => {
                self.forget(id);
                // The server may still be working on it: say we no longer want it.
                self.notify("$/cancelRequest", json!({"id": id}));
                Err(RpcError::Timeout {
                    method: method.to_owned(),
                    secs: timeout.as_secs().max(1),
                })
            }
        }
    }

    /// Sends a notification (no answer).
    pub fn notify(&self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let _ = self.outgoing.send(body.to_string().into_bytes());
    }

    fn forget(&self, id: i64) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}

fn dispatch(
    message: Value,
    pending: &Pending,
    replies: &mpsc::UnboundedSender<Vec<u8>>,
    on_notification: &impl Fn(&str, Value),
    on_request: &ServerRequestHandler,
) {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null());
    match (method, id) {
        // A response to one of ours.
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else { return };
            let waiter = pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            if let Some(waiter) = waiter {
                let answer = match message.get("error") {
                    Some(error) => Err(error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_owned()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = waiter.send(answer);
            }
        }
        // A request from the server: it waits for an answer, so one always goes back.
        (Some(method), Some(id)) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let reply = match on_request(method, &params) {
                Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                None => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("{method} is not supported")}}),
            };
            let _ = replies.send(reply.to_string().into_bytes());
        }
        (Some(method), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            on_notification(method, params);
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framing::encode;
    use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn requests_match_answers_by_id_and_server_requests_are_answered() {
        let (client_side, mut server_side) = duplex(1 << 16);
        let (read, write) = tokio::io::split(client_side);
        let (tx, mut notes) = mpsc::unbounded_channel();
        let conn = Connection::start(
            read,
            write,
            move |method, params| {
                let _ = tx.send((method.to_owned(), params));
            },
            Arc::new(|method, _| (method == "workspace/configuration").then(|| json!([null]))),
        );
        let asking = tokio::spawn(async move {
            conn.request("hover", json!({}), Duration::from_secs(30))
                .await
        });
        // The server reads the request, asks something itself, notifies, then answers.
        let mut reader = BufReader::new(&mut server_side);
        let body = read_message(&mut reader).await.unwrap().unwrap();
        let request: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(request["method"], "hover");
        let id = request["id"].clone();
        drop(reader);
        let mut wire = encode(
            json!({"jsonrpc":"2.0","id":"s1","method":"workspace/configuration","params":{}})
                .to_string()
                .as_bytes(),
        );
        wire.extend(encode(
            json!({"jsonrpc":"2.0","id":7,"method":"window/unknown"})
                .to_string()
                .as_bytes(),
        ));
        wire.extend(encode(
            json!({"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"n":1}})
                .to_string()
                .as_bytes(),
        ));
        wire.extend(encode(
            json!({"jsonrpc":"2.0","id":id,"result":{"contents":"x"}})
                .to_string()
                .as_bytes(),
        ));
        server_side.write_all(&wire).await.unwrap();
        let answer = asking.await.unwrap().unwrap();
        assert_eq!(answer["contents"], "x");
        let (method, params) = notes.recv().await.unwrap();
        assert_eq!(method, "textDocument/publishDiagnostics");
        assert_eq!(params["n"], 1);
        let mut reader = BufReader::new(&mut server_side);
        let reply: Value =
            serde_json::from_slice(&read_message(&mut reader).await.unwrap().unwrap()).unwrap();
        assert_eq!(reply["id"], "s1");
        assert_eq!(reply["result"], json!([null]));
        let refused: Value =
            serde_json::from_slice(&read_message(&mut reader).await.unwrap().unwrap()).unwrap();
        assert_eq!(refused["id"], 7);
        assert_eq!(refused["error"]["code"], -32601);
    }

    #[tokio::test]
    async fn a_closed_stream_ends_waiting_requests() {
        let (client_side, server_side) = duplex(1 << 16);
        let (read, write) = tokio::io::split(client_side);
        let conn = Connection::start(read, write, |_, _| {}, Arc::new(|_, _| None));
        let asking = conn.request("initialize", json!({}), Duration::from_secs(600));
        let (mut server_read, _) = tokio::io::split(server_side);
        let closer = async move {
            let mut buf = [0u8; 16];
            let _ = server_read.read(&mut buf).await;
            drop(server_read);
        };
        let (answer, ()) = tokio::join!(asking, closer);
        assert_eq!(answer, Err(RpcError::Closed));
        assert!(conn.is_closed());
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_request_times_out() {
        let (client_side, _server_side) = duplex(1 << 16);
        let (read, write) = tokio::io::split(client_side);
        let conn = Connection::start(read, write, |_, _| {}, Arc::new(|_, _| None));
        let answer = conn
            .request("textDocument/hover", json!({}), Duration::from_secs(5))
            .await;
        assert!(matches!(answer, Err(RpcError::Timeout { .. })));
    }
}
