//! The fake OpenAI-compatible server every agent bench talks to: scripted
//! replies on 127.0.0.1, streamed as fast as the socket takes them or paced,
//! each chunk stamped with its send time.

use super::*;

/// What the fake server answers to the next chat request.
#[derive(Clone, Debug)]
pub(super) enum Script {
    /// A short text reply.
    Text(String),
    /// `chunks` text chunks, each `@<send time in ns>;`, as fast as the socket
    /// takes them or one every `pace`.
    Stream {
        chunks: usize,
        pace: Option<Duration>,
    },
    /// A few text chunks, then nothing until the client goes away.
    Hang { chunks: usize },
    /// One tool call.
    ToolCall { name: String, args: Value },
}

pub(super) struct ModelState {
    pub(super) scripts: Mutex<VecDeque<Script>>,
    pub(super) default: Mutex<Script>,
    pub(super) chat_requests: AtomicUsize,
    pub(super) capture_next: AtomicBool,
    pub(super) captured: Mutex<Option<Vec<u8>>>,
    /// llama-server's `GET /props` answer (`n_ctx`), when it says one.
    pub(super) props_n_ctx: Option<u64>,
}

pub(super) struct FakeModel {
    pub(super) addr: SocketAddr,
    pub(super) state: Arc<ModelState>,
}

impl FakeModel {
    pub(super) fn start() -> FakeModel {
        Self::start_with(None)
    }

    /// A server that also answers llama-server's `GET /props` with `n_ctx`.
    pub(super) fn start_with_props(n_ctx: u64) -> FakeModel {
        Self::start_with(Some(n_ctx))
    }

    fn start_with(props_n_ctx: Option<u64>) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake model");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(ModelState {
            scripts: Mutex::new(VecDeque::new()),
            default: Mutex::new(Script::Text("ok".into())),
            chat_requests: AtomicUsize::new(0),
            capture_next: AtomicBool::new(false),
            captured: Mutex::new(None),
            props_n_ctx,
        });
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let st = st.clone();
                std::thread::spawn(move || serve_connection(&st, stream));
            }
        });
        FakeModel { addr, state }
    }

    pub(super) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub(super) fn push(&self, s: Script) {
        self.state.scripts.lock().unwrap().push_back(s);
    }

    pub(super) fn clear(&self) {
        self.state.scripts.lock().unwrap().clear();
    }
}

pub(super) struct HttpRequest {
    method: String,
    path: String,
    body: Vec<u8>,
    close: bool,
}

pub(super) fn read_request(rd: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    loop {
        line.clear();
        if rd.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut len = 0usize;
    let mut chunked = false;
    let mut close = false;
    loop {
        line.clear();
        if rd.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
        match k.as_str() {
            "content-length" => len = v.parse().ok()?,
            "transfer-encoding" => chunked = v.contains("chunked"),
            "connection" => close = v.contains("close"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            rd.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                loop {
                    line.clear();
                    if rd.read_line(&mut line).ok()? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            rd.read_exact(&mut body[start..]).ok()?;
            line.clear();
            rd.read_line(&mut line).ok()?;
        }
    } else {
        body.resize(len, 0);
        rd.read_exact(&mut body).ok()?;
    }
    Some(HttpRequest {
        method,
        path,
        body,
        close,
    })
}

pub(super) fn serve_connection(st: &ModelState, stream: TcpStream) {
    // A reply is written in more than one piece (head, body): without
    // TCP_NODELAY the second waits for the client's ACK of the first, which
    // Linux delays by up to 40 ms on a kept-alive connection (Nagle meets
    // delayed ACK). Real servers set it (llama-server, Go, Node).
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut rd = BufReader::new(read_half);
    let mut wr = stream;
    while let Some(req) = read_request(&mut rd) {
        let path = req.path.split('?').next().unwrap_or("");
        let ok = match (req.method.as_str(), path) {
            ("GET", "/v1/models") => write_fixed(
                &mut wr,
                200,
                &json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                    .to_string(),
            ),
            ("GET", "/props") if st.props_n_ctx.is_some() => write_fixed(
                &mut wr,
                200,
                &json!({"default_generation_settings": {"n_ctx": st.props_n_ctx}}).to_string(),
            ),
            ("POST", "/v1/chat/completions") => {
                st.chat_requests.fetch_add(1, Ordering::SeqCst);
                if st.capture_next.swap(false, Ordering::SeqCst) {
                    *st.captured.lock().unwrap() = Some(req.body.clone());
                }
                let script = st
                    .scripts
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| st.default.lock().unwrap().clone());
                write_script(&mut wr, &mut rd, &script)
            }
            _ => write_fixed(&mut wr, 404, r#"{"error":{"message":"not found"}}"#),
        };
        if !ok || req.close {
            return;
        }
    }
}

pub(super) fn write_fixed(wr: &mut TcpStream, status: u16, body: &str) -> bool {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    );
    wr.write_all(head.as_bytes())
        .and_then(|()| wr.write_all(body.as_bytes()))
        .is_ok()
}

pub(super) const CHUNK_HEAD: &str = r#"data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":"#;

/// One SSE event `data: {chunk with delta}` as one HTTP chunk.
pub(super) fn sse_chunk(buf: &mut Vec<u8>, delta: &str, finish: Option<&str>) {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    let event = format!("{CHUNK_HEAD}{delta},\"finish_reason\":{finish}}}]}}\n\n");
    http_chunk(buf, event.as_bytes());
}

pub(super) fn http_chunk(buf: &mut Vec<u8>, data: &[u8]) {
    let _ = write!(buf, "{:x}\r\n", data.len());
    buf.extend_from_slice(data);
    buf.extend_from_slice(b"\r\n");
}

pub(super) fn write_script(
    wr: &mut TcpStream,
    rd: &mut BufReader<TcpStream>,
    script: &Script,
) -> bool {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut buf = Vec::with_capacity(4096);
    buf.extend_from_slice(head.as_bytes());
    sse_chunk(&mut buf, r#"{"role":"assistant","content":""}"#, None);
    let flush = |wr: &mut TcpStream, buf: &mut Vec<u8>| {
        let ok = wr.write_all(buf).is_ok();
        buf.clear();
        ok
    };
    let finish_reason = match script {
        Script::Text(text) => {
            sse_chunk(&mut buf, &json!({ "content": text }).to_string(), None);
            "stop"
        }
        Script::Stream { chunks, pace } => {
            if !flush(wr, &mut buf) {
                return false;
            }
            let mut event = String::with_capacity(256);
            for _ in 0..*chunks {
                if let Some(p) = pace {
                    std::thread::sleep(*p);
                }
                event.clear();
                let _ = write!(
                    event,
                    "{CHUNK_HEAD}{{\"content\":\"@{};\"}},\"finish_reason\":null}}]}}\n\n",
                    now_ns()
                );
                http_chunk(&mut buf, event.as_bytes());
                if !flush(wr, &mut buf) {
                    return false;
                }
            }
            "stop"
        }
        Script::Hang { chunks } => {
            for i in 0..*chunks {
                sse_chunk(
                    &mut buf,
                    &json!({ "content": format!("part {i} ") }).to_string(),
                    None,
                );
            }
            if !flush(wr, &mut buf) {
                return false;
            }
            // Until the client goes away (cancel drops the request).
            let mut sink = [0u8; 1024];
            loop {
                match rd.read(&mut sink) {
                    Ok(0) | Err(_) => return false,
                    Ok(_) => {}
                }
            }
        }
        Script::ToolCall { name, args } => {
            let delta = json!({"tool_calls": [{
                "index": 0,
                "id": format!("call_{}", now_ns()),
                "type": "function",
                "function": {"name": name, "arguments": args.to_string()}
            }]});
            sse_chunk(&mut buf, &delta.to_string(), None);
            "tool_calls"
        }
    };
    sse_chunk(&mut buf, "{}", Some(finish_reason));
    let usage = r#"data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010}}"#;
    http_chunk(&mut buf, format!("{usage}\n\n").as_bytes());
    http_chunk(&mut buf, b"data: [DONE]\n\n");
    buf.extend_from_slice(b"0\r\n\r\n");
    flush(wr, &mut buf)
}

/// Every `@<ns>;` stamp in `text`, with the byte offset just past it.
pub(super) fn stamps(text: &[u8]) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'@' {
            let mut j = i + 1;
            let mut n: u64 = 0;
            while j < text.len() && text[j].is_ascii_digit() {
                n = n * 10 + u64::from(text[j] - b'0');
                j += 1;
            }
            if j > i + 1 && j < text.len() && text[j] == b';' {
                out.push((n, j + 1));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}
