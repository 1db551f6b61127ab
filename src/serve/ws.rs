//! `GET /acp` with `Upgrade: websocket` (RFD "WebSocket Request Flow"): a new
//! connection, `Acp-Connection-Id` in the 101 response, then JSON-RPC in
//! text frames both ways (binary frames are ignored). The handshake and the
//! frames are tungstenite's; hyper hands over the upgraded socket.
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::conn::{Conn, Refusal};
use super::http::{Body, full};
use super::{CONNECTION_HEADER, Server};

fn has_token(req: &Request<Incoming>, name: header::HeaderName, token: &str) -> bool {
    req.headers().get_all(name).iter().any(|v| {
        String::from_utf8_lossy(v.as_bytes())
            .split(',')
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    })
}

pub(super) fn is_upgrade(req: &Request<Incoming>) -> bool {
    has_token(req, header::UPGRADE, "websocket")
}

pub(super) fn upgrade(server: &Arc<Server>, mut req: Request<Incoming>) -> Response<Body> {
    let key = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned();
    let version_ok = req
        .headers()
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_some_and(|v| v.as_bytes() == b"13");
    let (Some(key), true, true) = (
        key,
        version_ok,
        has_token(&req, header::CONNECTION, "upgrade"),
    ) else {
        return full(
            StatusCode::BAD_REQUEST,
            "text/plain",
            "a WebSocket upgrade needs Connection: Upgrade, Sec-WebSocket-Key and Sec-WebSocket-Version: 13\n",
        );
    };
    let Some(conn) = server.new_conn(true) else {
        let mut r = full(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            format!(
                "acp-coder serve already has {} connections (--max-connections); try again later\n",
                server.limits.max_connections
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let max = server.limits.max_body;
    let task_conn = conn.clone();
    server.streams.spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                let config = WebSocketConfig::default()
                    .max_message_size(Some(max))
                    .max_frame_size(Some(max));
                let socket = WebSocketStream::from_raw_socket(
                    hyper_util::rt::TokioIo::new(upgraded),
                    Role::Server,
                    Some(config),
                )
                .await;
                run(socket, task_conn).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "serve: WebSocket upgrade failed");
                task_conn.close();
            }
        }
    });
    let mut r = Response::new(http_body_util::BodyExt::boxed(http_body_util::Empty::new()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Ok(v) = HeaderValue::from_str(&conn.id) {
        h.insert(CONNECTION_HEADER, v);
    }
    r
}

/// Moves frames until either side ends; the connection then closes (its
/// agent shuts down), and the socket carries its last frames before the close.
async fn run<S>(socket: WebSocketStream<S>, conn: Arc<Conn>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = socket.split();
    let Some(mut lease) = conn.main.lease() else {
        conn.close();
        return;
    };
    let writer = tokio::spawn(async move {
        while let Some(frame) = lease.recv().await {
            if sink.send(Message::text(frame.to_string())).await.is_err() {
                return;
            }
        }
        let _ = sink.close().await;
    });
    while let Some(message) = source.next().await {
        let text = match message {
            Ok(Message::Text(t)) => t,
            Ok(Message::Close(_)) => break,
            Ok(_) => continue,
            Err(e) => {
                tracing::info!(connection = %conn.id, error = %e, "serve: WebSocket read failed");
                break;
            }
        };
        incoming(&conn, text.as_str());
    }
    conn.close();
    let _ = writer.await;
}

/// One text frame from the client.
fn incoming(conn: &Arc<Conn>, text: &str) {
    let error = |id: &Value, code: i64, message: &str| {
        let e = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        conn.main.push(e.to_string().into());
    };
    let frame: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return error(&Value::Null, -32700, &format!("not JSON: {e}")),
    };
    if !frame.is_object() {
        return error(
            &Value::Null,
            -32600,
            "expected one JSON-RPC 2.0 message object (batches are not supported)",
        );
    }
    let id = frame.get("id").cloned();
    match conn.incoming(frame, None, None) {
        Ok(()) | Err(Refusal::Closed) => {}
        Err(r) => {
            if let Some(id) = id {
                let message = match r {
                    Refusal::TooManySessions(n) => format!(
                        "this connection already has {n} sessions (acp-coder serve --max-sessions); close one with session/close first"
                    ),
                    Refusal::ReservedId => "request ids starting with \"acp-coder-\" are reserved for the server; use another id".to_owned(),
                    _ => "refused".to_owned(),
                };
                error(&id, -32000, &message);
            }
        }
    }
}
