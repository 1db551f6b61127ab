//! `$/cancel_request` (ACP §1, either direction; issue 17 item 3).
//!
//! Outgoing: [`super::Peer::request`] withdraws a request whose future is
//! dropped before the answer came. Incoming: the reader loop keeps an abort
//! handle per running request ([`Running`]) and [`abort_request`] fires it.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::decode_params;
use super::message::Id;

/// The notification's method name.
pub const CANCEL_REQUEST: &str = "$/cancel_request";

pub(super) type Running = Arc<Mutex<HashMap<Id, futures::future::AbortHandle>>>;

/// An incoming `$/cancel_request {requestId}` (ACP §1): aborts that request
/// if it is still running (its task then answers `-32800`); an unknown or
/// finished id is ignored, as the protocol allows.
pub(super) fn abort_request(running: &Running, params: Option<&RawValue>) {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct CancelRequest {
        request_id: serde_json::Value,
    }
    let Ok(p) = decode_params::<CancelRequest>(params) else {
        tracing::debug!("malformed $/cancel_request");
        return;
    };
    let id = match p.request_id {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(n) => Id::Num(n),
            None => return,
        },
        serde_json::Value::String(s) => Id::Str(s),
        _ => return,
    };
    if let Some(abort) = running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id)
    {
        tracing::info!(%id, "aborting a request on $/cancel_request");
        abort.abort();
    }
}
