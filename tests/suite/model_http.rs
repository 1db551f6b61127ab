//! How chat requests reach the endpoint and replies come back: the headers
//! on the wire, a proxy from the environment, redirects, SSE line endings,
//! odd error bodies and servers that do not stream (issue 15).

use serde_json::json;

use super::common::{ready, ready_with, spawn_in_home, write_config};
use crate::support::{FakeModel, Reply, Workspace, chunk, full_capabilities};

#[tokio::test]
async fn a_chat_request_carries_its_headers_and_length() {
    let model = FakeModel::start().await;
    model.push(Reply::text("hello"));
    let r = ready_with(&model, &[], Workspace::new()).await;
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
    assert_eq!(r.editor.agent_text(&r.sid), "hello");
    let req = &model.chat_requests()[0];
    assert_eq!(req.absolute_target, None);
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("host"), Some(model.addr().to_string().as_str()));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), Some("Bearer test-key"));
    assert_eq!(req.header("accept"), Some("*/*"));
    assert!(
        req.header("user-agent")
            .is_some_and(|ua| ua.starts_with("acp-coder/")),
        "{:?}",
        req.headers
    );
    assert_eq!(
        req.header("content-length"),
        Some(req.raw_body.len().to_string().as_str())
    );
    assert_eq!(req.body["stream"], true);
}

#[tokio::test]
async fn a_proxy_in_the_environment_carries_the_stream() {
    let model = FakeModel::start().await;
    model.push(Reply::text("through the proxy"));
    let proxy = format!("http://{}", model.addr());
    // The fake model answers as the proxy: the agent must not try to
    // reach `model.invalid` itself.
    let r = ready_with(
        &model,
        &[
            ("OPENAI_BASE_URL", "http://model.invalid/v1"),
            ("HTTP_PROXY", proxy.as_str()),
        ],
        Workspace::new(),
    )
    .await;
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
    assert_eq!(r.editor.agent_text(&r.sid), "through the proxy");
    let req = &model.chat_requests()[0];
    assert_eq!(
        req.absolute_target.as_deref(),
        Some("http://model.invalid/v1/chat/completions")
    );
    assert_eq!(req.header("authorization"), Some("Bearer test-key"));
}

/// `NO_PROXY` as reqwest reads it: a proxy in the environment is used for
/// the endpoint (even on loopback) unless `NO_PROXY` names its host.
#[tokio::test]
async fn no_proxy_names_hosts_reached_directly() {
    let proxy = FakeModel::start().await;
    let endpoint = FakeModel::start().await;
    let proxy_url = format!("http://{}", proxy.addr());
    let base = format!("http://{}/v1", endpoint.addr());
    let prompt = |no_proxy: &'static str| {
        let (proxy_url, base, endpoint) = (proxy_url.clone(), base.clone(), &endpoint);
        async move {
            let env = [
                ("OPENAI_BASE_URL", base.as_str()),
                ("HTTP_PROXY", proxy_url.as_str()),
                ("NO_PROXY", no_proxy),
            ];
            let r = ready_with(endpoint, &env, Workspace::new()).await;
            assert_eq!(
                r.editor.prompt(&r.sid, "hi").await["stopReason"],
                "end_turn",
                "NO_PROXY={no_proxy:?}"
            );
        }
    };
    proxy.push(Reply::text("via the proxy"));
    prompt("").await;
    let via_proxy = proxy.chat_requests();
    assert_eq!(via_proxy.len(), 1);
    assert_eq!(
        via_proxy[0].absolute_target.as_deref(),
        Some(format!("{base}/chat/completions").as_str())
    );
    assert!(endpoint.chat_requests().is_empty());

    endpoint.push(Reply::text("direct"));
    prompt("example.com,127.0.0.1").await;
    let direct = endpoint.chat_requests();
    assert_eq!(direct.len(), 1);
    assert_eq!(direct[0].absolute_target, None);
    assert_eq!(
        proxy.chat_requests().len(),
        1,
        "the proxy saw no second request"
    );
}

#[tokio::test]
async fn a_307_redirect_on_plain_http_is_followed_with_the_body() {
    let model = FakeModel::start().await;
    model.push(
        Reply::raw_body(307, "text/plain", "moved").header("Location", "/v1/chat/completions"),
    );
    model.push(Reply::text("after the redirect"));
    let r = ready(&model).await;
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
    assert_eq!(r.editor.agent_text(&r.sid), "after the redirect");
    let reqs = model.chat_requests();
    assert_eq!(reqs.len(), 2, "the redirect was followed once");
    assert_eq!(reqs[1].method, "POST", "307 keeps the method");
    assert_eq!(reqs[1].raw_body, reqs[0].raw_body, "and the body");
    assert_eq!(reqs[1].header("authorization"), Some("Bearer test-key"));
}

/// A 307 to another origin (another loopback port) is followed without any
/// credential: neither the key nor the config's `[headers]` reach the other
/// server (reqwest stripped `Authorization` but sent `api-key` along). A
/// redirect within the origin keeps them.
#[tokio::test]
async fn a_redirect_to_another_origin_leaves_every_credential_behind() {
    let first = FakeModel::start().await;
    let other = FakeModel::start().await;
    let home = tempfile::tempdir().expect("home");
    write_config(
        home.path(),
        "[headers]\n\"api-key\" = \"sk-header-secret-0001\"\n\"X-Team\" = \"blue\"\n",
    );
    // Within the origin first, then to the other server.
    first.push(
        Reply::raw_body(307, "text/plain", "moved").header("Location", "/v1/chat/completions"),
    );
    first.push(Reply::raw_body(307, "text/plain", "moved").header(
        "Location",
        &format!("http://{}/v1/chat/completions", other.addr()),
    ));
    other.push(Reply::text("from the other origin"));
    let editor = spawn_in_home(&first, home.path().to_path_buf(), &[]);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    assert_eq!(editor.prompt(&sid, "hi").await["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(&sid), "from the other origin");

    let mine = first.chat_requests();
    assert_eq!(mine.len(), 2, "one redirect within the origin");
    for req in &mine {
        assert_eq!(req.header("authorization"), Some("Bearer test-key"));
        assert_eq!(req.header("api-key"), Some("sk-header-secret-0001"));
        assert_eq!(req.header("x-team"), Some("blue"));
    }
    let theirs = other.chat_requests();
    assert_eq!(theirs.len(), 1, "the cross-origin redirect was followed");
    let req = &theirs[0];
    assert_eq!(req.method, "POST", "307 keeps the method");
    assert_eq!(req.raw_body, mine[0].raw_body, "and the body");
    for name in ["authorization", "api-key", "x-team", "cookie"] {
        assert_eq!(req.header(name), None, "{name} went to another origin");
    }
    assert!(
        !format!("{:?}", req.headers).contains("sk-header-secret-0001"),
        "{:?}",
        req.headers
    );
}

#[tokio::test]
async fn cr_only_line_endings_are_read() {
    let model = FakeModel::start().await;
    let event = |v: serde_json::Value| format!("data: {v}\r\r");
    let body = [
        event(chunk::role()),
        event(chunk::text("carriage ")),
        ": a comment\r".to_owned(),
        event(chunk::text("returns")),
        event(chunk::finish("stop")),
        "data: [DONE]\r\r".to_owned(),
    ]
    .concat();
    model.push(Reply::raw_body(200, "text/event-stream", body));
    let r = ready(&model).await;
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
    assert_eq!(r.editor.agent_text(&r.sid), "carriage returns");
}

#[tokio::test]
async fn error_bodies_that_are_not_openai_shaped_show_with_their_status() {
    for (status, body, shown) in [
        (
            404,
            json!({"detail": "Model gpt-9 not found"}),
            "Model gpt-9 not found",
        ),
        (
            400,
            json!({"error": "context too long"}),
            "context too long",
        ),
    ] {
        let model = FakeModel::start().await;
        model.push(Reply::status(status, body));
        let r = ready(&model).await;
        let err = r.editor.prompt_error(&r.sid, "hi").await;
        assert!(err.message.contains(shown), "{err}");
        assert!(err.message.contains(&status.to_string()), "{err}");
        assert_eq!(model.chat_requests().len(), 1, "4xx is not retried");
    }
}

#[tokio::test]
async fn a_server_that_ignores_stream_options_still_works() {
    let model = FakeModel::start().await;
    // No usage chunk although the request asked for one.
    model.push(Reply::text("no usage here"));
    let r = ready(&model).await;
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
    assert_eq!(r.editor.agent_text(&r.sid), "no usage here");
    let req = &model.chat_requests()[0];
    assert_eq!(req.body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn a_plain_json_reply_to_a_streaming_request_is_read() {
    let model = FakeModel::start().await;
    model.push(Reply::completion("whole at once"));
    let r = ready(&model).await;
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
    assert_eq!(r.editor.agent_text(&r.sid), "whole at once");
    // Pretty-printed JSON (raw newlines) too.
    let pretty = serde_json::to_string_pretty(&json!({
        "choices": [{"message": {"role": "assistant", "content": "pretty"}, "finish_reason": "stop"}]
    }))
    .unwrap();
    model.push(Reply::raw_body(
        200,
        "application/json; charset=utf-8",
        pretty,
    ));
    r.editor.prompt(&r.sid, "again").await;
    assert!(r.editor.agent_text(&r.sid).ends_with("pretty"));
}
