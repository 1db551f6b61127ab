//! A direct HTTP/1.1 exchange for streamed replies from `http://` endpoints
//! reached without a proxy: local and LAN model servers (llama.cpp, Ollama,
//! vLLM, LM Studio), which stream the fastest.
//!
//! Why not hyper here: hyper hands a chunked body over one HTTP chunk at a
//! time, through a channel between its connection task and the reader, and
//! model servers send one chunk per token. perf of a fast stream (issue 7)
//! put that hand-off (`chan::Receiver::poll_next`, `Sender::poll_ready`,
//! `BytesMut::split_to`, the task switches) at about 40 % of the agent's
//! CPU per chunk, more than decoding the chunk itself. This reader decodes
//! the chunked framing in place over whole socket reads and feeds the bytes
//! straight to the SSE decoder: one task, no channel, one copy.
//!
//! Everything else stays with reqwest: `https://` (TLS), proxies from the
//! environment, credentials in the URL, and every non-streaming request.
//! The request sent here is the one reqwest would send (same headers);
//! connections are kept alive and reused as reqwest's pool would.
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// Where a direct request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// Host name or address, and port, to connect to.
    host: String,
    port: u16,
    /// The `host` header: as in the URL (port only when the URL names one).
    authority: String,
    /// Path and query.
    path: String,
}

/// The environment variables reqwest reads a proxy for `http://` URLs from.
const PROXY_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];

impl Target {
    /// The target for `url` if it can be reached directly: plain `http`, no
    /// credentials in the URL, and no proxy in the environment (reqwest
    /// honours those, with their `NO_PROXY` exceptions; so do we, by leaving
    /// such requests to it).
    pub(super) fn direct(url: &str) -> Option<Target> {
        let proxied = PROXY_VARS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|p| !p.is_empty()));
        if proxied {
            return None;
        }
        Target::parse(url)
    }

    fn parse(url: &str) -> Option<Target> {
        let u = reqwest::Url::parse(url).ok()?;
        if u.scheme() != "http" || !u.username().is_empty() || u.password().is_some() {
            return None;
        }
        let host_str = u.host_str()?;
        // An IPv6 address is bracketed in URLs, not in `connect`.
        let host = host_str
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = u.port_or_known_default()?;
        let authority = match u.port() {
            Some(p) => format!("{host_str}:{p}"),
            None => host_str.to_owned(),
        };
        let path = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_owned(),
        };
        Some(Target {
            host,
            port,
            authority,
            path,
        })
    }
}

impl Target {
    /// `host:port`, for messages.
    fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Why an exchange failed before the reply's head arrived.
#[derive(Debug)]
pub(super) struct SendError(pub String);

/// A reply's head, and its body still to be read.
pub(super) struct Response {
    pub status: u16,
    /// `(lower-case name, value)` pairs.
    headers: Vec<(String, String)>,
    pub body: Body,
}

impl Response {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Headers the exchange itself owns: a caller's value for them is dropped
/// (`host` is not among them: a config `Host` replaces the URL's, as with
/// reqwest, for a virtual host behind a plain-http reverse proxy).
const OWN_HEADERS: [&str; 4] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "content-type",
];

/// The request's bytes: `headers` are `(name, value)` pairs already checked
/// to be valid header names and values (no line breaks).
fn request_head(target: &Target, headers: &[(String, String)], body_len: usize) -> Vec<u8> {
    let host = headers
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(target.authority.as_str(), |(_, v)| v.as_str());
    let mut head = format!(
        "POST {} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n",
        target.path
    );
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("host") {
            continue;
        }
        if OWN_HEADERS.iter().any(|o| name.eq_ignore_ascii_case(o)) {
            continue;
        }
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str(&format!("content-length: {body_len}\r\n\r\n"));
    head.into_bytes()
}

/// The most a reply's head may take.
const MAX_HEAD: usize = 64 * 1024;
/// One socket read of the body.
const READ_SIZE: usize = 64 * 1024;

/// An idle connection kept for the next request to the same server.
struct Idle {
    address: String,
    stream: TcpStream,
    since: std::time::Instant,
}

/// Connections whose last reply was read to its end (a stream's final
/// chunk is waited for briefly after `[DONE]`, see `stream::read_body`).
/// Reusing one skips the TCP handshake.
static POOL: Mutex<Vec<Idle>> = Mutex::new(Vec::new());
const POOL_MAX: usize = 4;
/// Servers close idle connections after a few seconds to minutes; one
/// closed while idle is found before use (below) and replaced.
const IDLE_MAX: Duration = Duration::from_secs(30);

fn pool() -> std::sync::MutexGuard<'static, Vec<Idle>> {
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

fn take_idle(address: &str) -> Option<TcpStream> {
    let mut pool = pool();
    pool.retain(|c| c.since.elapsed() < IDLE_MAX);
    while let Some(i) = pool.iter().rposition(|c| c.address == address) {
        let c = pool.swap_remove(i);
        // Closed by the server (or written to) while idle: not reusable.
        match c.stream.try_read(&mut [0u8; 1]) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Some(c.stream),
            _ => {}
        }
    }
    None
}

fn put_idle(address: String, stream: TcpStream) {
    let mut pool = pool();
    if pool.len() >= POOL_MAX {
        pool.remove(0);
    }
    pool.push(Idle {
        address,
        stream,
        since: std::time::Instant::now(),
    });
}

/// Sends a POST of `body` (over an idle connection to the same server if
/// there is one, else a new one) and reads the reply's head.
pub(super) async fn post(
    target: &Target,
    headers: &[(String, String)],
    body: &[u8],
    connect_timeout: Duration,
) -> Result<Response, SendError> {
    let address = target.address();
    let mut out = request_head(target, headers, body.len());
    out.extend_from_slice(body);
    if let Some(stream) = take_idle(&address) {
        match exchange(stream, &out, &address).await {
            // The server closed it as we reused it, before reading the
            // request: send it again on a new connection.
            Err(Failed::Unanswered(_)) => {}
            Err(Failed::Other(e)) => return Err(e),
            Ok(resp) => return Ok(resp),
        }
    }
    let connect = connect(&target.host, target.port);
    let stream = match tokio::time::timeout(connect_timeout, connect).await {
        Err(_) => {
            return Err(SendError(format!(
                "cannot connect to {address}: no answer in {} s",
                connect_timeout.as_secs_f64()
            )));
        }
        Ok(Err(e)) => return Err(SendError(format!("cannot connect to {address}: {e}"))),
        Ok(Ok(s)) => s,
    };
    // Small writes and the reply's first bytes must not wait for Nagle.
    let _ = stream.set_nodelay(true);
    match exchange(stream, &out, &address).await {
        Ok(resp) => Ok(resp),
        Err(Failed::Unanswered(e) | Failed::Other(e)) => Err(e),
    }
}

/// The socket's receive buffer. During a burst the reader naps and lets the
/// window fill (see `stream::BURST_NAP`); each token arrives as a small
/// segment that the kernel accounts at several times its size, and the
/// buffer must hold what one nap lets accumulate: with 64 KiB a read took
/// too little (0.81 of a plain client's rate with a 500 µs nap). The kernel
/// caps the request at `net.core.rmem_max` (208 KiB on a default Linux,
/// doubled for bookkeeping; 4 MiB on the bench machine) and no longer
/// autotunes a buffer that was set; either way a 1 ms nap fills the window
/// of a fast local stream.
const RECV_BUFFER: u32 = 1 << 20;

/// Connects to the first address of `host` that answers.
async fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    let mut last = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        // Best effort: the kernel caps it at net.core.rmem_max.
        let _ = socket.set_recv_buffer_size(RECV_BUFFER);
        match socket.connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "the host name has no address")
    }))
}

enum Failed {
    /// Nothing of a reply came back: the request may not have been read.
    Unanswered(SendError),
    Other(SendError),
}

async fn exchange(
    mut stream: TcpStream,
    request: &[u8],
    address: &str,
) -> Result<Response, Failed> {
    // A server may answer (401, 413) and close before it has read the whole
    // request: its reply, if one came, says more than the failed write.
    let write_failed = stream.write_all(request).await.err();
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    // Whether any byte of a reply (even a 1xx) came back.
    let mut answered = false;
    loop {
        // What earlier reads brought may already hold a whole head.
        if let Some(head) = parse_head(&buf).map_err(Failed::Other)? {
            buf.drain(..head.used);
            if (100..200).contains(&head.status) {
                // 100 Continue, 103 Early Hints: the real reply follows.
                continue;
            }
            let framing = Framing::of(head.status, &head.headers).map_err(Failed::Other)?;
            let reusable =
                write_failed.is_none() && head.keep_alive && !matches!(framing, Framing::Close);
            return Ok(Response {
                status: head.status,
                headers: head.headers,
                body: Body {
                    stream: Some(stream),
                    framing,
                    // Bytes of the body that came with the head.
                    buf,
                    reuse: reusable.then(|| address.to_owned()),
                },
            });
        }
        if buf.len() >= MAX_HEAD {
            return Err(Failed::Other(SendError(format!(
                "the server's reply head is over {} KiB",
                MAX_HEAD / 1024
            ))));
        }
        let read = stream.read_buf(&mut buf).await;
        let e = match (read, &write_failed) {
            (Ok(n), _) if n > 0 => {
                answered = true;
                continue;
            }
            (_, Some(w)) => SendError(format!("sending the request failed: {w}")),
            (Ok(_), None) => SendError("the server closed the connection without replying".into()),
            (Err(e), None) => SendError(format!("reading the reply failed: {e}")),
        };
        return Err(if answered {
            Failed::Other(e)
        } else {
            Failed::Unanswered(e)
        });
    }
}

/// The most headers a reply may have.
const MAX_HEADERS: usize = 96;

struct Head {
    status: u16,
    headers: Vec<(String, String)>,
    /// The head's length in bytes.
    used: usize,
    /// HTTP/1.1 without `connection: close`: the connection can carry the
    /// next request once this reply is read.
    keep_alive: bool,
}

/// A complete head at the start of `buf`, if there is one.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, SendError> {
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut raw);
    match resp.parse(buf) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(used)) => {
            let headers: Vec<(String, String)> = resp
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).trim().to_owned(),
                    )
                })
                .collect();
            let close = headers.iter().any(|(n, v)| {
                n == "connection" && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
            });
            Ok(Some(Head {
                status: resp.code.unwrap_or(0),
                keep_alive: resp.version == Some(1) && !close,
                headers,
                used,
            }))
        }
        Err(httparse::Error::TooManyHeaders) => Err(SendError(format!(
            "the server's reply has more than {MAX_HEADERS} headers"
        ))),
        Err(e) => Err(SendError(format!(
            "the server's reply is not HTTP/1.1: {e}"
        ))),
    }
}

mod framing;
#[cfg(test)]
mod tests;

use framing::Framing;

/// A reply's body, read straight from the connection.
pub(super) struct Body {
    /// Taken back into the pool when the body was read to its end.
    stream: Option<TcpStream>,
    framing: Framing,
    /// Bytes read but not yet decoded (those that came with the head), then
    /// the read buffer.
    buf: Vec<u8>,
    /// The pool key, if the connection may carry another request.
    reuse: Option<String>,
}

impl Drop for Body {
    fn drop(&mut self) {
        // A body left unread (a cancelled turn) closes its connection.
        if let (Framing::Done, Some(address), Some(stream)) =
            (&self.framing, self.reuse.take(), self.stream.take())
        {
            put_idle(address, stream);
        }
    }
}

impl Body {
    /// A read that went past the body's end leaves bytes no request asked
    /// for on the connection: it is closed rather than reused.
    fn past_end(&mut self, decoded: Result<bool, String>) -> Result<(), String> {
        if decoded.as_ref().is_ok_and(|past| *past) {
            self.reuse = None;
        }
        decoded.map(|_| ())
    }

    /// Whether the body was read to its end.
    pub(super) fn finished(&self) -> bool {
        matches!(self.framing, Framing::Done)
    }

    /// Reads once (or takes what came with the head) and hands the payload
    /// to `sink`. `Ready(Some(Ok(())))` when something was read (which may
    /// be framing only), `Ready(None)` at the body's end.
    pub(super) fn poll_feed(
        &mut self,
        cx: &mut Context<'_>,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Poll<Option<Result<(), String>>> {
        if matches!(self.framing, Framing::Done) {
            return Poll::Ready(None);
        }
        if !self.buf.is_empty() {
            let early = std::mem::take(&mut self.buf);
            let r = self.framing.decode(&early, sink);
            return Poll::Ready(Some(self.past_end(r)));
        }
        if self.buf.capacity() < READ_SIZE {
            self.buf.reserve_exact(READ_SIZE);
        }
        let Some(stream) = self.stream.as_mut() else {
            return Poll::Ready(None);
        };
        let spare = self.buf.spare_capacity_mut();
        let mut rb = ReadBuf::uninit(spare);
        match Pin::new(stream).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e.to_string()))),
            Poll::Ready(Ok(())) => {
                let read = rb.filled();
                if read.is_empty() {
                    return match self.framing.eof() {
                        Ok(()) => Poll::Ready(None),
                        Err(e) => Poll::Ready(Some(Err(e))),
                    };
                }
                let r = self.framing.decode(read, sink);
                Poll::Ready(Some(self.past_end(r)))
            }
        }
    }

    /// Reads what is left of a body whose reply is complete (servers often
    /// write the chunked terminator after `[DONE]`), for at most `limit`, so
    /// that the connection goes back to the pool; closes it otherwise.
    pub(super) async fn finish(mut self, limit: Duration) {
        let rest = async {
            while let Some(Ok(())) =
                std::future::poll_fn(|cx| self.poll_feed(cx, &mut |_| {})).await
            {}
        };
        let _ = tokio::time::timeout(limit, rest).await;
    }

    /// The whole body, up to `limit` bytes (the rest is dropped).
    pub(super) async fn read_to_end(mut self, limit: usize) -> Result<Vec<u8>, String> {
        let mut all = Vec::new();
        loop {
            let mut sink = |b: &[u8]| {
                let room = limit.saturating_sub(all.len());
                all.extend_from_slice(&b[..b.len().min(room)]);
            };
            match std::future::poll_fn(|cx| self.poll_feed(cx, &mut sink)).await {
                None => return Ok(all),
                Some(Err(e)) => return Err(e),
                Some(Ok(())) if all.len() >= limit => return Ok(all),
                Some(Ok(())) => {}
            }
        }
    }
}
