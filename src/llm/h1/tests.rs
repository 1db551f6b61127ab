//! The exchange over loopback servers: heads, bodies, errors, the pool.
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn only_plain_http_without_credentials_is_direct() {
    let t = Target::parse("http://127.0.0.1:8080/v1/chat/completions?x=1").unwrap();
    assert_eq!(
        t,
        Target {
            host: "127.0.0.1".into(),
            port: 8080,
            authority: "127.0.0.1:8080".into(),
            path: "/v1/chat/completions?x=1".into(),
        }
    );
    let t = Target::parse("http://[::1]/v1/chat/completions").unwrap();
    assert_eq!((t.host.as_str(), t.port), ("::1", 80));
    assert_eq!(t.authority, "[::1]");
    assert!(Target::parse("https://api.openai.com/v1/chat/completions").is_none());
    assert!(Target::parse("http://user:pw@localhost:1/v1").is_none());
    assert!(Target::parse("not a url").is_none());
}

#[test]
fn the_request_head_keeps_framing_headers_its_own() {
    let t = Target::parse("http://localhost:9/v1/chat/completions").unwrap();
    let headers = vec![
        ("authorization".to_owned(), "Bearer k".to_owned()),
        ("Content-Length".to_owned(), "1".to_owned()),
        ("x-team".to_owned(), "a".to_owned()),
    ];
    let head = String::from_utf8(request_head(&t, &headers, 12)).unwrap();
    assert_eq!(
        head,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost:9\r\n\
         content-type: application/json\r\nauthorization: Bearer k\r\nx-team: a\r\n\
         content-length: 12\r\n\r\n"
    );
}

/// A POST of `{}` to `target`, which must get a reply head.
async fn send(target: &Target) -> Response {
    post(target, &[], b"{}", Duration::from_secs(5))
        .await
        .unwrap()
}

/// A loopback server that answers one request with `reply`, in pieces.
async fn serve_once(pieces: Vec<Vec<u8>>) -> Target {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 4096];
        while !req.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.unwrap();
            req.extend_from_slice(&buf[..n]);
        }
        for p in pieces {
            s.write_all(&p).await.unwrap();
            s.flush().await.unwrap();
            tokio::task::yield_now().await;
        }
    });
    Target::parse(&format!("http://127.0.0.1:{port}/v1/chat/completions")).unwrap()
}

#[tokio::test]
async fn a_streamed_reply_is_read_whole_after_a_continue() {
    let target = serve_once(vec![
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n".to_vec(),
        b"Content-Type: text/event-stream\r\n\r\n6\r\ndata: ".to_vec(),
        b"\r\n3\r\nhi\n\r\n".to_vec(),
        b"0\r\n\r\n".to_vec(),
    ])
    .await;
    let resp = send(&target).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert_eq!(resp.body.read_to_end(1 << 20).await.unwrap(), b"data: hi\n");
}

#[tokio::test]
async fn a_cut_body_is_an_error_and_a_refused_connection_names_the_address() {
    let target = serve_once(vec![
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc".to_vec(),
    ])
    .await;
    let resp = send(&target).await;
    let err = resp.body.read_to_end(1 << 20).await.unwrap_err();
    assert!(err.contains("before the reply's end"), "{err}");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let target = Target::parse(&format!("http://127.0.0.1:{port}/v1")).unwrap();
    let err = post(&target, &[], b"{}", Duration::from_secs(5))
        .await
        .err()
        .unwrap();
    assert!(err.0.contains(&format!("127.0.0.1:{port}")), "{}", err.0);
}

#[tokio::test]
async fn an_error_body_is_read_up_to_its_limit() {
    let target = serve_once(vec![
        b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\n\r\n{\"error\":".to_vec(),
        b"\"slow down\"}".to_vec(),
    ])
    .await;
    let resp = send(&target).await;
    assert_eq!(resp.status, 429);
    assert_eq!(resp.header("retry-after"), Some("2"));
    assert_eq!(resp.body.read_to_end(5).await.unwrap(), b"{\"err");
}

/// Reads one request (head and `content-length` body); false at EOF.
async fn read_request(s: &mut TcpStream, pending: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if pending.len() >= end + 4 + len {
                pending.drain(..end + 4 + len);
                return true;
            }
        }
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

/// How a [`keep_alive_server`] answers.
#[derive(Clone, Copy)]
enum Answer {
    /// "ok" with a content-length.
    Ok,
    /// "ok" chunked, the terminator 20 ms later, as llama.cpp or Ollama
    /// write it after `[DONE]`.
    OkThenEnd,
}

/// A server answering every request on a connection as `answer` says;
/// `replies` caps the replies per connection (then it closes without
/// replying). Returns the target and the count of connections accepted.
async fn keep_alive_server(
    replies: usize,
    answer: Answer,
) -> (Target, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            // (Without it Nagle would hold a chunk until the terminator.)
            s.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let mut pending = Vec::new();
                for _ in 0..replies {
                    if !read_request(&mut s, &mut pending).await {
                        return;
                    }
                    match answer {
                        Answer::Ok => {
                            let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                            s.write_all(reply).await.unwrap();
                        }
                        Answer::OkThenEnd => {
                            let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                            s.write_all(head).await.unwrap();
                            s.write_all(b"2\r\nok\r\n").await.unwrap();
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            s.write_all(b"0\r\n\r\n").await.unwrap();
                        }
                    }
                }
                // Read the next request, then close without a reply.
                read_request(&mut s, &mut pending).await;
            });
        }
    });
    let target = Target::parse(&format!("http://127.0.0.1:{port}/v1")).unwrap();
    (target, accepted)
}

/// Sends `times` requests to a [`keep_alive_server`], each answered "ok".
async fn post_ok(target: &Target, times: usize) {
    for _ in 0..times {
        let resp = send(target).await;
        assert_eq!(resp.body.read_to_end(1024).await.unwrap(), b"ok");
    }
}

#[tokio::test]
async fn a_connection_read_to_its_end_carries_the_next_request() {
    use std::sync::atomic::Ordering;
    let (target, accepted) = keep_alive_server(usize::MAX, Answer::Ok).await;
    post_ok(&target, 3).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_request_the_idle_connection_dropped_is_sent_again_on_a_new_one() {
    use std::sync::atomic::Ordering;
    let (target, accepted) = keep_alive_server(1, Answer::Ok).await;
    post_ok(&target, 2).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_unfinished_body_closes_its_connection() {
    use std::sync::atomic::Ordering;
    let (target, accepted) = keep_alive_server(usize::MAX, Answer::Ok).await;
    let resp = send(&target).await;
    // Dropped unread, as a cancelled turn drops its reply.
    drop(resp);
    post_ok(&target, 1).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_tail_of_a_complete_reply_is_awaited_so_the_connection_is_reused() {
    use std::sync::atomic::Ordering;
    let (target, accepted) = keep_alive_server(usize::MAX, Answer::OkThenEnd).await;
    for _ in 0..2 {
        let mut resp = send(&target).await;
        let mut got = Vec::new();
        while got.len() < 2 {
            let mut sink = |b: &[u8]| got.extend_from_slice(b);
            let read = std::future::poll_fn(|cx| resp.body.poll_feed(cx, &mut sink)).await;
            assert!(matches!(read, Some(Ok(()))), "{read:?}");
        }
        assert_eq!(got, b"ok");
        assert!(!resp.body.finished());
        resp.body.finish(Duration::from_secs(5)).await;
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_reply_to_a_request_the_server_did_not_read_is_still_seen() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.unwrap();
            head.extend_from_slice(&buf[..n]);
        }
        // Too large: answered at once, the body left unread (a reset).
        let reply = b"HTTP/1.1 413 Payload Too Large\r\nconnection: close\r\ncontent-length: 8\r\n\r\ntoo big!";
        s.write_all(reply).await.unwrap();
    });
    let target = Target::parse(&format!("http://127.0.0.1:{port}/v1")).unwrap();
    let body = vec![b'x'; 32 << 20];
    let resp = post(&target, &[], &body, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(resp.status, 413);
    assert_eq!(resp.body.read_to_end(1024).await.unwrap(), b"too big!");
}

#[test]
fn a_configured_host_header_replaces_the_urls() {
    let t = Target::parse("http://10.0.0.5:8080/v1/chat/completions").unwrap();
    let headers = vec![("Host".to_owned(), "models.internal".to_owned())];
    let head = String::from_utf8(request_head(&t, &headers, 2)).unwrap();
    assert!(head.contains("\r\nhost: models.internal\r\n"), "{head}");
    assert_eq!(head.matches("ost: ").count(), 1, "{head}");
}
