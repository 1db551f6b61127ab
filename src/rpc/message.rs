//! Untyped envelope, typed extraction: a line is classified first and its
//! `params` decoded only once the method is known (NOTES: "untyped envelope").
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::RpcError;

/// A request id, echoed back exactly as it came (number, string or null).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Num(i64),
    Str(String),
    /// Ids that are neither (floats, huge numbers, null) are kept verbatim.
    Other(RawJson),
}

/// Verbatim JSON text used as an id; compared by text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawJson(pub String);

impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw = RawValue::from_string(self.0.clone()).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}
impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: Box<RawValue> = Deserialize::deserialize(d)?;
        Ok(RawJson(raw.get().to_owned()))
    }
}

impl Id {
    pub fn null() -> Self {
        Id::Other(RawJson("null".into()))
    }

    /// Reads an id from its JSON text: an integer, a string, or anything else
    /// kept verbatim (null, floats, huge numbers, objects), never an error, so
    /// that even a frame with a strange id is classified (and a response with
    /// one is dropped rather than answered).
    pub fn from_raw(raw: &RawValue) -> Id {
        if let Ok(n) = serde_json::from_str::<i64>(raw.get()) {
            Id::Num(n)
        } else if let Ok(s) = serde_json::from_str::<String>(raw.get()) {
            Id::Str(s)
        } else {
            Id::Other(RawJson(raw.get().trim().to_owned()))
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Id::Other(raw) if raw.0 == "null")
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Num(n) => write!(f, "{n}"),
            Id::Str(s) => write!(f, "{s:?}"),
            Id::Other(raw) => f.write_str(&raw.0),
        }
    }
}

/// One classified incoming message.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Id,
        method: String,
        params: Option<Box<RawValue>>,
    },
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    Response {
        id: Id,
        result: Result<Option<Box<RawValue>>, RpcError>,
    },
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Value>,
}

/// Keeps `"id": null` distinct from an absent id.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

/// A frame's failure: the error to send and the id to send it with.
type Refusal = (Id, RpcError);

impl Incoming {
    /// Classifies one frame. On failure returns the error to send and the id to
    /// send it with (null when the id could not be read).
    // The error path is cold (one per bad frame); boxing would only add noise.
    #[allow(clippy::result_large_err)]
    pub fn parse(line: &[u8]) -> Result<Incoming, Refusal> {
        let env = Envelope::read(line)?;
        let id = env.id.as_deref().map(Id::from_raw);
        let reply_id = id.clone().unwrap_or_else(Id::null);
        // A frame without a method that has an id, a result or an error is a
        // response (JSON-RPC 2.0 §5; `"id": null` is how a peer reports an
        // error it could not tie to a request). Responses are never answered,
        // whatever is wrong with them: the connection logs and drops them.
        if env.method.is_none() && (id.is_some() || env.result.is_some() || env.error.is_some()) {
            return Ok(env.response(reply_id));
        }
        if matches!(&id, Some(Id::Other(raw)) if raw.0 != "null") && env.method.is_some() {
            return Err((
                Id::null(),
                RpcError::invalid_request("id must be a string, an integer or null"),
            ));
        }
        // Requests and notifications are held to JSON-RPC 2.0 (§4): the
        // version member, and params by name. Responses stay lenient (above).
        match &env.jsonrpc {
            Some(Value::String(v)) if v == "2.0" => {}
            None => {
                return Err((
                    reply_id,
                    RpcError::invalid_request(
                        "\"jsonrpc\": \"2.0\" is missing; every request must carry it",
                    ),
                ));
            }
            Some(other) => {
                return Err((
                    reply_id,
                    RpcError::invalid_request(format!("jsonrpc must be \"2.0\", got {other}")),
                ));
            }
        }
        if let Some(params) = &env.params {
            let kind = match params.get().trim_start().as_bytes().first() {
                Some(b'{') | Some(b'n') => None,
                Some(b'[') => Some("positional (array) params are not supported"),
                _ => Some("params must be an object"),
            };
            if let Some(kind) = kind {
                return Err((
                    reply_id,
                    RpcError::invalid_params(format!(
                        "{kind}; send params as an object with named members"
                    )),
                ));
            }
        }
        env.call(id, reply_id)
    }
}

impl Envelope {
    /// The frame as one JSON object; anything else is refused with a null id.
    #[allow(clippy::result_large_err)]
    fn read(line: &[u8]) -> Result<Envelope, Refusal> {
        let text = std::str::from_utf8(line).map_err(|e| {
            (
                Id::null(),
                RpcError::parse_error(format!("line is not UTF-8 ({e})")),
            )
        })?;
        let value: &RawValue = serde_json::from_str(text).map_err(|e| {
            (
                Id::null(),
                RpcError::parse_error(format!("not valid JSON ({e})")),
            )
        })?;
        let trimmed = value.get().trim_start();
        if !trimmed.starts_with('{') {
            let what = if trimmed.starts_with('[') {
                "batch requests are not supported; send one JSON object per line"
            } else {
                "expected a JSON object"
            };
            return Err((Id::null(), RpcError::invalid_request(what)));
        }
        serde_json::from_str(value.get()).map_err(|e| (Id::null(), RpcError::invalid_request(e)))
    }

    /// A response: its result, or its error (a malformed one said as such).
    fn response(self, id: Id) -> Incoming {
        let result = match self.error {
            Some(err) => Err(serde_json::from_value::<RpcError>(err.clone())
                .unwrap_or_else(|_| RpcError::internal(format!("malformed error object {err}")))),
            None => Ok(self.result),
        };
        Incoming::Response { id, result }
    }

    /// A request (with an id) or a notification; the method must be a string.
    #[allow(clippy::result_large_err)]
    fn call(self, id: Option<Id>, reply_id: Id) -> Result<Incoming, Refusal> {
        match (self.method, id) {
            (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request {
                id,
                method,
                params: self.params,
            }),
            (Some(Value::String(method)), None) => Ok(Incoming::Notification {
                method,
                params: self.params,
            }),
            (Some(_), _) => Err((
                reply_id,
                RpcError::invalid_request("method must be a string"),
            )),
            (None, _) => Err((
                Id::null(),
                RpcError::invalid_request(
                    "a message needs a \"method\" (request) or an \"id\" (response)",
                ),
            )),
        }
    }
}

/// Decodes `params` into `T`, naming the failing field in the error
/// (`params.cwd: invalid type: ...`). Absent params decode as `{}`.
pub fn decode_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, RpcError> {
    let text = params.map_or("{}", |p| p.get());
    let text = if text.trim() == "null" { "{}" } else { text };
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let mut path = if path == "." {
            String::from("params")
        } else {
            format!("params.{path}")
        };
        // serde reports a missing field at its parent: name the field itself.
        if let Some(field) = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            path.push('.');
            path.push_str(field);
        }
        RpcError::invalid_params(format!("{path}: {inner}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let req = Incoming::parse(br#"{"jsonrpc":"2.0","id":"a-1","method":"x","params":{"k":1}}"#)
            .unwrap();
        assert!(
            matches!(req, Incoming::Request { id: Id::Str(ref s), ref method, .. } if s == "a-1" && method == "x")
        );
        let note = Incoming::parse(br#"{"jsonrpc":"2.0","method":"session/cancel"}"#).unwrap();
        assert!(matches!(note, Incoming::Notification { .. }));
        // "result": null is still a response (editors answer fs/write_text_file with null).
        let resp = Incoming::parse(br#"{"jsonrpc":"2.0","id":3,"result":null}"#).unwrap();
        assert!(matches!(
            resp,
            Incoming::Response {
                id: Id::Num(3),
                result: Ok(None)
            }
        ));
        let err = Incoming::parse(
            br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"nope"}}"#,
        )
        .unwrap();
        assert!(matches!(
            err,
            Incoming::Response {
                result: Err(RpcError { code: -32002, .. }),
                ..
            }
        ));
    }

    #[test]
    fn an_id_beyond_f64_is_kept_as_sent() {
        // Found by the fuzzer: valid JSON that no f64 holds, in a response
        // (a request with such an id is refused with a null id).
        let Ok(Incoming::Response { id, .. }) =
            Incoming::parse(br#"{"jsonrpc":"2.0","id":1e400,"result":{}}"#)
        else {
            panic!("not a response");
        };
        assert_eq!(serde_json::to_string(&id).unwrap(), "1e400");
        let (id, e) = Incoming::parse(br#"{"jsonrpc":"2.0","id":1e400,"method":"x"}"#).unwrap_err();
        assert_eq!((id, e.code), (Id::null(), -32600));
    }

    #[test]
    fn an_editors_multi_line_error_message_is_read_as_one_line() {
        // Found by the fuzzer: a CR inside the editor's message survived
        // decoding, so the error could be relayed or logged over two lines.
        let r = Incoming::parse(
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"a\rb\nc","data":{"p":1}}}"#,
        )
        .unwrap();
        let Incoming::Response { result: Err(e), .. } = r else {
            panic!("not an error response: {r:?}");
        };
        assert_eq!((e.code, e.message.as_str()), (-32002, "a b c"));
        assert_eq!(e.data, Some(serde_json::json!({"p": 1})));
    }

    #[test]
    fn rejects_garbage_with_the_right_codes() {
        assert_eq!(Incoming::parse(b"not json").unwrap_err().1.code, -32700);
        assert_eq!(Incoming::parse(&[0xff, 0xfe]).unwrap_err().1.code, -32700);
        assert_eq!(Incoming::parse(b"[1,2]").unwrap_err().1.code, -32600);
        assert_eq!(Incoming::parse(b"42").unwrap_err().1.code, -32600);
        assert_eq!(
            Incoming::parse(br#"{"jsonrpc":"2.0"}"#).unwrap_err().1.code,
            -32600
        );
        let (id, e) = Incoming::parse(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err();
        assert_eq!((id, e.code), (Id::Num(7), -32600));
    }

    #[test]
    fn requests_need_the_version_and_params_by_name() {
        let (id, e) = Incoming::parse(br#"{"id":7,"method":"x","params":{}}"#).unwrap_err();
        assert_eq!((id, e.code), (Id::Num(7), -32600));
        assert!(
            e.message.contains("\"jsonrpc\": \"2.0\" is missing"),
            "{}",
            e.message
        );
        let (id, e) = Incoming::parse(br#"{"method":"x"}"#).unwrap_err();
        assert_eq!((id, e.code), (Id::null(), -32600));
        let (id, e) = Incoming::parse(br#"{"jsonrpc":"2.0","id":"a","method":"x","params":[1,2]}"#)
            .unwrap_err();
        assert_eq!((id, e.code), (Id::Str("a".into()), -32602));
        assert!(
            e.message.contains("positional (array) params"),
            "{}",
            e.message
        );
        for params in ["1", "\"s\"", "true"] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{params}}}"#);
            assert_eq!(
                Incoming::parse(frame.as_bytes()).unwrap_err().1.code,
                -32602
            );
        }
        // Absent and null params stay allowed; responses stay lenient.
        assert!(Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).is_ok());
        assert!(Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":null}"#).is_ok());
        assert!(matches!(
            Incoming::parse(br#"{"id":3,"result":null}"#),
            Ok(Incoming::Response { .. })
        ));
    }

    #[test]
    fn responses_are_classified_whatever_their_id() {
        // A client answering something with an error it cannot tie to a request.
        let r = Incoming::parse(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}"#,
        )
        .unwrap();
        assert!(matches!(r, Incoming::Response { ref id, result: Err(_) } if id.is_null()));
        for frame in [
            &br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":{"a":1},"result":{}}"#,
            br#"{"jsonrpc":"2.0","result":{}}"#,
            br#"{"jsonrpc":"1.0","id":3,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":4,"error":"not an object"}"#,
        ] {
            assert!(
                matches!(Incoming::parse(frame), Ok(Incoming::Response { .. })),
                "{}",
                String::from_utf8_lossy(frame)
            );
        }
        // A request with an unusable id is still answered, with a null id.
        let (id, e) =
            Incoming::parse(br#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#).unwrap_err();
        assert!(id.is_null());
        assert_eq!(e.code, -32600);
    }

    #[test]
    fn ids_round_trip_exactly() {
        for raw in [r#"1"#, r#""abc""#, r#"-5"#] {
            let id: Id = serde_json::from_str(raw).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), raw);
        }
    }

    #[test]
    fn params_errors_name_the_field() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct P {
            cwd: String,
            inner: Inner,
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Inner {
            n: u32,
        }
        let raw = RawValue::from_string(r#"{"cwd":"/x","inner":{"n":"no"}}"#.into()).unwrap();
        let err = decode_params::<P>(Some(&raw)).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("params.inner.n"), "{}", err.message);
        let err = decode_params::<P>(None).unwrap_err();
        assert!(
            err.message.contains("params.cwd: missing field `cwd`"),
            "{}",
            err.message
        );
        let raw = RawValue::from_string(r#"{"cwd":"/x","inner":{}}"#.into()).unwrap();
        let err = decode_params::<P>(Some(&raw)).unwrap_err();
        assert!(
            err.message.contains("params.inner.n: missing field"),
            "{}",
            err.message
        );
    }
}
