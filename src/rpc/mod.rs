//! JSON-RPC 2.0 over newline-delimited frames on any `AsyncRead`/`AsyncWrite`.
//!
//! This layer knows nothing of ACP: it frames lines, classifies messages, owns the
//! single writer of the output stream, keeps the table of the agent's own pending
//! requests (the "reverse requests" to the editor) and dispatches incoming requests
//! to a [`Handler`], each on its own task, so a long `session/prompt` never blocks
//! `session/cancel` or the responses to our own requests.
mod cancel;
mod connection;
mod eof;
mod error;
mod framing;
mod message;
mod peer;
pub mod stdio;
mod writer;

pub use connection::{Connection, Handler, Reply, ServeOptions, release_order, serve};
pub use eof::{EofOn, eof_on, terminated};
pub use error::{RpcError, codes};
pub use framing::{Frame, LineReader};
pub use message::{Id, Incoming, decode_params};
pub use peer::{Direction, OUTGOING_LIMIT, Peer, Tracer};
pub use writer::WriterDone;
