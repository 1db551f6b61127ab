//! The official ACP Rust SDK's remote client (`agent-client-protocol-http`'s
//! `HttpClient`) against `acp-coder serve` (tests/suite/serve_rust_client.rs,
//! issue 46 item 3).
//!
//! ```text
//! acp-rs-client URL WORKDIR
//! ```
//!
//! URL is `http://HOST:PORT/acp` (HTTP+SSE) or `ws://HOST:PORT/acp`
//! (WebSocket): `HttpClient` picks the transport by the scheme. One scenario,
//! the same as tests/acp_py/client.py: initialize, session/new, a tool-using
//! turn with a permission request (answered allow-once), a second turn
//! cancelled with session/cancel while it streams, then a disconnect, a new
//! connection and session/load of the session (its history replayed). Prints
//! one JSON object: what happened, and every frame each connection sent and
//! received (the Rust test checks them against the ACP schema).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, LoadSessionRequest, NewSessionRequest,
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, TextContent,
};
use agent_client_protocol::{Agent, Channel, Client, ConnectTo, TransportFrame};
use agent_client_protocol_http::HttpClient;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

type Log = Arc<Mutex<Vec<Value>>>;

/// `HttpClient` with every frame it carries kept, in order, as the client
/// saw them.
struct Recorded {
    inner: HttpClient,
    log: Log,
}

fn record(log: &Log, dir: &str, frame: &TransportFrame) {
    let msg = match frame {
        TransportFrame::Single(m) => serde_json::to_value(m).unwrap_or(Value::Null),
        other => json!({ "malformed": format!("{other:?}") }),
    };
    log.lock().unwrap().push(json!({ "dir": dir, "msg": msg }));
}

impl ConnectTo<Client> for Recorded {
    async fn connect_to(
        self,
        client: impl ConnectTo<Agent>,
    ) -> Result<(), agent_client_protocol::Error> {
        let (wire, driver) = ConnectTo::<Client>::into_channel_and_future(self.inner);
        let mut driver = driver.expect("HttpClient owns its transport driver");
        let (ours, tee) = Channel::duplex();
        let sealer = ours.tx.clone();
        let (mut from_client, to_client) = tee.into_parts();
        let (mut from_agent, to_agent) = wire.into_parts();
        let (up_log, down_log) = (self.log.clone(), self.log);
        let up = tokio::spawn(async move {
            while let Some(f) = from_client.next().await {
                record(&up_log, "out", &f);
                if to_agent.unbounded_send(f).is_err() {
                    break;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(f) = from_agent.next().await {
                record(&down_log, "in", &f);
                if to_client.unbounded_send(f).is_err() {
                    break;
                }
            }
        });
        match futures::future::select(
            std::pin::pin!(client.connect_to(ours)),
            std::pin::pin!(&mut driver),
        )
        .await
        {
            futures::future::Either::Left((result, _)) => {
                result?;
                // Everything the client sent reaches the transport, then it
                // finishes (HTTP: DELETE; WebSocket: close).
                sealer.close_channel();
                let _ = up.await;
                let _ = driver.request_finish();
                driver.await
            }
            futures::future::Either::Right((result, _)) => result,
        }
    }
}

#[derive(Default)]
struct Seen {
    updates: Vec<Value>,
    permissions: u32,
    watching: bool,
}

fn text(s: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(s.to_string()))]
}

fn stop_reason(r: &impl serde::Serialize) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

/// One connection: `body` runs after `initialize`.
async fn connect<R>(
    url: &str,
    log: Log,
    seen: Arc<Mutex<Seen>>,
    streaming: Arc<Notify>,
    body: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, agent_client_protocol::Error>,
) -> Result<R, Box<dyn std::error::Error>> {
    let transport = Recorded {
        inner: HttpClient::with_endpoint(url)?,
        log,
    };
    let on_update = seen.clone();
    let on_permission = seen;
    let r = Client
        .v1()
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                let update = serde_json::to_value(&n.update).unwrap_or(Value::Null);
                let kind = update["sessionUpdate"].as_str().unwrap_or("").to_string();
                let text = update["content"]["text"].clone();
                let mut s = on_update.lock().unwrap();
                s.updates.push(json!({ "kind": kind, "text": text }));
                if kind == "agent_message_chunk" && s.watching {
                    streaming.notify_one();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                on_permission.lock().unwrap().permissions += 1;
                let allow = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::AllowOnce)
                    .map(|o| o.option_id.clone());
                responder.respond(RequestPermissionResponse::new(match allow {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                }))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            body(cx).await
        })
        .await?;
    Ok(r)
}

async fn run(url: &str, workdir: PathBuf) -> Result<Value, Box<dyn std::error::Error>> {
    let (first_log, second_log): (Log, Log) = Default::default();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let streaming = Arc::new(Notify::new());
    let mut out = serde_json::Map::new();

    let (sid, first, second) = connect(
        url,
        first_log.clone(),
        seen.clone(),
        streaming.clone(),
        async |cx| {
            let session = cx
                .send_request(NewSessionRequest::new(workdir.clone()))
                .block_task()
                .await?;
            let sid = session.session_id;
            let done = cx
                .send_request(PromptRequest::new(sid.clone(), text("write a.txt")))
                .block_task()
                .await?;
            seen.lock().unwrap().watching = true;
            let turn = cx
                .send_request(PromptRequest::new(sid.clone(), text("go slowly")))
                .block_task();
            let cancel = async {
                // The cancel goes out once the slow turn streams.
                let _ = tokio::time::timeout(Duration::from_secs(30), streaming.notified()).await;
                cx.send_notification(CancelNotification::new(sid.clone()))
            };
            let (cancelled, sent) =
                tokio::join!(tokio::time::timeout(Duration::from_secs(30), turn), cancel);
            sent?;
            let cancelled = cancelled.map_err(|_| {
                agent_client_protocol::Error::internal_error()
                    .data("the cancelled turn did not end within 30 s")
            })??;
            Ok((
                sid,
                stop_reason(&done.stop_reason),
                stop_reason(&cancelled.stop_reason),
            ))
        },
    )
    .await?;
    {
        let s = seen.lock().unwrap();
        out.insert("sessionId".into(), json!(sid.to_string()));
        out.insert("first".into(), first);
        out.insert("permissions".into(), json!(s.permissions));
        let tool_updates = s
            .updates
            .iter()
            .filter(|u| u["kind"] == "tool_call" || u["kind"] == "tool_call_update")
            .count();
        out.insert("toolUpdates".into(), json!(tool_updates));
        out.insert("second".into(), second);
    }

    // A new connection: session/load replays the session.
    let replayed = Arc::new(Mutex::new(Seen::default()));
    connect(
        url,
        second_log.clone(),
        replayed.clone(),
        Arc::new(Notify::new()),
        async |cx| {
            cx.send_request(LoadSessionRequest::new(sid.clone(), workdir.clone()))
                .block_task()
                .await?;
            // Replayed updates may trail the answer on another stream: wait
            // for them (up to 10 s) before disconnecting.
            for _ in 0..200 {
                if replayed
                    .lock()
                    .unwrap()
                    .updates
                    .iter()
                    .any(|u| u["kind"] == "user_message_chunk")
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(())
        },
    )
    .await?;
    let user_chunks: Vec<Value> = replayed
        .lock()
        .unwrap()
        .updates
        .iter()
        .filter(|u| u["kind"] == "user_message_chunk")
        .cloned()
        .collect();
    out.insert("replayed".into(), json!(user_chunks));
    let transcripts = vec![
        Value::Array(first_log.lock().unwrap().clone()),
        Value::Array(second_log.lock().unwrap().clone()),
    ];
    out.insert("transcripts".into(), Value::Array(transcripts));
    Ok(Value::Object(out))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, workdir] = args.as_slice() else {
        eprintln!(
            "usage: acp-rs-client URL WORKDIR (URL: http://HOST:PORT/acp or ws://HOST:PORT/acp)"
        );
        return std::process::ExitCode::from(2);
    };
    match run(url, PathBuf::from(workdir)).await {
        Ok(v) => {
            println!("{v}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("acp-rs-client: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
