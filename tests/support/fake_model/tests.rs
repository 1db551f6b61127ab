//! The fake model server checked over real HTTP.
use super::*;
use futures::StreamExt;

/// POSTs `body` to the fake model's chat endpoint.
async fn post_chat(model: &FakeModel, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn client() -> reqwest::Client {
    crate::support::http_client()
}

/// Parses an SSE body into its `data:` payloads.
fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn sse_text_reply_parses_and_request_is_recorded() {
    let model = FakeModel::start().await;
    model.push(Reply::text("hello").with_usage(3, 2));
    let resp = client()
        .post(format!("{}/chat/completions", model.base_url()))
        .bearer_auth("sk-test")
        .json(&json!({"model": "fake-model", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let body = resp.text().await.unwrap();
    let data = sse_data(&body);
    assert_eq!(data.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "hello");
    assert!(
        chunks
            .iter()
            .filter(|c| c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty()))
            .count()
            >= 2,
        "text is split into several deltas"
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "stop")
    );
    assert_eq!(chunks.last().unwrap()["usage"]["total_tokens"], 5);

    let reqs = model.chat_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].header("Authorization"), Some("Bearer sk-test"));
    assert_eq!(reqs[0].body["messages"][0]["content"], "hi");
    assert_eq!(reqs[0].last_message().unwrap()["role"], "user");
    assert_eq!(model.completed_streams(), 1);
    assert_eq!(model.disconnects(), 0);
    assert_eq!(model.pending_replies(), 0);
}

#[tokio::test]
async fn tool_call_reply_reassembles() {
    let model = FakeModel::start().await;
    model.push(Reply::tool_call(
        "call_1",
        "echo",
        json!({"text": "hi there", "n": 3}),
    ));
    let body = post_chat(&model, json!({})).await.text().await.unwrap();
    let data = sse_data(&body);
    let mut args = String::new();
    let mut name = None;
    let mut finish = None;
    for d in &data[..data.len() - 1] {
        let c: Value = serde_json::from_str(d).unwrap();
        if let Some(calls) = c["choices"][0]["delta"]["tool_calls"].as_array() {
            assert_eq!(calls[0]["index"], 0);
            if let Some(n) = calls[0]["function"]["name"].as_str() {
                name = Some(n.to_owned());
                assert_eq!(calls[0]["id"], "call_1");
            }
            args.push_str(calls[0]["function"]["arguments"].as_str().unwrap());
        }
        if let Some(f) = c["choices"][0]["finish_reason"].as_str() {
            finish = Some(f.to_owned());
        }
    }
    assert_eq!(name.as_deref(), Some("echo"));
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"text": "hi there", "n": 3})
    );
    assert_eq!(finish.as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn error_status_with_headers_and_empty_queue() {
    let model = FakeModel::start().await;
    model.push(Reply::rate_limited(1));
    let url = format!("{}/chat/completions", model.base_url());
    let resp = client().post(&url).json(&json!({})).send().await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let resp = client().post(&url).json(&json!({})).send().await.unwrap();
    assert_eq!(resp.status(), 500);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "fake model: no scripted reply left"
    );
    assert_eq!(model.unscripted_requests(), 1);

    let models = crate::support::get_json(&format!("{}/models", model.base_url())).await;
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "fake-model");

    let resp = client()
        .get(format!("{}/nope", model.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(model.requests().len(), 4);
    assert_eq!(model.chat_requests().len(), 2);
}

#[tokio::test]
async fn non_stream_completion() {
    let model = FakeModel::start().await;
    model.push(Reply::completion("plain"));
    let body: Value = post_chat(&model, json!({"stream": false}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "plain");
}

#[tokio::test]
async fn hang_then_client_disconnect_is_detected() {
    let model = FakeModel::start().await;
    model.push(Reply::text("never finished").hang_after(2));
    let resp = post_chat(&model, json!({})).await;
    let mut stream = resp.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().starts_with("data: "));
    // Nothing else arrives while the server hangs.
    let next = tokio::time::timeout(Duration::from_millis(300), async {
        // Drain what was already sent (2 events), then block.
        let mut got = Vec::new();
        while let Some(item) = stream.next().await {
            got.push(item.unwrap());
        }
        got
    })
    .await;
    assert!(next.is_err(), "the stream must hang, not end");
    assert_eq!(model.disconnects(), 0);
    // The client goes away.
    drop(stream);
    assert!(
        model.wait_for_disconnects(1, Duration::from_secs(5)).await,
        "server noticed the client abort"
    );
}

#[tokio::test]
async fn delayed_stream_aborted_by_client_is_detected() {
    let model = FakeModel::start().await;
    model.push(Reply::text("a slow answer that takes a while").delay(Duration::from_millis(200)));
    let resp = post_chat(&model, json!({})).await;
    let mut stream = resp.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(stream);
    assert!(model.wait_for_disconnects(1, Duration::from_secs(5)).await);
    assert_eq!(model.completed_streams(), 0);
}

#[tokio::test]
async fn cut_stream_is_an_incomplete_body() {
    let model = FakeModel::start().await;
    model.push(Reply::text("cut short").cut_after(2));
    let resp = post_chat(&model, json!({})).await;
    let mut stream = resp.bytes_stream();
    let mut data = Vec::new();
    let mut error = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => data.extend_from_slice(&bytes),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    assert!(error.is_some(), "a cut stream must end with a body error");
    let text = String::from_utf8(data).unwrap();
    assert_eq!(sse_data(&text).len(), 2);
}

#[test]
fn split_str_is_char_safe() {
    assert_eq!(split_str("hello", 3), vec!["he", "ll", "o"]);
    assert_eq!(split_str("hé", 3), vec!["h", "é"]);
    assert_eq!(split_str("", 3), vec![""]);
}
