//! The official ACP Rust SDK as the client, with its unstable features on
//! (issue 17 Tests): a form elicitation from `ask_user` answered through the
//! SDK's typed handler, the turn's usage in the typed prompt response, and
//! `session/fork` carrying the conversation into the new session.

use crate::support::{FakeModel, Reply, TIMEOUT, Workspace};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, CreateElicitationRequest, CreateElicitationResponse,
    ElicitationAcceptAction, ElicitationAction, ElicitationCapabilities,
    ElicitationFormCapabilities, ElicitationMode, ForkSessionRequest, InitializeRequest,
    NewSessionRequest, PromptRequest, SessionNotification, StopReason, TextContent,
};
use agent_client_protocol::{Agent, Client};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn official_sdk_answers_ask_user_and_forks_the_session() {
    let model = FakeModel::start().await;
    model.push(
        Reply::tool_call(
            "q1",
            "ask_user",
            json!({"question": "Favourite colour?", "options": [{"label": "blue"}, {"label": "red"}]}),
        )
        .with_usage(12, 4),
    );
    model.push(Reply::text("blue it is").with_usage(20, 3));
    model.push(Reply::text("forked reply"));
    let ws = Workspace::new();
    let home = tempfile::tempdir().expect("temp HOME");
    let (mut child, transport) = super::official_client::sdk_transport(&model, home.path());
    let asked = Arc::new(Mutex::new(Vec::<CreateElicitationRequest>::new()));
    let cwd = ws.path().to_path_buf();
    let run = Client
        .v1()
        .name("official-sdk-unstable-client")
        .on_receive_notification(
            async move |_n: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            {
                let asked = asked.clone();
                async move |request: CreateElicitationRequest, responder, _cx| {
                    asked.lock().unwrap().push(request);
                    let content = BTreeMap::from([("answer".to_owned(), "blue".into())]);
                    responder.respond(CreateElicitationResponse::new(ElicitationAction::Accept(
                        ElicitationAcceptAction::new().content(content),
                    )))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let caps = ClientCapabilities::new().elicitation(
                ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()),
            );
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps))
                .block_task()
                .await?;
            assert!(
                init.agent_capabilities.session_capabilities.fork.is_some(),
                "session/fork is advertised"
            );
            let session = cx
                .send_request(NewSessionRequest::new(cwd.clone()))
                .block_task()
                .await?;
            let first = cx
                .send_request(PromptRequest::new(
                    session.session_id.clone(),
                    vec![ContentBlock::Text(TextContent::new("pick a colour"))],
                ))
                .block_task()
                .await?;
            let fork = cx
                .send_request(ForkSessionRequest::new(session.session_id.clone(), cwd))
                .block_task()
                .await?;
            let second = cx
                .send_request(PromptRequest::new(
                    fork.session_id.clone(),
                    vec![ContentBlock::Text(TextContent::new("and now?"))],
                ))
                .block_task()
                .await?;
            Ok((first, fork.session_id != session.session_id, second))
        });
    let outcome = tokio::time::timeout(TIMEOUT, run).await;
    let _ = child.start_kill();
    let (first, distinct, second) = outcome
        .expect("the official client finished in time")
        .expect("no ACP error");
    assert_eq!(first.stop_reason, StopReason::EndTurn);
    let usage = first.usage.expect("the turn's usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (32, 7, 39)
    );
    assert!(distinct, "the fork has its own id");
    assert_eq!(second.stop_reason, StopReason::EndTurn);

    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "Favourite colour?");
    assert!(matches!(asked[0].mode, ElicitationMode::Form(_)));
    // The model saw the answer, and the fork's first request carries it too.
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    for r in &requests[1..] {
        assert!(
            r.messages()
                .iter()
                .any(|m| m["role"] == "tool" && m["content"] == "The user answered: blue"),
            "{:?}",
            r.messages()
        );
    }
}
