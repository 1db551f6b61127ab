//! [`ANSWER_WAIT`], the limit on an MCP-over-ACP server's own request
//! waiting for our client's answer, on tokio's paused clock (issue 16,
//! "Tests"): virtual elapsed times are exact.
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{ANSWER_WAIT, Link, Links, lock};
use crate::acp::MessageMcp;
use crate::rpc::{Connection, ServeOptions};

/// Links with one open connection `c1`; the receiver stands for our MCP
/// client, which reads the server's request and (here) never answers by itself.
fn links() -> (
    Arc<Links>,
    Arc<Link>,
    mpsc::UnboundedReceiver<rmcp::model::ServerJsonRpcMessage>,
) {
    let links = Arc::new(Links::new(Connection::new(ServeOptions::default()).peer));
    let (to_client, from_server) = mpsc::unbounded_channel();
    let link = Arc::new(Link {
        to_client,
        waiting: std::sync::Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
    });
    lock(&links.open).insert("c1".into(), link.clone());
    (links, link, from_server)
}

fn ping() -> MessageMcp {
    MessageMcp {
        connection_id: "c1".into(),
        method: "ping".into(),
        params: None,
    }
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_request_fails_after_exactly_the_answer_wait() {
    let (links, link, mut from_server) = links();
    let start = Instant::now();
    let Err(err) = links.request(ping()).await else {
        panic!("nobody answered, yet the request succeeded");
    };
    assert_eq!(start.elapsed(), ANSWER_WAIT);
    assert_eq!(ANSWER_WAIT, Duration::from_secs(300));
    assert!(
        err.message.contains("did not answer \"ping\" within 300 s"),
        "{}",
        err.message
    );
    assert!(
        from_server.try_recv().is_ok(),
        "the request reached the client"
    );
    assert!(lock(&link.waiting).is_empty(), "the waiter is dropped");
}

#[tokio::test(start_paused = true)]
async fn an_answer_ends_the_wait_when_it_arrives() {
    let (links, link, _from_server) = links();
    let answerer = link.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(42)).await;
        let tx = lock(&answerer.waiting).drain().next().map(|(_, tx)| tx);
        let _ = tx.expect("a waiting request").send(Ok(json!({})));
    });
    let start = Instant::now();
    if let Err(e) = links.request(ping()).await {
        panic!("the answer was lost: {}", e.message);
    }
    assert_eq!(start.elapsed(), Duration::from_secs(42));
    assert!(lock(&link.waiting).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_closed_client_fails_the_wait_at_once() {
    let (links, link, from_server) = links();
    drop(from_server);
    let start = Instant::now();
    let Err(err) = links.request(ping()).await else {
        panic!("nobody answered, yet the request succeeded");
    };
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(err.message.contains("c1"), "{}", err.message);
    assert!(lock(&link.waiting).is_empty());
}
