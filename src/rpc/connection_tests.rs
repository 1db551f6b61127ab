//! The outgoing queue under a slow or stalled editor (issue 14, "bounded
//! memory"): producers that wait in `writable` keep it bounded, responses get
//! through behind at most the limit, and the reader never stops reading.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::*;
use crate::rpc::OUTGOING_LIMIT;

/// Answers `ping` at once; counts notifications.
#[derive(Default)]
struct Echo {
    notes: AtomicUsize,
}

impl Handler for Echo {
    fn request(
        self: Arc<Self>,
        _method: String,
        _params: Option<Box<RawValue>>,
    ) -> BoxFuture<'static, Result<Reply, RpcError>> {
        Box::pin(async {
            Ok(RawValue::from_string("\"pong\"".into())
                .expect("valid JSON")
                .into())
        })
    }

    fn notification(&self, _method: &str, _params: Option<&RawValue>) {
        self.notes.fetch_add(1, Ordering::SeqCst);
    }
}

struct Ends {
    peer: Peer,
    handler: Arc<Echo>,
    /// The editor's side: what the agent wrote, and where to write to it.
    from_agent: BufReader<DuplexStream>,
    to_agent: DuplexStream,
}

fn start() -> Ends {
    let (agent_in, to_agent) = tokio::io::duplex(64 * 1024);
    let (agent_out, from_agent) = tokio::io::duplex(64 * 1024);
    let conn = Connection::new(ServeOptions::default());
    let peer = conn.peer.clone();
    let handler = Arc::new(Echo::default());
    let (read, _done) = serve(conn, agent_in, agent_out, handler.clone());
    tokio::spawn(read);
    Ends {
        peer,
        handler,
        from_agent: BufReader::new(from_agent),
        to_agent,
    }
}

const FRAME_TEXT: usize = 8 * 1024;

/// Sends `count` numbered notifications as a streaming turn does; returns the
/// largest backlog it saw right after queueing one.
fn flood(peer: &Peer, count: usize) -> tokio::task::JoinHandle<usize> {
    let peer = peer.clone();
    tokio::spawn(async move {
        let text = "x".repeat(FRAME_TEXT);
        let mut max = 0;
        for seq in 0..count {
            peer.writable().await;
            peer.notify("session/update", &json!({"seq": seq, "text": text}));
            max = max.max(peer.backlog());
        }
        max
    })
}

#[tokio::test]
async fn a_flood_waits_for_a_slow_reader_and_responses_get_through() {
    let mut e = start();
    let producer = flood(&e.peer, 2_000); // 16 MiB in all
    // The editor does not read for a while: the producer must stop, not queue.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let frame = FRAME_TEXT + 100;
    assert!(
        e.peer.backlog() <= OUTGOING_LIMIT + frame,
        "backlog {} while nobody reads",
        e.peer.backlog()
    );
    assert!(!producer.is_finished());

    // A request arrives in the middle of the flood; its answer is queued
    // behind at most the limit's worth of updates, in order.
    e.to_agent
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let mut before_answer = 0usize;
    let mut next_seq = 0u64;
    let mut answered = false;
    let mut line = String::new();
    loop {
        line.clear();
        if e.from_agent.read_line(&mut line).await.unwrap() == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 7 {
            assert_eq!(v["result"], "pong");
            answered = true;
        } else {
            assert_eq!(v["params"]["seq"], next_seq, "updates leave in order");
            next_seq += 1;
            if !answered {
                before_answer += line.len();
            }
        }
        if next_seq == 2_000 {
            break;
        }
        // A slow editor.
        if next_seq.is_multiple_of(64) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    assert!(answered, "the response never arrived");
    // The limit, what the producer queued past it, and the pipe's own buffer.
    assert!(
        before_answer <= OUTGOING_LIMIT + 2 * frame + 64 * 1024 + 256 * 1024,
        "{before_answer} bytes were written before the response"
    );
    let max = producer.await.unwrap();
    assert!(max <= OUTGOING_LIMIT + frame, "largest backlog {max}");
}

#[tokio::test]
async fn the_reader_keeps_reading_while_the_editor_reads_nothing() {
    let mut e = start();
    let producer = flood(&e.peer, 1_000);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!producer.is_finished(), "the flood must be stalled");

    // Our request to the editor is stuck in the queue, but its answer (the
    // editor knows the id) is still read and delivered.
    let peer = e.peer.clone();
    let queued = e.peer.backlog();
    let asked = tokio::spawn(async move {
        peer.request::<_, Value>("fs/read_text_file", &json!({}))
            .await
    });
    // Queued (and so registered as pending) once the backlog grows.
    while e.peer.backlog() == queued {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    e.to_agent
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"content\":\"x\"}}\n")
        .await
        .unwrap();
    // Notifications and an id-null error too (logged and ignored).
    for _ in 0..100 {
        e.to_agent
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}}\n")
            .await
            .unwrap();
    }
    e.to_agent
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\n",
        )
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .expect("the answer was read while the output was stalled")
        .unwrap()
        .unwrap();
    assert_eq!(answer["content"], "x");
    tokio::time::timeout(Duration::from_secs(10), async {
        while e.handler.notes.load(Ordering::SeqCst) < 100 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("notifications were handled while the output was stalled");

    // Draining lets the flood finish; nothing answered the id-null error.
    let mut line = String::new();
    let mut updates = 0;
    while updates < 1_000 {
        line.clear();
        assert!(e.from_agent.read_line(&mut line).await.unwrap() > 0);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(v.get("error").is_none(), "an error was sent: {line}");
        if v["method"] == "session/update" {
            updates += 1;
        }
    }
    producer.await.unwrap();
}

#[tokio::test]
async fn a_closed_output_releases_waiting_producers() {
    let e = start();
    drop(e.from_agent);
    let producer = flood(&e.peer, 1_000);
    tokio::time::timeout(Duration::from_secs(10), producer)
        .await
        .expect("producers stop waiting once the writer has stopped")
        .unwrap();
}
