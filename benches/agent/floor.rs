//! The floor under the streaming CPU target (issue 15): what the libraries the
//! model client is built on cost per chunk on their own, reading the same
//! stream from the same fake server in this process, on a current-thread
//! runtime so that one thread's CPU clock (`/proc/thread-self/schedstat`)
//! holds all of it.
//!
//! - **reqwest**: the response body read chunk by chunk, nothing decoded: the
//!   HTTP floor.
//! - **async-openai**: `chat().create_stream_byot` into `serde_json::Value`:
//!   reqwest, eventsource-stream and serde_json, the path the issue prescribes,
//!   with no agent work (no tool-call assembly, no ACP frame, no stdout).

use super::stream::post_stream_request;
use super::*;

/// This thread's CPU time so far, in ns.
pub fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// This thread's CPU ns per chunk while `read` streams `chunks` chunks
/// from the fake model and counts them.
fn cpu_per_chunk<F: std::future::Future<Output = usize>>(
    rt: &tokio::runtime::Runtime,
    model: &FakeModel,
    chunks: usize,
    read: impl FnOnce(String) -> F,
) -> f64 {
    model.push(Script::Stream { chunks, pace: None });
    let before = thread_cpu_ns();
    let got = rt.block_on(read(model.base_url()));
    let spent = thread_cpu_ns() - before;
    assert_eq!(got, chunks, "every chunk was read");
    spent as f64 / chunks as f64
}

/// CPU ns per chunk of reqwest reading the raw body.
pub fn reqwest_cpu_per_chunk(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    model: &FakeModel,
    chunks: usize,
) -> f64 {
    use futures::StreamExt;
    cpu_per_chunk(rt, model, chunks, |base| async move {
        let resp = post_stream_request(client, &format!("{base}/chat/completions")).await;
        let mut body = resp.bytes_stream();
        let mut bytes = 0;
        while let Some(part) = body.next().await {
            bytes += part.expect("reqwest body").len();
        }
        // Nothing is decoded: the body's size stands for its chunks.
        assert!(bytes > chunks * 100, "reqwest read the whole stream");
        chunks
    })
}

/// CPU ns per chunk of async-openai streaming the chat completion, each
/// chunk decoded into a `serde_json::Value`.
pub fn async_openai_cpu_per_chunk(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    model: &FakeModel,
    chunks: usize,
) -> f64 {
    use futures::StreamExt;
    cpu_per_chunk(rt, model, chunks, |base| async move {
        let config = async_openai::config::OpenAIConfig::new()
            .with_api_base(base)
            .with_api_key("bench-key");
        let api = async_openai::Client::build(client.clone(), config);
        let mut stream = api
            .chat()
            .create_stream_byot::<Value, Value>(json!({
                "model": "fake-model",
                "stream": true,
                "messages": [{"role": "user", "content": "stream"}],
            }))
            .await
            .expect("async-openai stream");
        let mut n = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.expect("async-openai chunk");
            if chunk["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
            {
                n += 1;
            }
        }
        n
    })
}
