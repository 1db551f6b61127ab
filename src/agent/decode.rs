//! The whole decoding path of incoming bytes, as one function per step, for
//! the fuzzer (`fuzz/`) and the corpus replay test: frames
//! ([`crate::rpc::LineReader`]) → envelope ([`crate::rpc::Incoming::parse`]) →
//! the params of each method through the agent's own dispatch table
//! ([`EditorRequest::decode`], [`EditorNotification::decode`]), and the
//! editor's results into the types the editor client decodes into.
//!
//! Every step must return an error the agent can send, never panic; the
//! checks in [`check_input`] state what else must hold (errors are one line,
//! ids echo back as JSON, prompt blocks serialize back to what was read, as
//! the session log needs).
use serde_json::value::RawValue;

use super::handlers::requests::{EditorNotification, EditorRequest};
use crate::acp::{
    ContentBlock, CreateTerminalResponse, PromptRequest, ReadTextFileResponse,
    RequestPermissionResponse, TerminalExitStatus, TerminalOutputResponse, method,
};
use crate::rpc::{Frame, Id, Incoming, LineReader, RpcError, decode_params};

/// Requests the agent sends the editor, whose results it decodes.
pub const REVERSE_METHODS: [&str; 10] = [
    method::FS_READ,
    method::FS_WRITE,
    method::REQUEST_PERMISSION,
    method::TERMINAL_CREATE,
    method::TERMINAL_OUTPUT,
    method::TERMINAL_WAIT,
    method::TERMINAL_KILL,
    method::TERMINAL_RELEASE,
    method::SESSION_UPDATE,
    method::ELICITATION_CREATE,
];

/// A decoded incoming message's params, for the checks that follow decoding.
#[derive(Debug)]
pub enum Decoded {
    Prompt(PromptRequest),
    Other,
    /// A method the agent does not serve (answered `-32601`, or ignored for notifications).
    Unknown,
}

/// Decodes an editor request as the agent's handler does
/// ([`EditorRequest::decode`], after reading a prompt's session id first).
pub fn decode_request(method: &str, params: Option<&RawValue>) -> Result<Decoded, RpcError> {
    if method == method::SESSION_PROMPT {
        let _ = EditorRequest::prompt_session(params);
    }
    Ok(match EditorRequest::decode(method, params)? {
        Some(EditorRequest::Prompt(p)) => Decoded::Prompt(p),
        Some(_) => Decoded::Other,
        None => Decoded::Unknown,
    })
}

/// Decodes an editor notification as the agent's handler does.
pub fn decode_notification(method: &str, params: Option<&RawValue>) -> Result<Decoded, RpcError> {
    Ok(match EditorNotification::decode(method, params)? {
        Some(_) => Decoded::Other,
        None => Decoded::Unknown,
    })
}

/// Decodes the editor's `result` for one of the agent's own requests, as
/// [`crate::rpc::Peer::request`] does for the editor client.
pub fn decode_response(method: &str, result: Option<&RawValue>) -> Result<(), RpcError> {
    match method {
        method::FS_READ => decode_params::<ReadTextFileResponse>(result).map(drop),
        method::REQUEST_PERMISSION => decode_params::<RequestPermissionResponse>(result).map(drop),
        method::ELICITATION_CREATE => {
            decode_params::<crate::acp::CreateElicitationResponse>(result).map(drop)
        }
        method::TERMINAL_CREATE => decode_params::<CreateTerminalResponse>(result).map(drop),
        method::TERMINAL_OUTPUT => decode_params::<TerminalOutputResponse>(result).map(drop),
        method::TERMINAL_WAIT => decode_params::<TerminalExitStatus>(result).map(drop),
        _ => decode_params::<serde_json::Value>(result).map(drop),
    }
}

/// One fuzz input: the agent's real limits with a reader buffer size taken
/// from the input's length (lines split across reads at varying offsets),
/// then a tiny frame limit so over-long lines are explored too.
pub fn fuzz_one(data: &[u8]) -> Summary {
    let summary = check_input(data, 16 * 1024 * 1024, data.len() % 61 + 1);
    check_input(data, 48, 5);
    summary
}

/// What [`check_input`] saw, for the replay test's assertions.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub frames: usize,
    pub too_long: usize,
    /// Frames answered with an error before dispatch (parse, envelope).
    pub rejected: usize,
    pub requests: usize,
    pub notifications: usize,
    pub responses: usize,
    /// Known methods whose params (or results) failed to decode.
    pub bad_params: usize,
}

/// Runs `input` through the agent's whole decoding path, panicking if any
/// invariant breaks: frame bounds, one-line serializable errors, ids that
/// echo back as JSON, prompts that survive a session-log round trip.
///
/// `max_frame` is the frame size limit; `chunk` the reader's buffer size
/// (small values exercise lines split across reads). Responses are decoded
/// as the answer to `REVERSE_METHODS[id % len]`.
pub fn check_input(input: &[u8], max_frame: usize, chunk: usize) -> Summary {
    let max_frame = max_frame.max(1);
    let reader = tokio::io::BufReader::with_capacity(chunk.max(1), input);
    let mut lines = LineReader::new(reader, max_frame);
    let mut summary = Summary::default();
    // An in-memory reader never waits: polling once per frame is enough.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    loop {
        let mut next = std::pin::pin!(lines.next());
        let frame = match next.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r.expect("reading memory cannot fail"),
            std::task::Poll::Pending => panic!("an in-memory reader returned Pending"),
        };
        let Some(frame) = frame else { break };
        summary.frames += 1;
        let line = match frame {
            Frame::TooLong { len } => {
                assert!(
                    len > max_frame,
                    "TooLong({len}) within the limit {max_frame}"
                );
                summary.too_long += 1;
                continue;
            }
            Frame::Line(line) => line,
        };
        assert!(line.len() <= max_frame, "a line longer than the limit");
        assert!(!line.contains(&b'\n'), "a line containing a newline");
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match Incoming::parse(&line) {
            Err((id, err)) => {
                summary.rejected += 1;
                check_error(&err);
                check_id(&id);
            }
            Ok(Incoming::Request { id, method, params }) => {
                summary.requests += 1;
                check_id(&id);
                check_params(decode_request(&method, params.as_deref()), &mut summary);
            }
            Ok(Incoming::Notification { method, params }) => {
                summary.notifications += 1;
                check_params(
                    decode_notification(&method, params.as_deref()),
                    &mut summary,
                );
            }
            Ok(Incoming::Response { id, result }) => {
                summary.responses += 1;
                check_id(&id);
                let n = match id {
                    Id::Num(n) => n.unsigned_abs() as usize,
                    Id::Str(s) => s.len(),
                    Id::Other(_) => 0,
                };
                let method = REVERSE_METHODS[n % REVERSE_METHODS.len()];
                match result {
                    Ok(result) => {
                        if let Err(e) = decode_response(method, result.as_deref()) {
                            summary.bad_params += 1;
                            check_error(&e);
                        }
                    }
                    Err(e) => check_error(&e),
                }
            }
        }
    }
    summary
}

fn check_params(decoded: Result<Decoded, RpcError>, summary: &mut Summary) {
    match decoded {
        Err(e) => {
            summary.bad_params += 1;
            check_error(&e);
        }
        Ok(Decoded::Prompt(p)) => check_prompt_round_trip(&p.prompt),
        Ok(Decoded::Other | Decoded::Unknown) => {}
    }
}

/// An error goes on the wire as one line of valid JSON.
fn check_error(e: &RpcError) {
    assert!(
        !e.message.contains(['\n', '\r']),
        "multi-line error message: {:?}",
        e.message
    );
    let text = serde_json::to_string(e).expect("an error serializes");
    serde_json::from_str::<serde_json::Value>(&text).expect("a serialized error parses");
}

/// An id is echoed back verbatim: it must serialize to valid JSON text.
/// Checked as text, not as a `Value`: JSON puts no bound on numbers, so an
/// id like `1e400` is valid (and echoed as sent) though no f64 holds it.
fn check_id(id: &Id) {
    let text = serde_json::to_string(id).expect("an id serializes");
    serde_json::from_str::<&serde_json::value::RawValue>(&text)
        .expect("a serialized id is valid JSON");
}

/// A prompt is stored in the session log as it came (unknown blocks
/// dropped) and must read back identical, or `session/load` would lose it.
fn check_prompt_round_trip(prompt: &[ContentBlock]) {
    let kept: Vec<&ContentBlock> = prompt
        .iter()
        .filter(|b| !matches!(b, ContentBlock::Unknown))
        .collect();
    let line = serde_json::to_string(&kept).expect("prompt blocks serialize");
    assert!(!line.contains('\n'), "a stored prompt spans lines");
    let back: Vec<ContentBlock> = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("stored prompt blocks do not read back ({e}): {line}"));
    assert!(
        back.iter().eq(kept.iter().copied()),
        "stored prompt blocks read back different: {line}"
    );
}

use std::future::Future as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_method_is_dispatched() {
        for m in [
            method::INITIALIZE,
            method::SESSION_NEW,
            method::SESSION_PROMPT,
        ] {
            assert!(
                !matches!(decode_request(m, None), Ok(Decoded::Unknown)),
                "{m} is not decoded"
            );
        }
        assert!(matches!(decode_request("nope", None), Ok(Decoded::Unknown)));
        assert!(matches!(
            decode_notification(method::CANCEL_REQUEST, None),
            Ok(Decoded::Other)
        ));
    }

    #[test]
    fn a_small_stream_decodes() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"},{"type":"video"}]}}"#,
            "\r\n\n",
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#,
            "\nnot json\n",
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":"x"}}"#,
        );
        let s = check_input(input.as_bytes(), 1 << 20, 7);
        assert_eq!(
            s,
            Summary {
                frames: 6,
                too_long: 0,
                rejected: 1,
                requests: 2,
                notifications: 1,
                responses: 1,
                // `session/cancel` without a sessionId; a terminal/create result without terminalId.
                bad_params: 2,
            }
        );
        let s = check_input(input.as_bytes(), 40, 3);
        assert!(s.too_long >= 2, "{s:?}");
    }
}
