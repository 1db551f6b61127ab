//! How chat requests reach the endpoint: the headers on the wire, and a
//! proxy from the environment honoured.

use super::common::ready_with;
use crate::support::{FakeModel, Reply, Workspace};

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
