//! MCP over ACP (unstable, `mcpCapabilities.acp`; `schema.unstable.json`
//! `McpServerAcp`, `mcp/connect`, `mcp/message`, `mcp/disconnect`): an MCP
//! server that lives inside the editor, reached through the ACP connection
//! itself instead of a process or a URL.
//!
//! For an `mcpServers` entry `{"type": "acp", "name", "serverId"}` the agent
//! asks the editor `mcp/connect {serverId}` and gets a `connectionId`; from
//! then on every MCP message travels as one `mcp/message` without its
//! envelope (`connectionId`, the inner `method` and `params`):
//!
//! - our MCP client's requests → `mcp/message` requests to the editor, whose
//!   result (or error) is the inner response;
//! - its notifications → `mcp/message` notifications;
//! - the server's requests and notifications → `mcp/message` requests and
//!   notifications from the editor ([`Links::request`], [`Links::notification`]),
//!   answered with what our client answers.
//!
//! When the MCP session ends the agent sends `mcp/disconnect`. The transport
//! is an rmcp [`Transport`], so the tools of such a server are ordinary MCP
//! tools (`mcp__<server>__<tool>`, same permission rules).
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::acp::{ConnectMcpRequest, ConnectMcpResponse, DisconnectMcpRequest, MessageMcp, method};
use crate::rpc::{Peer, Reply, RpcError};

use super::McpError;

/// How long `mcp/disconnect` may take (nobody waits for it).
const DISCONNECT_WAIT: Duration = Duration::from_secs(5);
/// How long the server's own request may wait for our client's answer.
const ANSWER_WAIT: Duration = Duration::from_secs(300);

type Answer = oneshot::Sender<Result<Value, RpcError>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One open MCP-over-ACP connection.
struct Link {
    /// Messages from the server, for our MCP client.
    to_client: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    /// The server's requests waiting for our client's answer, by inner id.
    waiting: Mutex<HashMap<String, Answer>>,
    next_id: AtomicU64,
}

/// The MCP-over-ACP connections of one ACP connection, by `connectionId`
/// (the editor's `mcp/message` names the connection, not the session).
pub struct Links {
    peer: Peer,
    open: Mutex<HashMap<String, Arc<Link>>>,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links")
            .field("open", &lock(&self.open).len())
            .finish_non_exhaustive()
    }
}

impl Links {
    pub fn new(peer: Peer) -> Self {
        Self {
            peer,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, connection_id: &str) -> Option<Arc<Link>> {
        lock(&self.open).get(connection_id).cloned()
    }

    /// An `mcp/message` request from the editor: the server asks our client
    /// (e.g. `ping`, `roots/list`); answered with our client's answer.
    pub async fn request(&self, msg: MessageMcp) -> Result<Reply, RpcError> {
        let link = self
            .get(&msg.connection_id)
            .ok_or_else(|| unknown(&msg.connection_id))?;
        let inner_id = format!("acp-{}", link.next_id.fetch_add(1, Ordering::Relaxed));
        let mut frame = json!({"jsonrpc": "2.0", "id": inner_id, "method": msg.method});
        if let Some(p) = msg.params {
            frame["params"] = Value::Object(p);
        }
        let decoded: ServerJsonRpcMessage = serde_json::from_value(frame).map_err(|e| {
            RpcError::invalid_params(format!(
                "params: {:?} is not an MCP request a server may send its client: {e}",
                msg.method
            ))
        })?;
        let (tx, rx) = oneshot::channel();
        lock(&link.waiting).insert(inner_id.clone(), tx);
        if link.to_client.send(decoded).is_err() {
            lock(&link.waiting).remove(&inner_id);
            return Err(closed(&msg.connection_id));
        }
        let answer = tokio::time::timeout(ANSWER_WAIT, rx).await;
        lock(&link.waiting).remove(&inner_id);
        match answer {
            Ok(Ok(Ok(result))) => serde_json::value::to_raw_value(&result)
                .map(Reply::from)
                .map_err(RpcError::internal),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(closed(&msg.connection_id)),
            Err(_) => Err(RpcError::internal(format!(
                "the MCP client did not answer {:?} within {} s",
                msg.method,
                ANSWER_WAIT.as_secs()
            ))),
        }
    }

    /// An `mcp/message` notification from the editor (e.g.
    /// `notifications/tools/list_changed`). Never blocks (reader loop).
    pub fn notification(&self, msg: MessageMcp) {
        let Some(link) = self.get(&msg.connection_id) else {
            tracing::debug!(connection = %msg.connection_id, "mcp/message for no open connection");
            return;
        };
        let mut frame = json!({"jsonrpc": "2.0", "method": msg.method});
        if let Some(p) = msg.params {
            frame["params"] = Value::Object(p);
        }
        match serde_json::from_value::<ServerJsonRpcMessage>(frame) {
            Ok(m) => {
                let _ = link.to_client.send(m);
            }
            Err(e) => {
                tracing::debug!(method = %msg.method, error = %e, "undecodable MCP notification")
            }
        }
    }

    fn remove(&self, connection_id: &str) -> bool {
        lock(&self.open).remove(connection_id).is_some()
    }
}

fn unknown(connection_id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "params.connectionId: {connection_id:?} is not an open MCP-over-ACP connection of this agent"
    ))
}

fn closed(connection_id: &str) -> RpcError {
    RpcError::internal(format!(
        "the MCP-over-ACP connection {connection_id:?} closed before answering"
    ))
}

/// Opens a connection to the editor's server `server_id` (`mcp/connect`).
pub async fn connect(
    links: Option<&Arc<Links>>,
    server_id: &str,
) -> Result<AcpTransport, McpError> {
    let links = links.ok_or_else(|| {
        McpError::Config(
            "MCP over ACP is only available to sessions of an editor connection".into(),
        )
    })?;
    let resp: ConnectMcpResponse = links
        .peer
        .request(method::MCP_CONNECT, &ConnectMcpRequest { server_id })
        .await
        .map_err(|e| {
            McpError::Connect(format!(
                "the editor answered mcp/connect for server id {server_id:?} with an error: {}",
                e.message
            ))
        })?;
    let (tx, rx) = mpsc::unbounded_channel();
    let link = Arc::new(Link {
        to_client: tx,
        waiting: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
    });
    {
        let mut open = lock(&links.open);
        if open.contains_key(&resp.connection_id) {
            return Err(McpError::Connect(format!(
                "the editor gave connection id {:?} twice",
                resp.connection_id
            )));
        }
        open.insert(resp.connection_id.clone(), link.clone());
    }
    tracing::info!(server_id, connection = %resp.connection_id, "MCP over ACP connected");
    Ok(AcpTransport {
        links: links.clone(),
        connection_id: resp.connection_id,
        link,
        rx,
    })
}

/// The client side of one MCP-over-ACP connection, as an rmcp transport.
pub struct AcpTransport {
    links: Arc<Links>,
    connection_id: String,
    link: Arc<Link>,
    rx: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

#[derive(Debug, thiserror::Error)]
pub enum AcpTransportError {
    #[error("cannot encode the MCP message: {0}")]
    Encode(serde_json::Error),
}

/// `method` and `params` of an encoded request or notification.
fn inner(value: &Value) -> (String, Option<Map<String, Value>>) {
    let method = value["method"].as_str().unwrap_or_default().to_owned();
    let params = value.get("params").and_then(Value::as_object).cloned();
    (method, params)
}

/// Our answer to one of the server's requests, as the editor's result/error.
fn answer_of(value: &Value) -> Result<Value, RpcError> {
    match value.get("error") {
        Some(e) => {
            let code = e["code"]
                .as_i64()
                .unwrap_or(crate::rpc::codes::INTERNAL_ERROR);
            let message = e["message"].as_str().unwrap_or("MCP error").to_owned();
            let err = RpcError::new(code, message);
            Err(match e.get("data") {
                Some(d) if !d.is_null() => err.with_data(d.clone()),
                _ => err,
            })
        }
        None => Ok(value.get("result").cloned().unwrap_or_else(|| json!({}))),
    }
}

/// The editor's answer to our request `id`, as an MCP message for our client.
fn response_of(id: &Value, outcome: Result<Value, RpcError>) -> ServerJsonRpcMessage {
    let frame = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
    };
    serde_json::from_value(frame).unwrap_or_else(|e| {
        let err = RpcError::internal(format!("the editor's MCP answer was malformed: {e}"));
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "error": err}))
            .expect("a JSON-RPC error decodes")
    })
}

impl Transport<RoleClient> for AcpTransport {
    type Error = AcpTransportError;

    fn name() -> Cow<'static, str> {
        "acp".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let peer = self.links.peer.clone();
        let link = self.link.clone();
        let connection_id = self.connection_id.clone();
        let is = |m: &ClientJsonRpcMessage| match m {
            JsonRpcMessage::Request(_) => 0,
            JsonRpcMessage::Notification(_) => 1,
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => 2,
        };
        let kind = is(&item);
        let value = serde_json::to_value(&item);
        async move {
            let value = value.map_err(AcpTransportError::Encode)?;
            match kind {
                0 => {
                    let (method, params) = inner(&value);
                    let msg = MessageMcp {
                        connection_id,
                        method,
                        params,
                    };
                    let outcome = peer.request::<_, Value>(method::MCP_MESSAGE, &msg).await;
                    let _ = link.to_client.send(response_of(&value["id"], outcome));
                }
                1 => {
                    let (method, params) = inner(&value);
                    let msg = MessageMcp {
                        connection_id,
                        method,
                        params,
                    };
                    peer.notify(method::MCP_MESSAGE, &msg);
                }
                _ => {
                    let key = match &value["id"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    match lock(&link.waiting).remove(&key) {
                        Some(tx) => {
                            let _ = tx.send(answer_of(&value));
                        }
                        None => tracing::debug!(id = %key, "MCP answer to no waiting request"),
                    }
                }
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    /// Forgets the connection and tells the editor (`mcp/disconnect`),
    /// without waiting for its answer (the editor may be gone).
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.rx.close();
        if self.links.remove(&self.connection_id) {
            lock(&self.link.waiting).clear();
            let peer = self.links.peer.clone();
            let id = self.connection_id.clone();
            tracing::info!(connection = %id, "MCP over ACP disconnecting");
            tokio::spawn(async move {
                let req = DisconnectMcpRequest { connection_id: &id };
                let sent = peer.request::<_, Value>(method::MCP_DISCONNECT, &req);
                if let Ok(Err(e)) = tokio::time::timeout(DISCONNECT_WAIT, sent).await {
                    tracing::debug!(connection = %id, error = %e.message, "mcp/disconnect failed");
                }
            });
        }
        Ok(())
    }
}

impl Drop for AcpTransport {
    fn drop(&mut self) {
        self.links.remove(&self.connection_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_both_ways() {
        let ok = answer_of(&json!({"jsonrpc": "2.0", "id": "acp-0", "result": {"roots": []}}));
        assert_eq!(ok.unwrap(), json!({"roots": []}));
        let err = answer_of(&json!({"jsonrpc": "2.0", "id": "acp-0",
            "error": {"code": -32601, "message": "no such method"}}))
        .unwrap_err();
        assert_eq!((err.code, err.message.as_str()), (-32601, "no such method"));

        let id = json!(3);
        let m = response_of(&id, Ok(json!({"tools": []})));
        assert!(matches!(m, JsonRpcMessage::Response(_)), "{m:?}");
        let m = response_of(&id, Err(RpcError::invalid_params("bad")));
        assert!(matches!(m, JsonRpcMessage::Error(_)), "{m:?}");
    }
}

#[cfg(test)]
#[path = "acp_transport_timer_tests.rs"]
mod timer_tests;
