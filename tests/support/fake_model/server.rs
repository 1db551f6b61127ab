//! The HTTP/1.1 side: reading one request per connection and writing the
//! scripted reply.
use super::*;

/// Reads the request head and body. `None` if the client went away or sent
/// something that is not HTTP/1.1.
pub(super) async fn read_request(
    rd: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<RecordedRequest> {
    let mut line = String::new();
    // Request line (skip stray blank lines).
    loop {
        line.clear();
        if rd.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let (path, absolute_target) = match target.strip_prefix("http://") {
        Some(rest) => (
            rest.find('/')
                .map_or_else(|| "/".to_owned(), |i| rest[i..].to_owned()),
            Some(target.clone()),
        ),
        None => (target, None),
    };
    let mut headers = Vec::new();
    let mut head_bytes = line.len();
    loop {
        line.clear();
        let n = rd.read_line(&mut line).await.ok()?;
        head_bytes += n;
        if n == 0 || head_bytes > 256 * 1024 {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            line.clear();
            rd.read_line(&mut line).await.ok()?;
            let size_str = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_str, 16).ok()?;
            if size == 0 {
                // Trailers until a blank line.
                loop {
                    line.clear();
                    if rd.read_line(&mut line).await.ok()? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            rd.read_exact(&mut body[start..]).await.ok()?;
            line.clear();
            rd.read_line(&mut line).await.ok()?;
        }
    } else if let Some(len) = header("content-length") {
        let len: usize = len.parse().ok()?;
        body.resize(len, 0);
        rd.read_exact(&mut body).await.ok()?;
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let parsed = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
    Some(RecordedRequest {
        method,
        path,
        absolute_target,
        headers,
        raw_body,
        body: parsed,
    })
}

pub(super) fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

pub(super) async fn handle_connection(inner: Arc<Inner>, stream: TcpStream) {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let Some(request) = read_request(&mut rd).await else {
        return;
    };
    let reply = {
        let mut st = inner.state.lock().unwrap();
        st.requests.push(request.clone());
        let path = request.path.split('?').next().unwrap_or("");
        match (request.method.as_str(), path) {
            ("POST", "/v1/chat/completions") => match st
                .responder
                .as_ref()
                .and_then(|r| r(&request))
                .or_else(|| st.replies.pop_front())
            {
                Some(reply) => reply,
                None => {
                    inner.unscripted.fetch_add(1, Ordering::SeqCst);
                    eprintln!("fake model: chat request with no scripted reply left");
                    Reply::status(
                        500,
                        json!({"error": {
                            "message": "fake model: no scripted reply left",
                            "type": "fake_model_error",
                            "code": "no_scripted_reply"
                        }}),
                    )
                }
            },
            ("GET", "/v1/models") => st.models_reply.clone().unwrap_or_else(|| {
                let data: Vec<Value> = st
                    .models
                    .iter()
                    .map(
                        |id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}),
                    )
                    .collect();
                Reply::json(json!({"object": "list", "data": data}))
            }),
            (method, path) if st.routes.iter().any(|(m, p, _)| m == method && p == path) => st
                .routes
                .iter()
                .find(|(m, p, _)| m == method && p == path)
                .map(|(_, _, r)| r.clone())
                .unwrap_or_else(|| Reply::error(404, "fake model: route vanished")),
            _ => Reply::error(
                404,
                &format!(
                    "fake model: no route for {} {}",
                    request.method, request.path
                ),
            ),
        }
    };
    inner.bump();

    // Watch for the client going away: any EOF/error on the read side.
    let (gone_tx, gone_rx) = watch::channel(false);
    let watcher = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = gone_tx.send(true);
    });

    if reply.held_for_chats > 0 {
        let mut version = inner.version.subscribe();
        loop {
            let chats = {
                let st = inner.state.lock().unwrap();
                st.requests.iter().filter(|r| r.is_chat()).count()
            };
            if chats >= reply.held_for_chats || version.changed().await.is_err() {
                break;
            }
        }
    }
    if !reply.first_byte_delay.is_zero() {
        tokio::time::sleep(reply.first_byte_delay).await;
    }
    let outcome = write_reply(&inner, &mut wr, &reply, gone_rx).await;
    match outcome {
        Outcome::Disconnected => {
            inner.disconnects.fetch_add(1, Ordering::SeqCst);
        }
        Outcome::StreamComplete => {
            inner.completed_streams.fetch_add(1, Ordering::SeqCst);
        }
        Outcome::Other => {}
    }
    inner.bump();
    watcher.abort();
}

pub(super) enum Outcome {
    StreamComplete,
    Disconnected,
    Other,
}

pub(super) async fn write_reply(
    inner: &Inner,
    wr: &mut OwnedWriteHalf,
    reply: &Reply,
    mut gone: watch::Receiver<bool>,
) -> Outcome {
    let extra: String = reply
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    match &reply.body {
        Body::Fixed {
            status,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
                reason_phrase(*status),
                body.len()
            );
            let _ = wr.write_all(head.as_bytes()).await;
            let _ = wr.write_all(body.as_bytes()).await;
            let _ = wr.shutdown().await;
            Outcome::Other
        }
        Body::Flood(kind) => write_flood(inner, wr, *kind, gone).await,
        Body::Stream { events, done, end } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n{extra}\r\n"
            );
            if wr.write_all(head.as_bytes()).await.is_err() {
                return Outcome::Disconnected;
            }
            let mut texts: Vec<String> = events
                .iter()
                .map(|e| match e {
                    SseEvent::Data(v) => format!("data: {v}\n\n"),
                    SseEvent::Raw(s) => s.clone(),
                })
                .collect();
            if *done {
                texts.push("data: [DONE]\n\n".to_owned());
            }
            for (i, text) in texts.iter().enumerate() {
                match end {
                    StreamEnd::CutAfter(n) if i == *n => {
                        let _ = wr.flush().await;
                        return Outcome::Other;
                    }
                    StreamEnd::HangAfter(n) if i == *n => {
                        let _ = wr.flush().await;
                        let _ = gone.wait_for(|g| *g).await;
                        return Outcome::Disconnected;
                    }
                    _ => {}
                }
                if i > 0 && !reply.delay.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(reply.delay) => {}
                        _ = gone.wait_for(|g| *g) => return Outcome::Disconnected,
                    }
                }
                if *gone.borrow() {
                    return Outcome::Disconnected;
                }
                let frame = format!("{:x}\r\n{text}\r\n", text.len());
                if wr.write_all(frame.as_bytes()).await.is_err() || wr.flush().await.is_err() {
                    return Outcome::Disconnected;
                }
            }
            match end {
                StreamEnd::CutAfter(_) => {
                    // n >= number of events: cut before the terminating chunk.
                    let _ = wr.flush().await;
                    return Outcome::Other;
                }
                StreamEnd::HangAfter(_) => {
                    let _ = gone.wait_for(|g| *g).await;
                    return Outcome::Disconnected;
                }
                StreamEnd::Complete => {}
            }
            if wr.write_all(b"0\r\n\r\n").await.is_err() {
                return Outcome::Disconnected;
            }
            let _ = wr.shutdown().await;
            Outcome::StreamComplete
        }
    }
}

/// Writes a [`Flood`] in 64 KiB chunks until the client goes away (or 1 GiB).
pub(super) async fn write_flood(
    inner: &Inner,
    wr: &mut OwnedWriteHalf,
    kind: Flood,
    gone: watch::Receiver<bool>,
) -> Outcome {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let first = match kind {
        Flood::Line => r#"data: {"choices":[{"delta":{"content":""#.to_owned(),
        Flood::Text => String::new(),
        Flood::ToolArguments => format!(
            "data: {}\n\n",
            chunk::tool_call_start(0, "call_flood", "write_file")
        ),
    };
    let unit = match kind {
        Flood::Line => "a".repeat(1024),
        // 1 KiB per chunk: the caps are reached in seconds even in a debug build.
        Flood::Text => format!("data: {}\n\n", chunk::text(&"flood ".repeat(170))),
        Flood::ToolArguments => {
            format!("data: {}\n\n", chunk::tool_call_args(0, &"a".repeat(1024)))
        }
    };
    let mut block = String::with_capacity(70_000);
    while block.len() < 64 * 1024 {
        block.push_str(&unit);
    }
    let frame = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
    if wr.write_all(head.as_bytes()).await.is_err() {
        return Outcome::Disconnected;
    }
    if !first.is_empty() && wr.write_all(frame(&first).as_bytes()).await.is_err() {
        return Outcome::Disconnected;
    }
    let block = frame(&block);
    let mut sent = 0usize;
    while sent < 1 << 30 {
        if *gone.borrow() || wr.write_all(block.as_bytes()).await.is_err() {
            return Outcome::Disconnected;
        }
        sent += block.len();
        inner.flooded.fetch_add(block.len(), Ordering::SeqCst);
        inner.bump();
    }
    Outcome::Other
}
