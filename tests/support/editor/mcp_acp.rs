//! The fake editor's side of MCP over ACP (unstable; `schema.unstable.json`
//! `mcp/connect`, `mcp/message`, `mcp/disconnect`): MCP servers that "live in
//! the editor". A test registers a server id with a command
//! ([`FakeEditor::serve_mcp_over_acp`]); on `mcp/connect` the editor starts
//! that command (an stdio MCP server, e.g. `examples/mcp_test_server`) and
//! bridges: the agent's `mcp/message` requests and notifications become
//! lines on the server's stdin, the server's answers become the results, and
//! the server's notifications become `mcp/message` notifications to the
//! agent. `mcp/disconnect` stops the process. Every step is logged for the
//! test's assertions ([`FakeEditor::mcp_over_acp_log`]).
use super::*;

use std::collections::BTreeMap;

/// The editor's MCP-over-ACP state.
#[derive(Default)]
pub(super) struct McpState {
    /// serverId → command line.
    servers: HashMap<String, (PathBuf, Vec<String>)>,
    /// connectionId → running bridge.
    open: BTreeMap<String, Arc<Bridge>>,
    next: u64,
    log: Vec<String>,
}

struct Bridge {
    /// Lines for the server's stdin, written in order by one task.
    stdin: tokio::sync::mpsc::UnboundedSender<String>,
    waiting: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    next_id: AtomicI64,
    child: Mutex<Option<Child>>,
}

impl FakeEditor {
    /// Serves the MCP server `command args` to the agent as `serverId`
    /// (to be listed in `mcpServers` as `{"type": "acp", ...}`).
    pub fn serve_mcp_over_acp(&self, server_id: &str, command: PathBuf, args: Vec<String>) {
        self.shared
            .lock()
            .mcp
            .servers
            .insert(server_id.to_owned(), (command, args));
    }

    /// What happened on the MCP-over-ACP side, in order: `connect <serverId>`,
    /// `agent request <method>`, `agent notification <method>`,
    /// `server notification <method>`, `disconnect <connectionId>`.
    pub fn mcp_over_acp_log(&self) -> Vec<String> {
        self.shared.lock().mcp.log.clone()
    }

    /// The connection ids the agent has open now.
    pub fn mcp_over_acp_open(&self) -> Vec<String> {
        self.shared.lock().mcp.open.keys().cloned().collect()
    }
}

fn log(shared: &Shared, line: String) {
    shared.lock().mcp.log.push(line);
    shared.bump();
}

fn conn_of(shared: &Shared, params: &Value) -> Result<(String, Arc<Bridge>), RpcError> {
    let id = params["connectionId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let bridge = shared.lock().mcp.open.get(&id).cloned();
    match bridge {
        Some(b) => Ok((id, b)),
        None => {
            shared.error(format!(
                "the agent used MCP-over-ACP connection {id:?}, which is not open"
            ));
            Err(RpcError::new(
                -32602,
                format!("unknown connectionId {id:?}"),
            ))
        }
    }
}

/// `mcp/connect`, `mcp/message` (request), `mcp/disconnect` from the agent.
pub(super) async fn handle_request(
    shared: &Arc<Shared>,
    method: &str,
    params: &Value,
) -> Result<Value, RpcError> {
    match method {
        "mcp/connect" => connect(shared, params),
        "mcp/message" => {
            let (_, bridge) = conn_of(shared, params)?;
            let inner = params["method"].as_str().unwrap_or_default();
            log(shared, format!("agent request {inner}"));
            let id = bridge.next_id.fetch_add(1, Ordering::Relaxed);
            let mut frame = json!({"jsonrpc": "2.0", "id": id, "method": inner});
            if let Some(p) = params.get("params").filter(|p| !p.is_null()) {
                frame["params"] = p.clone();
            }
            let (tx, rx) = oneshot::channel();
            bridge.waiting.lock().unwrap().insert(id, tx);
            write(&bridge, &frame)?;
            let answer = tokio::time::timeout(DEFAULT_TIMEOUT, rx)
                .await
                .map_err(|_| {
                    RpcError::new(-32603, format!("the MCP server did not answer {inner}"))
                })?
                .map_err(|_| RpcError::new(-32603, "the MCP server exited"))?;
            match answer.get("error") {
                Some(e) => Err(RpcError::from_json(e)),
                None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
            }
        }
        "mcp/disconnect" => {
            let (id, bridge) = conn_of(shared, params)?;
            shared.lock().mcp.open.remove(&id);
            log(shared, format!("disconnect {id}"));
            let child = bridge.child.lock().unwrap().take();
            if let Some(mut c) = child {
                let _ = c.start_kill();
                let _ = c.wait().await;
            }
            Ok(json!({}))
        }
        other => Err(RpcError::new(-32601, format!("Method not found: {other}"))),
    }
}

/// An `mcp/message` notification from the agent: a line for the server,
/// queued at once (before any later request of the agent is served).
pub(super) fn handle_notification(shared: &Arc<Shared>, params: &Value) {
    let Ok((_, bridge)) = conn_of(shared, params) else {
        return;
    };
    let inner = params["method"].as_str().unwrap_or_default();
    log(shared, format!("agent notification {inner}"));
    let mut frame = json!({"jsonrpc": "2.0", "method": inner});
    if let Some(p) = params.get("params").filter(|p| !p.is_null()) {
        frame["params"] = p.clone();
    }
    let _ = write(&bridge, &frame);
}

fn write(bridge: &Bridge, frame: &Value) -> Result<(), RpcError> {
    bridge
        .stdin
        .send(format!("{frame}\n"))
        .map_err(|_| RpcError::new(-32603, "the MCP server's stdin is closed"))
}

fn connect(shared: &Arc<Shared>, params: &Value) -> Result<Value, RpcError> {
    let server_id = params["serverId"].as_str().unwrap_or_default().to_owned();
    let (connection_id, command) = {
        let mut st = shared.lock();
        let Some(command) = st.mcp.servers.get(&server_id).cloned() else {
            return Err(RpcError::new(
                -32602,
                format!("unknown serverId {server_id:?}"),
            ));
        };
        st.mcp.next += 1;
        (format!("conn-{}", st.mcp.next), command)
    };
    log(shared, format!("connect {server_id}"));
    let mut child = Command::new(&command.0)
        .args(&command.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| RpcError::new(-32603, format!("cannot start {:?}: {e}", command.0)))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if stdin.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let bridge = Arc::new(Bridge {
        stdin: tx,
        waiting: Mutex::new(HashMap::new()),
        next_id: AtomicI64::new(1),
        child: Mutex::new(Some(child)),
    });
    shared
        .lock()
        .mcp
        .open
        .insert(connection_id.clone(), bridge.clone());
    let shared = shared.clone();
    let conn = connection_id.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                // An answer to one of the agent's requests.
                (None, Some(id)) => {
                    let tx = id
                        .as_i64()
                        .and_then(|id| bridge.waiting.lock().unwrap().remove(&id));
                    if let Some(tx) = tx {
                        let _ = tx.send(msg);
                    }
                }
                // The server's notification: to the agent.
                (Some(method), None) => {
                    log(&shared, format!("server notification {method}"));
                    let mut params = json!({"connectionId": conn, "method": method});
                    if let Some(p) = msg.get("params").filter(|p| p.is_object()) {
                        params["params"] = p.clone();
                    }
                    shared.notify_agent("mcp/message", params).await;
                }
                // The test server sends no requests of its own.
                (Some(method), Some(id)) => {
                    let answer = json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("not bridged: {method}")}});
                    let _ = write(&bridge, &answer);
                }
                (None, None) => {}
            }
        }
        // The server ended: fail what still waits on it.
        bridge.waiting.lock().unwrap().clear();
    });
    Ok(json!({"connectionId": connection_id}))
}

impl Shared {
    /// Sends a notification to the agent from support code (schema-checked).
    pub(super) async fn notify_agent(&self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let line = msg.to_string();
        {
            let mut st = self.lock();
            if let Err(e) = schema::check_client_message(&msg, &st.agent_requests) {
                st.errors.push(format!(
                    "harness bug: invalid notification from the editor: {e}"
                ));
            }
            st.transcript.push((Dir::Out, line.clone()));
        }
        self.bump();
        if let Err(e) = self.write_line(&line).await {
            eprintln!("fake editor: could not send {method}: {e}");
        }
    }
}
