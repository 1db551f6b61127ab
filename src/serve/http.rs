//! The `/acp` endpoint's HTTP side (RFD "Unified Endpoint Routing"): POST
//! carries JSON-RPC (`initialize` answered at once with `Acp-Connection-Id`,
//! the rest `202 Accepted`), GET opens the connection's or a session's SSE
//! stream, or upgrades to WebSocket, DELETE ends the connection.
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use super::conn::{Lease, Refusal};
use super::{CONNECTION_HEADER, ENDPOINT, HEALTH, SESSION_HEADER, Server, digest};

pub type Body = BoxBody<Bytes, Infallible>;

/// How long `initialize` may take before its POST is answered 504.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);
/// A comment on idle SSE streams, so proxies keep them open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) fn full(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

fn text(status: StatusCode, message: &str) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

/// A JSON-RPC error as the body of a refused POST.
fn rpc_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    full(status, "application/json", body.to_string())
}

fn header_str<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Whether the request carries the token (always, when none is configured).
fn authorized(server: &Server, req: &Request<Incoming>) -> bool {
    let Some(expected) = &server.token else {
        return true;
    };
    let presented = header_str(req, header::AUTHORIZATION.as_str()).and_then(|v| {
        let (scheme, token) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    let Some(presented) = presented else {
        return false;
    };
    bool::from(digest(presented).ct_eq(expected))
}

/// Whether the request's `Origin` (sent by browsers) is allowed: absent, or
/// on the `--allow-origin` list.
fn origin_allowed(server: &Server, req: &Request<Incoming>) -> bool {
    match req.headers().get(header::ORIGIN) {
        None => true,
        Some(v) => {
            let v = String::from_utf8_lossy(v.as_bytes())
                .trim()
                .trim_end_matches('/')
                .to_ascii_lowercase();
            server.origins.contains(&v)
        }
    }
}

/// One HTTP request.
pub(super) async fn handle(server: Arc<Server>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path();
    if path == HEALTH {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "use GET /health");
        }
        let (status, state) = if server.stopping.is_cancelled() {
            (StatusCode::SERVICE_UNAVAILABLE, "stopping")
        } else {
            (StatusCode::OK, "ok")
        };
        let body =
            json!({"status": state, "name": "acp-coder", "version": env!("CARGO_PKG_VERSION")});
        return full(status, "application/json", body.to_string());
    }
    if path != ENDPOINT {
        return text(
            StatusCode::NOT_FOUND,
            &format!("not found: ACP is served at {ENDPOINT}, the health check at {HEALTH}"),
        );
    }
    if !origin_allowed(&server, &req) {
        tracing::warn!(origin = ?req.headers().get(header::ORIGIN), "serve: origin refused");
        return text(
            StatusCode::FORBIDDEN,
            "this Origin is not allowed: start acp-coder serve with --allow-origin ORIGIN to let a browser page connect",
        );
    }
    if !authorized(&server, &req) {
        let mut r = text(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token: send `Authorization: Bearer TOKEN` with the token acp-coder serve was started with",
        );
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    if server.stopping.is_cancelled() {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "acp-coder serve is shutting down",
        );
    }
    match *req.method() {
        Method::POST => post(&server, req).await,
        Method::GET if super::ws::is_upgrade(&req) => super::ws::upgrade(&server, req),
        Method::GET => stream(&server, &req),
        Method::DELETE => delete(&server, &req),
        _ => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "/acp takes POST, GET and DELETE",
        ),
    }
}

fn connection_of(
    server: &Server,
    req: &Request<Incoming>,
) -> Result<Arc<super::conn::Conn>, Box<Response<Body>>> {
    let Some(id) = header_str(req, CONNECTION_HEADER) else {
        return Err(Box::new(text(
            StatusCode::BAD_REQUEST,
            "Acp-Connection-Id header required (the initialize response carries it)",
        )));
    };
    server.conn(id).ok_or_else(|| {
        Box::new(text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id: the connection ended; send initialize again",
        ))
    })
}

fn too_large(max: usize) -> Response<Body> {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &Value::Null,
        -32600,
        &format!("the request body is larger than {max} bytes (acp-coder serve --max-body)"),
    )
}

async fn post(server: &Arc<Server>, req: Request<Incoming>) -> Response<Body> {
    let json_type = header_str(&req, header::CONTENT_TYPE.as_str()).is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
    });
    if !json_type {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "POST needs Content-Type: application/json",
        );
    }
    let max = server.limits.max_body;
    let declared =
        header_str(&req, header::CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return too_large(max);
    }
    let conn_id = header_str(&req, CONNECTION_HEADER).map(str::to_owned);
    let session = header_str(&req, SESSION_HEADER).map(str::to_owned);
    let body = match Limited::new(req.into_body(), max).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return too_large(max);
        }
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                &format!("reading the body failed: {e}"),
            );
        }
    };
    let frame: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                -32700,
                &format!("the body is not JSON: {e}"),
            );
        }
    };
    if frame.is_array() {
        return rpc_error(
            StatusCode::NOT_IMPLEMENTED,
            &Value::Null,
            -32600,
            "batches are not supported; send one message a POST",
        );
    }
    if !frame.is_object() {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            &Value::Null,
            -32600,
            "expected one JSON-RPC 2.0 message object",
        );
    }
    let id = frame.get("id").cloned().unwrap_or(Value::Null);
    let method = frame.get("method").and_then(Value::as_str);
    let Some(conn_id) = conn_id else {
        if method == Some("initialize") && !id.is_null() {
            return initialize(server, frame, id).await;
        }
        return text(
            StatusCode::BAD_REQUEST,
            "Acp-Connection-Id header required: start with an initialize POST (without the header)",
        );
    };
    let Some(conn) = server.conn(&conn_id) else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id: the connection ended; send initialize again",
        );
    };
    match conn.incoming(frame, session.as_deref(), None) {
        Ok(()) => {
            let mut r = Response::new(Full::new(Bytes::new()).boxed());
            *r.status_mut() = StatusCode::ACCEPTED;
            r
        }
        Err(refusal) => refused(&id, &refusal),
    }
}

/// The answer to a frame a connection refused.
fn refused(id: &Value, refusal: &Refusal) -> Response<Body> {
    match refusal {
        Refusal::TooManySessions(n) => rpc_error(
            StatusCode::TOO_MANY_REQUESTS,
            id,
            -32000,
            &format!(
                "this connection already has {n} sessions (acp-coder serve --max-sessions); close one with session/close first"
            ),
        ),
        Refusal::SessionMismatch => rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32602,
            "Acp-Session-Id and params.sessionId name different sessions",
        ),
        Refusal::Closed => text(
            StatusCode::NOT_FOUND,
            "the connection has ended; send initialize again",
        ),
        Refusal::ReservedId => rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            "request ids starting with \"acp-coder-\" are reserved for the server; use another id",
        ),
    }
}

/// `initialize` without a connection: a new connection and agent; the
/// answer comes back in this response, with `Acp-Connection-Id`.
async fn initialize(server: &Arc<Server>, frame: Value, id: Value) -> Response<Body> {
    let Some(conn) = server.new_conn(false) else {
        let mut r = rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &id,
            -32000,
            &format!(
                "acp-coder serve already has {} connections (--max-connections); try again later",
                server.limits.max_connections
            ),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    if let Err(refusal) = conn.incoming(frame, None, Some(tx)) {
        conn.close();
        return refused(&id, &refusal);
    }
    let answer = match tokio::time::timeout(INITIALIZE_TIMEOUT, rx).await {
        Ok(Ok(a)) => a,
        _ => {
            conn.close();
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                "the agent did not answer initialize",
            );
        }
    };
    let failed = serde_json::from_str::<Value>(&answer).map_or(true, |v| v.get("error").is_some());
    let mut r = full(
        StatusCode::OK,
        "application/json",
        answer.as_bytes().to_vec(),
    );
    if failed {
        conn.close();
    } else if let Ok(v) = HeaderValue::from_str(&conn.id) {
        r.headers_mut().insert(CONNECTION_HEADER, v);
    }
    r
}

/// GET without an upgrade: the connection's stream, or a session's.
fn stream(server: &Arc<Server>, req: &Request<Incoming>) -> Response<Body> {
    let accepts = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .any(|v| String::from_utf8_lossy(v.as_bytes()).contains("text/event-stream"));
    if !accepts {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "GET /acp needs Accept: text/event-stream (or a WebSocket upgrade)",
        );
    }
    let conn = match connection_of(server, req) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let mailbox = match header_str(req, SESSION_HEADER) {
        None => conn.main.clone(),
        Some(s) => match conn.session(s) {
            Some(m) => m,
            // A stored session, about to be loaded on this connection.
            None if server.store.exists(s) => match conn.open_session(s) {
                Ok(m) => m,
                Err(refusal) => return refused(&Value::Null, &refusal),
            },
            None => {
                return text(
                    StatusCode::NOT_FOUND,
                    "unknown Acp-Session-Id for this connection",
                );
            }
        },
    };
    let Some(lease) = mailbox.lease() else {
        return text(
            StatusCode::CONFLICT,
            "this stream is already open on another request",
        );
    };
    sse(server, lease, &conn.id)
}

/// The SSE response: each frame one `data:` event (encoded by sse-stream),
/// a keep-alive comment when idle; it ends when the connection does.
fn sse(server: &Server, lease: Lease, conn_id: &str) -> Response<Body> {
    let held = server.streams.token();
    let events = futures::stream::unfold((lease, held), |(mut lease, held)| async move {
        let frame = lease.recv().await?;
        let event = sse_stream::Sse::default().data(frame.to_string());
        Some((Ok::<_, Infallible>(event), (lease, held)))
    });
    let body = sse_stream::SseBody::new(events)
        .with_keep_alive::<Sleep>(sse_stream::KeepAlive::new().interval(KEEP_ALIVE));
    let mut r = Response::new(BodyExt::boxed(body));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(conn_id) {
        h.insert(CONNECTION_HEADER, v);
    }
    r
}

/// tokio's timer for sse-stream's keep-alive.
struct Sleep(std::pin::Pin<Box<tokio::time::Sleep>>);

impl std::future::Future for Sleep {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl sse_stream::Timer for Sleep {
    fn from_duration(duration: Duration) -> Self {
        Self(Box::pin(tokio::time::sleep(duration)))
    }
    fn reset(mut self: std::pin::Pin<&mut Self>, instant: std::time::Instant) {
        self.0
            .as_mut()
            .reset(tokio::time::Instant::from_std(instant));
    }
}

fn delete(server: &Server, req: &Request<Incoming>) -> Response<Body> {
    match connection_of(server, req) {
        Ok(c) => {
            server.drop_conn(&c.id);
            let mut r = Response::new(Full::new(Bytes::new()).boxed());
            *r.status_mut() = StatusCode::ACCEPTED;
            r
        }
        Err(r) => *r,
    }
}
