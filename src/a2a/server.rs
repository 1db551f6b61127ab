//! The HTTP side of `acp-coder a2a` (hyper, HTTP/1.1): the agent card at
//! `/.well-known/agent-card.json` for anyone, and the JSON-RPC endpoint at
//! `/` behind the bearer token, answering with JSON or, for the streaming
//! methods, Server-Sent Events (A2A spec §"JSON-RPC binding").
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::bridge::{Bridge, Started};
use super::compat;
use super::tasks::Task;
use super::wire::{self, A2aError, code, method, object, state};

pub type Body = BoxBody<Bytes, Infallible>;

/// The agent card's path (A2A spec §"Agent discovery"), and the 0.3 one.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
const CARD_PATH_V03: &str = "/.well-known/agent.json";

/// What every request shares.
pub struct Server {
    pub bridge: Arc<Bridge>,
    /// The agent card, serialised once.
    pub card: Bytes,
    /// Listening on every address (0.0.0.0, ::): the card's URL is then
    /// the one the client reached, from its `Host` header.
    pub card_from_host: bool,
    pub token: String,
    /// Largest request body accepted.
    pub max_body: usize,
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    if let Ok(v) = header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

fn rpc_json(status: StatusCode, body: &Value) -> Response<Body> {
    // A `Value` always serialises.
    full(
        status,
        "application/json",
        serde_json::to_vec(body).unwrap_or_default(),
    )
}

fn rpc_error(status: StatusCode, id: &Value, e: &A2aError) -> Response<Body> {
    rpc_json(
        status,
        &json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
    )
}

/// `http://HOST/` from the request's `Host` header, if it is a plain
/// `host[:port]` (nothing that could smuggle markup or a path into the
/// card); `https` behind a TLS proxy that says `X-Forwarded-Proto: https`.
fn host_url(req: &Request<Incoming>) -> Option<String> {
    let host = req.headers().get(header::HOST)?.to_str().ok()?;
    let plain = !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
    let tls = req
        .headers()
        .get("x-forwarded-proto")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
    let scheme = if tls { "https" } else { "http" };
    plain.then(|| format!("{scheme}://{host}/"))
}

/// Compares the presented token with ours in time independent of where
/// they differ.
fn token_matches(presented: &[u8], expected: &[u8]) -> bool {
    if presented.len() != expected.len() {
        return false;
    }
    presented
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .is_some_and(|t| token_matches(t.trim().as_bytes(), token.as_bytes()))
}

/// One HTTP request.
pub async fn handle(server: Arc<Server>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path();
    if path == CARD_PATH || path == CARD_PATH_V03 {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "use GET\n");
        }
        let card = match host_url(&req).filter(|_| server.card_from_host) {
            Some(url) => Bytes::from(super::agent_card(&url).to_string()),
            None => server.card.clone(),
        };
        return full(StatusCode::OK, "application/json", card);
    }
    if path != "/" {
        return full(
            StatusCode::NOT_FOUND,
            "text/plain",
            format!("not found: the JSON-RPC endpoint is POST /, the agent card GET {CARD_PATH}\n"),
        );
    }
    if req.method() != Method::POST {
        return full(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "the JSON-RPC endpoint takes POST\n",
        );
    }
    if !authorized(&req, &server.token) {
        let mut r = rpc_error(
            StatusCode::UNAUTHORIZED,
            &Value::Null,
            &A2aError::new(
                code::INVALID_REQUEST,
                "missing or wrong bearer token: send `Authorization: Bearer <token>` with the token `acp-coder a2a` printed at start, or its configured a2a_token / ACP_CODER_A2A_TOKEN",
            ),
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let version = req
        .headers()
        .get(VERSION_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
        .filter(|v| !v.is_empty() && !version_supported(v));
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > server.max_body as u64) {
        return too_large(server.max_body);
    }
    let body = match Limited::new(req.into_body(), server.max_body)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return too_large(server.max_body);
        }
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                &A2aError::new(
                    code::INVALID_REQUEST,
                    format!("reading the request body failed: {e}"),
                ),
            );
        }
    };
    rpc(&server, &body, version.as_deref()).await
}

/// The header naming the protocol version a client speaks (A2A 1.0
/// §"Versioning"; absent means 0.3).
const VERSION_HEADER: &str = "a2a-version";

/// Whether `A2A-Version: v` is 1.0 or 0.3 (the patch level does not matter).
fn version_supported(v: &str) -> bool {
    let mut parts = v.split('.');
    matches!(
        (parts.next(), parts.next()),
        (Some("1"), Some("0")) | (Some("0"), Some("3"))
    )
}

/// 413 for a body over the limit (declared or streamed).
fn too_large(max: usize) -> Response<Body> {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &Value::Null,
        &A2aError::new(
            code::INVALID_REQUEST,
            format!(
                "the request body is larger than {max} bytes; send large files as url parts or let the agent read them from the served directory"
            ),
        ),
    )
}

/// The JSON-RPC 2.0 envelope of one request: its id, method and params (an
/// object). `Err` carries the id to answer with (null when unreadable).
fn envelope(
    body: &[u8],
    unsupported_version: Option<&str>,
) -> Result<(Value, String, Value), (Value, A2aError)> {
    let request: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            A2aError::new(code::PARSE, format!("the body is not JSON: {e}")),
        )
    })?;
    let Value::Object(mut obj) = request else {
        return Err((
            Value::Null,
            A2aError::new(
                code::INVALID_REQUEST,
                "expected one JSON-RPC 2.0 request object (batches are not supported)",
            ),
        ));
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::String(_) | Value::Number(_) | Value::Null);
    let method_name = obj.get("method").and_then(Value::as_str);
    let (Some(method_name), true, Some("2.0")) = (
        method_name,
        id_ok,
        obj.get("jsonrpc").and_then(Value::as_str),
    ) else {
        let id = if id_ok { id } else { Value::Null };
        return Err((
            id,
            A2aError::new(
                code::INVALID_REQUEST,
                "not a JSON-RPC 2.0 request: it needs \"jsonrpc\": \"2.0\", a string \"method\" and a string or number \"id\"",
            ),
        ));
    };
    if let Some(v) = unsupported_version {
        return Err((
            id,
            A2aError::new(
                code::VERSION_NOT_SUPPORTED,
                format!(
                    "A2A-Version {v:?} is not supported: acp-coder speaks 1.0 (and the 0.3 method names)"
                ),
            ),
        ));
    }
    let method_name = method_name.to_owned();
    let params = obj.remove("params").unwrap_or_else(|| json!({}));
    if !params.is_object() {
        return Err((id, A2aError::params("params must be an object")));
    }
    Ok((id, method_name, params))
}

/// One JSON-RPC request body.
async fn rpc(server: &Server, body: &[u8], unsupported_version: Option<&str>) -> Response<Body> {
    let ok = StatusCode::OK;
    let (id, method_name, params) = match envelope(body, unsupported_version) {
        Ok(e) => e,
        Err((id, e)) => return rpc_error(ok, &id, &e),
    };
    let method_name = method_name.as_str();
    let v03 = compat::is_v03(method_name);
    let params = if v03 {
        compat::params_from_v03(method_name, params)
    } else {
        params
    };
    let bridge = &server.bridge;
    let result = match method_name {
        method::SEND => {
            return match send(bridge, params).await {
                Ok((task, history)) => task_reply(&id, &task.snapshot_json(history), true),
                Err(e) => rpc_error(ok, &id, &e),
            };
        }
        method::V03_SEND => send(bridge, params)
            .await
            .map(|(task, history)| object([("task", task.snapshot(history))])),
        method::STREAM | method::V03_STREAM => match bridge.send(params, true).await {
            Ok(Started {
                snapshot,
                events: Some(events),
                ..
            }) => return sse(id, snapshot, events, v03),
            Ok(_) => Err(A2aError::new(
                code::INTERNAL,
                "the task's stream did not open",
            )),
            Err(e) => Err(e),
        },
        method::GET | method::V03_GET => {
            let found = wire::decode::<wire::TaskIdParams>(params).and_then(|p| {
                let history = wire::history_length(p.history_length)?;
                Ok((bridge.hub.get(&p.id)?, history))
            });
            match found {
                Ok((task, history)) if !v03 => {
                    return task_reply(&id, &task.snapshot_json(history), false);
                }
                Ok((task, history)) => Ok(task.snapshot(history)),
                Err(e) => Err(e),
            }
        }
        method::CANCEL | method::V03_CANCEL => match wire::decode::<wire::TaskIdParams>(params) {
            Ok(p) => bridge.cancel(&p.id).await,
            Err(e) => Err(e),
        },
        method::SUBSCRIBE | method::V03_SUBSCRIBE => match subscribe(bridge, params) {
            Ok((snapshot, events)) => return sse(id, snapshot, events, v03),
            Err(e) => Err(e),
        },
        method::LIST => super::list::list(&bridge.hub, params),
        m if method::PUSH_CONFIG.contains(&m) => Err(A2aError::new(
            code::PUSH_NOT_SUPPORTED,
            "push notifications are not supported (the agent card says pushNotifications: false); use SendStreamingMessage or SubscribeToTask, or poll with GetTask",
        )),
        method::EXTENDED_CARD | method::V03_EXTENDED_CARD => Err(A2aError::new(
            code::EXTENDED_CARD_NOT_CONFIGURED,
            format!(
                "there is no extended agent card; the agent card at {CARD_PATH} is all there is"
            ),
        )),
        other => Err(A2aError::new(
            code::METHOD_NOT_FOUND,
            format!(
                "unknown method {other:?}: acp-coder serves SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask (and the 0.3 names)"
            ),
        )),
    };
    match result {
        Ok(mut r) => {
            if v03 {
                r = compat::result_to_v03(method_name, r);
            }
            rpc_json(
                ok,
                &object([("jsonrpc", "2.0".into()), ("id", id), ("result", r)]),
            )
        }
        Err(e) => rpc_error(ok, &id, &e),
    }
}

/// `SendMessage`: the task once it settles (finished or waiting for input),
/// or at once with `configuration.returnImmediately`; with the number of
/// history messages to show.
async fn send(bridge: &Arc<Bridge>, params: Value) -> Result<(Arc<Task>, Option<i64>), A2aError> {
    let immediately = params["configuration"]["returnImmediately"]
        .as_bool()
        .unwrap_or(false);
    let history = wire::history_length(params["configuration"]["historyLength"].as_i64())?;
    let Started { task, .. } = bridge.send(params, false).await?;
    if !immediately {
        task.settled().await;
    }
    Ok((task, history))
}

/// The reply whose result is a task, written from the task's JSON text
/// (`SendMessage` wraps it as `{"task": …}`, `GetTask` does not).
fn task_reply(id: &Value, task: &RawValue, wrapped: bool) -> Response<Body> {
    #[derive(serde::Serialize)]
    struct Reply<'a, R> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: R,
    }
    #[derive(serde::Serialize)]
    struct Wrapped<'a> {
        task: &'a RawValue,
    }
    let body = if wrapped {
        serde_json::to_vec(&Reply {
            jsonrpc: "2.0",
            id,
            result: Wrapped { task },
        })
    } else {
        serde_json::to_vec(&Reply {
            jsonrpc: "2.0",
            id,
            result: task,
        })
    };
    full(StatusCode::OK, "application/json", body.unwrap_or_default())
}

fn subscribe(
    bridge: &Bridge,
    params: Value,
) -> Result<(Value, mpsc::UnboundedReceiver<Value>), A2aError> {
    let p: wire::TaskIdParams = wire::decode(params)?;
    let task = bridge.hub.get(&p.id)?;
    let current = task.state();
    if state::is_terminal(current) {
        return Err(A2aError::new(
            code::UNSUPPORTED,
            format!(
                "task {} is finished ({current}); use GetTask to read it",
                p.id
            ),
        ));
    }
    Ok(task.subscribe())
}

/// Whether a stream event settles the task (the stream then ends).
fn ends_stream(event: &Value) -> bool {
    event["statusUpdate"]["status"]["state"]
        .as_str()
        .is_some_and(state::is_interrupted)
}

/// An SSE response: the task as it is, then each event, until the task
/// finishes or waits for input.
fn sse(
    id: Value,
    first: Value,
    events: mpsc::UnboundedReceiver<Value>,
    v03: bool,
) -> Response<Body> {
    let frame = move |result: Value| -> Result<Frame<Bytes>, Infallible> {
        let result = if v03 {
            compat::event_to_v03(result)
        } else {
            result
        };
        let body = object([
            ("jsonrpc", "2.0".into()),
            ("id", id.clone()),
            ("result", result),
        ]);
        Ok(Frame::data(Bytes::from(format!("data: {body}\n\n"))))
    };
    let done = first["status"]["state"]
        .as_str()
        .is_some_and(state::is_terminal);
    let head = futures::stream::once(std::future::ready(frame(object([("task", first)]))));
    let rest = futures::stream::unfold((events, done), |(mut rx, done)| async move {
        if done {
            return None;
        }
        let event = rx.recv().await?;
        let end = ends_stream(&event);
        Some((event, (rx, end)))
    })
    .map(frame);
    let body = StreamBody::new(head.chain(rest));
    let mut r = Response::new(BodyExt::boxed(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(token_matches(b"abc", b"abc"));
        assert!(!token_matches(b"abd", b"abc"));
        assert!(!token_matches(b"ab", b"abc"));
        assert!(!token_matches(b"", b"abc"));
    }

    #[test]
    fn versions() {
        for v in ["1.0", "1.0.0", "0.3", "0.3.2"] {
            assert!(version_supported(v), "{v}");
        }
        for v in ["2.0", "1.1", "0.2", "1", "abc"] {
            assert!(!version_supported(v), "{v}");
        }
    }

    #[test]
    fn interrupted_states_end_streams() {
        assert!(ends_stream(
            &json!({"statusUpdate": {"status": {"state": state::INPUT_REQUIRED}}})
        ));
        assert!(ends_stream(
            &json!({"statusUpdate": {"status": {"state": state::COMPLETED}}})
        ));
        assert!(!ends_stream(
            &json!({"statusUpdate": {"status": {"state": state::WORKING}}})
        ));
        assert!(!ends_stream(&json!({"artifactUpdate": {}})));
    }
}
